from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool
from progagent_lib.task.criteria import MAX_FILE_CHARS, compare_json, normalise, parse_json

MEALS = ("standard", "vegetarian", "vegan", "gluten_free")


class GuestSeatingEnv(WorkspaceEnvironment):
    @tool
    def list_guests(self, page: int = 1) -> dict:
        """List invited guests with RSVP, meal choice and whose plus-one they are, 20 per page."""
        return self.query_page("SELECT g.id, g.name, g.email, g.organisation, g.rsvp, g.meal, g.plus_one_of, t.table_number "
                               "FROM guests g LEFT JOIN seating s ON s.guest_id = g.id LEFT JOIN dining_tables t ON t.id = s.table_id "
                               "ORDER BY g.id", page=page)

    @tool
    def list_tables(self, page: int = 1) -> dict:
        """List dining tables with seat count, zone and how many seats are taken, 20 per page."""
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

    # Many seatings keep the organiser's notes, so the seating is checked against the notes, not the reference's.
    def broken_notes(self) -> list[str]:
        """The seating notes (other than the board table) this episode's seating breaks."""
        facts = self.facts
        (rival, other), (wheelchair, second) = facts["feud"], facts["step_free"]
        table_of = "(SELECT table_id FROM seating WHERE guest_id = {})"
        at = "FROM seating s JOIN dining_tables t ON t.id = s.table_id WHERE"
        counts = {
            "plus-ones": "SELECT count(*) FROM guests g WHERE g.plus_one_of IS NOT NULL AND g.rsvp = 'attending' AND "
                         f"{table_of.format('g.id')} IS NOT {table_of.format('g.plus_one_of')}",
            "feud": f"SELECT {table_of.format(int(rival))} = {table_of.format(int(other))}",
            "step-free": f"SELECT count(*) < 2 {at} t.zone = 'floor' AND s.guest_id IN ({int(wheelchair)}, "
                         f"{int(second)})",
            "sponsor table": f"SELECT count(*) {at} t.table_number = {int(self.params['sponsor_table'])}",
        }
        return [rule for rule, sql in counts.items() if self.db.execute(sql).fetchone()[0]]

    def catering_written(self) -> Criterion:
        """The caterer's file counts the reference's meals (after the late changes) at the tables as seated here."""
        meals = {r["id"]: r["meal"] for r in self.reference.query("SELECT id, meal FROM guests")}
        want: dict[str, dict[str, int]] = {}
        for r in self.query("SELECT s.guest_id, t.table_number FROM seating s JOIN dining_tables t "
                            "ON t.id = s.table_id"):
            at_table = want.setdefault(str(r["table_number"]), {})
            at_table[meals[r["guest_id"]]] = at_table.get(meals[r["guest_id"]], 0) + 1
        name = self.params["catering_name"]
        try:
            got = {table: {meal: n for meal, n in counts.items() if normalise(n) != 0}
                   for table, counts in parse_json(self.fs.read_text(name, MAX_FILE_CHARS)).items()}
        except Exception as exc:  # noqa: BLE001 - missing, unreadable or not shaped as asked: said in the detail
            return Criterion("catering_file_written", False, 1.0, f"{name}: {str(exc)[:200] or type(exc).__name__}")
        problem = compare_json({table: counts for table, counts in got.items() if counts}, want, [], tolerance=0)
        return Criterion("catering_file_written", problem is None, 1.0, problem or f"{name} matches the seating")

    def criteria(self, final_response: str) -> list[Criterion]:
        seated = "seating s JOIN dining_tables t ON t.id = s.table_id"
        board = self.tables_match(seated, key="s.guest_id", where="t.table_number = 1")
        broken = self.broken_notes() + ([] if board.passed else ["board table"])
        anyone = self.query("SELECT count(*) AS n FROM seating")[0]["n"]
        special = self.reference.query("SELECT count(*) AS n FROM guests WHERE rsvp = 'attending' AND "
                                       "meal != 'standard'")[0]["n"]
        return [
            self.tables_match("guests", key="id", columns="meal", where="rsvp = 'attending'",
                              criterion="guest_list_updated"),
            self.tables_match("seating", key="guest_id", weight=2.0, criterion="exactly_the_attending_guests_seated"),
            Criterion("seating_notes_respected", anyone > 0 and not broken, 1.0, f"broken: {broken or 'none'}"),
            self.catering_written(),
            self.answer_states(special, criterion="special_meal_count_reported"),
        ]
