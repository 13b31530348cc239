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
            slot: Only sections in this time slot (e.g. "Mon 09:00") when non-empty.
        """
        sql = "SELECT code, title, slot, enrolment, needs, lecturer, room, state FROM sections"
        if slot:
            return self.query_page(sql + " WHERE slot = ? ORDER BY id", (slot,), page)
        return self.query_page(sql + " ORDER BY id", page=page)

    @tool
    def list_rooms(self, page: int = 1) -> dict:
        """List teaching rooms (code, building, floor, capacity, features), 20 per page."""
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

    def criteria(self, final_response: str) -> list[Criterion]:
        facts = self.facts
        placed = "sections s JOIN rooms r ON r.code = s.room WHERE s.state = 'placed'"
        (cut_room, cut_capacity), lecturer = facts["capacity_cut"], facts["ground_floor_lecturer"]
        breaches = self.query(f"SELECT count(*) AS n FROM {placed} AND (r.code = ? OR r.building = ? OR (r.code = ? "
                              "AND s.enrolment > ?))", (facts["closed"], self.params["closed_building"], cut_room,
                                                        cut_capacity))[0]["n"]
        upstairs = self.query(f"SELECT count(*) AS n FROM {placed} AND s.lecturer = ? AND r.floor != 0", (lecturer,))
        unplaced = self.reference.query("SELECT count(*) AS n FROM sections WHERE state = 'unplaced'")[0]["n"]
        return [
            # Publishing needs every section placed or unplaced, and freezes them.
            self.tables_match("timetable_status", key="published", criterion="every_section_decided_and_published"),
            Criterion("estates_notices_respected", breaches == 0, 1.0, f"{breaches} sections in the closed room, the "
                      f"{self.params['closed_building']} building, or over {cut_room}'s reduced capacity"),
            Criterion("ground_floor_request_respected", upstairs[0]["n"] == 0, 1.0,
                      f"{upstairs[0]['n']} of {lecturer}'s sections above floor 0"),
            self.tables_match("sections", key="code", columns=["state", "room"], weight=2.0,
                              criterion="allocation_follows_procedure"),
            self.file_matches(self.params["timetable_name"], as_="csv", key="section",
                              criterion="timetable_file_written"),
            self.answer_states(unplaced, criterion="unplaced_count_reported"),
        ]
