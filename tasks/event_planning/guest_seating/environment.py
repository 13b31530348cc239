"""Tools and verifier for event_planning/guest_seating."""
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

MEALS = ("standard", "vegetarian", "vegan", "gluten_free")


class GuestSeatingEnv(WorkspaceEnvironment):
    @tool
    def list_guests(self, page: int = 1) -> dict:
        """List invited guests with RSVP, meal choice and whose plus-one they are, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT g.id, g.name, g.email, g.organisation, g.rsvp, g.meal, g.plus_one_of, t.table_number "
                               "FROM guests g LEFT JOIN seating s ON s.guest_id = g.id LEFT JOIN dining_tables t ON t.id = s.table_id "
                               "ORDER BY g.id", page=page)

    @tool
    def list_tables(self, page: int = 1) -> dict:
        """List dining tables with seat count, zone and how many seats are taken, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT t.table_number, t.seats, t.zone, count(s.guest_id) AS taken FROM dining_tables t "
                               "LEFT JOIN seating s ON s.table_id = t.id GROUP BY t.id ORDER BY t.table_number", page=page)

    @tool
    def update_guest(self, guest_id: int, rsvp: str = "", meal: str = "") -> dict:
        """Change a guest's RSVP and/or meal choice. Declining also frees the guest's seat.

        Args:
            guest_id: The guest's numeric id.
            rsvp: "attending" or "declined"; empty to leave unchanged.
            meal: One of "standard", "vegetarian", "vegan", "gluten_free"; empty to leave unchanged.
        """
        self.require_row("guests", guest_id, "use list_guests")
        if rsvp and rsvp not in ("attending", "declined"):
            raise ToolError("rsvp must be 'attending' or 'declined'")
        if meal and meal not in MEALS:
            raise ToolError(f"meal must be one of {', '.join(MEALS)}")
        if rsvp:
            self.db.execute("UPDATE guests SET rsvp = ? WHERE id = ?", (rsvp, guest_id))
            if rsvp == "declined":
                self.db.execute("DELETE FROM seating WHERE guest_id = ?", (guest_id,))
        if meal:
            self.db.execute("UPDATE guests SET meal = ? WHERE id = ?", (meal, guest_id))
        return self.query("SELECT id, name, rsvp, meal FROM guests WHERE id = ?", (guest_id,))[0]

    @tool
    def seat_table(self, table_number: int, guest_ids: list[int]) -> dict:
        """Set who sits at one table, replacing its current occupants; guests seated elsewhere are moved here.

        Args:
            table_number: The table's number.
            guest_ids: Ids of every guest who should sit at this table (an empty list clears it).
        """
        table = self.query("SELECT id, seats FROM dining_tables WHERE table_number = ?", (table_number,))
        if not table:
            raise ToolError(f"no table number {table_number}")
        if len(guest_ids) > table[0]["seats"]:
            raise ToolError(f"table {table_number} has {table[0]['seats']} seats; {len(guest_ids)} guests do not fit")
        if len(set(guest_ids)) != len(guest_ids):
            raise ToolError("a guest is listed twice")
        for gid in guest_ids:
            guest = self.require_row("guests", gid, "nothing was changed")
            if guest["rsvp"] != "attending":
                raise ToolError(f"guest {gid} is not attending; only attending guests get seats. Nothing was changed")
        self.db.execute("DELETE FROM seating WHERE table_id = ?", (table[0]["id"],))
        self.db.executemany("INSERT OR REPLACE INTO seating VALUES (?, ?)", [(g, table[0]["id"]) for g in guest_ids])
        return {"table_number": table_number, "guests": list(guest_ids), "seats_left": table[0]["seats"] - len(guest_ids)}

    # --- verifier --------------------------------------------------------------------------------
    def criteria(self, final_response: str) -> list[Criterion]:
        f = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        start = {g["id"]: g for g in self.query("SELECT id, rsvp, meal, plus_one_of FROM _guests_at_start")}
        now = {g["id"]: g for g in self.query("SELECT id, rsvp, meal FROM guests")}
        coming = {g for g, row in start.items() if row["rsvp"] == "attending"} - {f["cancelled"]}
        expected_meal = {g: f["meal_changes"].get(str(g), start[g]["meal"]) for g in coming}
        list_ok = now[f["cancelled"]]["rsvp"] == "declined" and all(
            now[g]["meal"] == expected_meal[g] and now[g]["rsvp"] == "attending" for g in coming)

        seat = {r["guest_id"]: r for r in self.query(
            "SELECT s.guest_id, t.table_number, t.zone FROM seating s JOIN dining_tables t ON t.id = s.table_id")}
        everyone_seated = set(seat) == coming
        capacity_ok = all(r["n"] <= r["seats"] for r in self.query(
            "SELECT t.seats, count(s.guest_id) AS n FROM dining_tables t LEFT JOIN seating s ON s.table_id = t.id GROUP BY t.id"))
        table = {g: r["table_number"] for g, r in seat.items()}
        rules = {
            "board table": {g for g, t in table.items() if t == 1} == set(f["board"]),
            "plus-ones": all(table.get(g) == table.get(row["plus_one_of"]) for g, row in start.items()
                             if row["plus_one_of"] and g in coming),
            "feud": table.get(f["feud"][0]) is None or table.get(f["feud"][0]) != table.get(f["feud"][1]),
            "step-free": all(g in seat and seat[g]["zone"] == "floor" for g in f["step_free"]),
            "sponsor table": all(t != self.params["sponsor_table"] for t in table.values()),
        }
        broken = [name for name, ok in rules.items() if not ok]
        want = {}
        for g in coming:
            if g in table:
                want.setdefault(str(table[g]), {}).setdefault(expected_meal[g], 0)
                want[str(table[g])][expected_meal[g]] += 1
        name = self.params["catering_name"]
        report_ok, detail = False, f"{name} not found"
        path = self.workspace / name
        if path.is_file():
            try:
                data = json.loads(path.read_text())
                got = {str(k).strip(): {m: int(n) for m, n in v.items() if int(n)} for k, v in data.items()}
                got = {k: v for k, v in got.items() if v}
                report_ok = got == want
                detail = "matches the seating and meals" if report_ok else "differs from the seating and meals"
            except (ValueError, TypeError, AttributeError) as exc:
                detail = f"cannot parse the file: {exc}"
        special = sum(1 for g in coming if expected_meal[g] != "standard")
        counts = {int(n) for n in re.findall(r"(?<![\d.])\d+(?![\d.])", final_response)}
        return [
            Criterion("guest_list_updated", list_ok, 1.0, "cancellation recorded and late meal changes applied"),
            Criterion("exactly_the_attending_guests_seated", everyone_seated and capacity_ok, 2.0,
                      f"{len(seat)} seated, {len(coming)} attending; tables within capacity: {capacity_ok}"),
            Criterion("seating_notes_respected", bool(seat) and not broken, 1.0, f"broken: {broken or 'none'}"),
            Criterion("catering_file_written", report_ok, 1.0, detail),
            Criterion("special_meal_count_reported", special in counts, 1.0, f"expected {special}"),
        ]
