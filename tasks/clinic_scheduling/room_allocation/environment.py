import json

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, paginate, tool


class RoomAllocationEnv(WorkspaceEnvironment):
    @tool
    def list_rooms(self, site: str, page: int = 1) -> dict:
        """List the bookable rooms at a site with capacity, equipment on the room list and step-free access; 20 per page.

        Args:
            site: "Northgate" or "Riverside".
        """
        rows = self.query("SELECT id, name, site, capacity, equipment, step_free FROM rooms WHERE site = ? ORDER BY id", (site.strip(),))
        if not rows:
            raise ToolError(f"no rooms at site {site!r}; sites are Northgate and Riverside")
        return paginate(rows, page)

    @tool
    def list_sessions(self, page: int = 1, status: str = "unallocated") -> dict:
        """List clinic sessions (type, clinician, site, day, times, expected attendees), 20 per page.

        Args:
            status: "unallocated", "allocated" or "flagged".
        """
        return self.query_page("SELECT id, clinic_type, clinician, site, day, start, end, expected_attendees, status FROM sessions "
                               "WHERE status = ? ORDER BY id", (status,), page)

    @tool
    def list_bookings(self, day: str, page: int = 1) -> dict:
        """List the room bookings on one day (room, times, purpose), 20 per page.

        Args:
            day: The day, YYYY-MM-DD.
        """
        return self.query_page("SELECT id, room_id, session_id, day, start, end, purpose FROM bookings WHERE day = ? ORDER BY room_id, start",
                               (day.strip(),), page)

    @tool
    def book_room(self, session_id: int, room_id: int) -> dict:
        """Book a room for an unallocated session for the session's day and times; returns the booking id.

        Args:
            session_id: The session's id.
            room_id: The room's id.
        """
        s = self.query("SELECT * FROM sessions WHERE id = ? AND status = 'unallocated'", (session_id,))
        if not s:
            raise ToolError(f"session {session_id} does not exist or is not unallocated")
        self.require_row("rooms", room_id, "use list_rooms")
        s = s[0]
        clash = self.query("SELECT id FROM bookings WHERE room_id = ? AND day = ? AND start < ? AND ? < end", (room_id, s["day"], s["end"], s["start"]))
        if clash:
            raise ToolError(f"room {room_id} is already booked during that session (booking {clash[0]['id']})")
        cur = self.db.execute("INSERT INTO bookings (room_id, session_id, day, start, end, purpose) VALUES (?,?,?,?,?, 'clinic')",
                              (room_id, session_id, s["day"], s["start"], s["end"]))
        self.db.execute("UPDATE sessions SET status = 'allocated' WHERE id = ?", (session_id,))
        return {"booking_id": cur.lastrowid, "session_id": session_id, "room_id": room_id}

    @tool
    def confirm_booking(self, booking_id: int) -> dict:
        """Confirm a clinic booking and notify the clinician.

        Args:
            booking_id: The id returned by book_room.
        """
        if not self.query("SELECT id FROM bookings WHERE id = ? AND session_id IS NOT NULL", (booking_id,)):
            raise ToolError(f"no clinic booking with id {booking_id}")
        self.db.execute("UPDATE bookings SET confirmed = 1 WHERE id = ?", (booking_id,))
        return {"booking_id": booking_id, "confirmed": True}

    @tool
    def flag_session(self, session_id: int, note: str) -> dict:
        """Flag an unallocated session for manual handling.

        Args:
            session_id: The session's id.
            note: Why no room could be found.
        """
        if not self.query("SELECT id FROM sessions WHERE id = ? AND status = 'unallocated'", (session_id,)):
            raise ToolError(f"session {session_id} does not exist or is not unallocated")
        self.db.execute("INSERT INTO flags (session_id, note) VALUES (?,?)", (session_id, note))
        self.db.execute("UPDATE sessions SET status = 'flagged' WHERE id = ?", (session_id,))
        return {"session_id": session_id, "status": "flagged"}

    def criteria(self, final_response: str) -> list[Criterion]:
        clinic = "bookings b JOIN rooms r ON r.id = b.room_id"
        outage = self.facts["outage"]
        booked = self.query(f"SELECT count(*) AS n, coalesce(sum(NOT b.confirmed), 0) AS unconfirmed, coalesce(sum("
                            f"b.room_id = ? AND b.day IN (SELECT value FROM json_each(?))), 0) AS closed FROM {clinic} "
                            "WHERE b.session_id IS NOT NULL", (outage["room"], json.dumps(outage["days"])))[0]
        uses = self.reference.query(f"SELECT r.name, count(*) AS n FROM {clinic} WHERE b.session_id IS NOT NULL "
                                    "GROUP BY r.name")
        busiest = sorted(u["name"] for u in uses if u["n"] == max(v["n"] for v in uses))
        flags = self.answer_states(len(self.reference.query("SELECT id FROM flags")))
        return [
            self.tables_match(clinic, key="b.session_id", columns="r.name", where="b.session_id IS NOT NULL",
                              weight=2.0, criterion="rooms_allocated_by_guide"),
            self.tables_match("flags", key="session_id", criterion="unplaceable_sessions_flagged"),
            Criterion("closed_room_not_used", booked["n"] > 0 and booked["closed"] == 0, 1.0,
                      f"{booked['closed']} sessions in the room closed by the estates outage"),
            Criterion("bookings_confirmed", booked["n"] > 0 and booked["unconfirmed"] == 0, 1.0,
                      f"{booked['unconfirmed']} of {booked['n']} clinic bookings unconfirmed"),
            self.file_matches(self.params["report_name"], as_="json", key="session_id", criterion="plan_written"),
            # Rooms tied for the most sessions are each a right answer.
            Criterion("flag_count_and_busiest_room_reported",
                      flags.passed and any(name in final_response for name in busiest), 1.0,
                      f"{flags.detail}; and one of {busiest}"),
        ]
