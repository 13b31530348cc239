"""Tools and verifier for course_admin/room_allocation."""
import csv
import io
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class RoomAllocationEnv(WorkspaceEnvironment):
    def _published(self) -> bool:
        return bool(self.query("SELECT published FROM timetable_status")[0]["published"])

    def _editable_section(self, section_code: str) -> dict:
        if self._published():
            raise ToolError("the timetable is already published and can no longer change")
        rows = self.query("SELECT * FROM sections WHERE code = ?", (section_code.strip(),))
        if not rows:
            raise ToolError(f"no section {section_code!r}; list_sections shows the codes")
        return rows[0]

    @tool
    def list_sections(self, page: int = 1, slot: str = "") -> dict:
        """List timetabled sections (code, title, slot, enrolment, needed room features, lecturer, room, state), 20 per page.

        Args:
            page: 1-based page number.
            slot: Only sections in this time slot (e.g. "Mon 09:00") when non-empty.
        """
        sql = "SELECT code, title, slot, enrolment, needs, lecturer, room, state FROM sections"
        if slot:
            return self.query_page(sql + " WHERE slot = ? ORDER BY id", (slot,), page)
        return self.query_page(sql + " ORDER BY id", page=page)

    @tool
    def list_rooms(self, page: int = 1) -> dict:
        """List teaching rooms (code, building, floor, capacity, features), 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT * FROM rooms ORDER BY code", page=page)

    @tool
    def assign_room(self, section_code: str, room_code: str) -> dict:
        """Book a room for a section in the section's slot; refuses a room already booked in that slot.

        Args:
            section_code: The section's code.
            room_code: The room's code.
        """
        section = self._editable_section(section_code)
        room = self.query("SELECT * FROM rooms WHERE code = ?", (room_code.strip(),))
        if not room:
            raise ToolError(f"no room {room_code!r}")
        clash = self.query("SELECT code FROM sections WHERE slot = ? AND room = ? AND code != ?",
                           (section["slot"], room_code.strip(), section["code"]))
        if clash:
            raise ToolError(f"{room_code} is already booked in {section['slot']} by {clash[0]['code']}")
        self.db.execute("UPDATE sections SET room = ?, state = 'placed' WHERE id = ?", (room_code.strip(), section["id"]))
        return {"section": section["code"], "slot": section["slot"], "room": room_code.strip(), "state": "placed"}

    @tool
    def mark_unplaced(self, section_code: str) -> dict:
        """Mark a section as unplaced (no suitable room), releasing any room it held.

        Args:
            section_code: The section's code.
        """
        section = self._editable_section(section_code)
        self.db.execute("UPDATE sections SET room = NULL, state = 'unplaced' WHERE id = ?", (section["id"],))
        return {"section": section["code"], "state": "unplaced"}

    @tool
    def publish_timetable(self) -> dict:
        """Publish the timetable once every section is placed or marked unplaced."""
        pending = self.query("SELECT COUNT(*) AS n FROM sections WHERE state = 'pending'")[0]["n"]
        if pending:
            raise ToolError(f"{pending} sections are still pending; place them or mark them unplaced first")
        self.db.execute("UPDATE timetable_status SET published = 1")
        counts = {r["state"]: r["n"] for r in self.query("SELECT state, COUNT(*) AS n FROM sections GROUP BY state")}
        return {"published": True, "placed": counts.get("placed", 0), "unplaced": counts.get("unplaced", 0)}

    # --- verifier --------------------------------------------------------------------------------
    def allocation(self, facts: dict) -> dict[str, str | None]:
        """section code -> room code by the procedure, or None when it cannot be placed."""
        rooms = [r for r in self.query("SELECT * FROM rooms")
                 if r["code"] != facts["closed"] and r["building"] != self.params["closed_building"]]
        for r in rooms:
            if r["code"] == facts["capacity_cut"][0]:
                r["capacity"] = facts["capacity_cut"][1]
        taken: set[tuple] = set()
        out = {}
        for s in sorted(self.query("SELECT * FROM sections"), key=lambda s: (-s["enrolment"], s["code"])):
            fits = [r for r in rooms if r["capacity"] >= s["enrolment"] + self.params["spare_seats"] and (s["slot"], r["code"]) not in taken
                    and all(f in r["features"].split(",") for f in s["needs"].split(",") if f)
                    and (s["lecturer"] != facts["ground_floor_lecturer"] or r["floor"] == 0)]
            best = min(fits, key=lambda r: (r["capacity"], r["code"]), default=None)
            out[s["code"]] = best["code"] if best else None
            if best:
                taken.add((s["slot"], best["code"]))
        return out

    def criteria(self, final_response: str) -> list[Criterion]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        want = self.allocation(facts)
        sections = {s["code"]: s for s in self.query("SELECT * FROM sections")}
        got = {c: (s["room"] if s["state"] == "placed" else None) for c, s in sections.items()}
        decided = all(s["state"] != "pending" for s in sections.values())
        floors = {r["code"]: r["floor"] for r in self.query("SELECT code, floor FROM rooms")}
        access_ok = all(got[c] is None or floors.get(got[c]) == 0
                        for c, s in sections.items() if s["lecturer"] == facts["ground_floor_lecturer"])
        shut = {r["code"] for r in self.query("SELECT code FROM rooms WHERE building = ?", (self.params["closed_building"],))}
        closed_ok = facts["closed"] not in got.values() and not shut & set(got.values())
        cut_room, cut_cap = facts["capacity_cut"]
        cut_ok = all(sections[c]["enrolment"] <= cut_cap for c, r in got.items() if r == cut_room)

        report_ok, detail = False, f"{self.params['timetable_name']} not found"
        path = self.workspace / self.params["timetable_name"]
        if path.is_file():
            try:
                rows = list(csv.DictReader(io.StringIO(path.read_text().strip())))
                seen = {r["section"].strip(): (r["slot"].strip(), r["room"].strip().upper()) for r in rows}
                expect = {c: (sections[c]["slot"], (want[c] or "UNPLACED").upper()) for c in want}
                report_ok = len(rows) == len(expect) and seen == expect
                detail = "matches the expected allocation" if report_ok else f"{len(rows)} rows; differs from the expected allocation"
            except (KeyError, AttributeError) as exc:
                detail = f"cannot parse the file: {exc}"
        unplaced = sum(1 for r in want.values() if r is None)
        numbers = [int(x) for x in re.findall(r"\b\d+\b", final_response)]
        wrong = sum(1 for c in want if got[c] != want[c])
        return [
            Criterion("every_section_decided_and_published", decided and self._published(), 1.0, "placed or unplaced, then published"),
            Criterion("estates_notices_respected", closed_ok and cut_ok, 1.0, f"closed room and the {self.params['closed_building']} building unused, reduced capacity respected"),
            Criterion("ground_floor_request_respected", access_ok, 1.0, f"{facts['ground_floor_lecturer']} teaches on floor 0 only"),
            Criterion("allocation_follows_procedure", wrong == 0, 2.0, f"{wrong} sections differ from the best-fit procedure with {self.params['spare_seats']} spare seats"),
            Criterion("timetable_file_written", report_ok, 1.0, detail),
            Criterion("unplaced_count_reported", unplaced in numbers, 1.0, f"expected {unplaced} unplaced"),
        ]
