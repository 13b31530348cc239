"""Tools and verifier for clinic_scheduling/room_allocation."""
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, paginate, tool


class RoomAllocationEnv(WorkspaceEnvironment):
    @tool
    def list_rooms(self, site: str, page: int = 1) -> dict:
        """List the bookable rooms at a site with capacity, equipment on the room list and step-free access; 20 per page.

        Args:
            site: "Northgate" or "Riverside".
            page: 1-based page number.
        """
        rows = self.query("SELECT id, name, site, capacity, equipment, step_free FROM rooms WHERE site = ? ORDER BY id", (site.strip(),))
        if not rows:
            raise ToolError(f"no rooms at site {site!r}; sites are Northgate and Riverside")
        return paginate(rows, page)

    @tool
    def list_sessions(self, page: int = 1, status: str = "unallocated") -> dict:
        """List clinic sessions (type, clinician, site, day, times, expected attendees), 20 per page.

        Args:
            page: 1-based page number.
            status: "unallocated", "allocated" or "flagged".
        """
        return self.query_page("SELECT id, clinic_type, clinician, site, day, start, end, expected_attendees, status FROM sessions "
                               "WHERE status = ? ORDER BY id", (status,), page)

    @tool
    def list_bookings(self, day: str, page: int = 1) -> dict:
        """List the room bookings on one day (room, times, purpose), 20 per page.

        Args:
            day: The day, YYYY-MM-DD.
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def criteria(self, final_response: str) -> list[Criterion]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        last = facts["week"][["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"].index(self.params["last_day"])]
        plan = {k: v for k, v in facts["plan"].items() if facts["session_days"][k] <= last}  # the days dealt with
        counts = {}
        for name in filter(None, plan.values()):
            counts[name] = counts.get(name, 0) + 1
        top = sorted(n for n, c in counts.items() if c == max(counts.values()))
        got = {str(r["session_id"]): r for r in self.query(
            "SELECT b.session_id, b.confirmed, b.day, r.id AS room_id, r.name FROM bookings b JOIN rooms r ON r.id = b.room_id WHERE b.session_id IS NOT NULL")}
        flagged = {str(r["session_id"]) for r in self.query("SELECT session_id FROM flags")}
        want_alloc = {k: v for k, v in plan.items() if v}
        want_flag = {k for k, v in plan.items() if v is None}
        rooms_ok = {k: r["name"] for k, r in got.items()} == want_alloc
        flags_ok = flagged == want_flag
        confirmed_ok = bool(got) and all(r["confirmed"] for r in got.values())
        notices_ok = bool(got) and not any(
            (r["room_id"] == facts["outage_room"] and r["day"] in facts["outage_days"]) for r in got.values())
        report_name = self.params["report_name"]
        report_ok, detail = False, f"{report_name} not found"
        path = self.workspace / report_name
        if path.is_file():
            try:
                data = json.loads(path.read_text())
                rep = {str(d["session_id"]): (d["room"], d["status"]) for d in data}
                want = {k: (v, "allocated" if v else "flagged") for k, v in plan.items()}
                report_ok = rep == want and len(data) == len(want)
                detail = "matches the expected plan" if report_ok else f"{len(data)} entries; differ from the {len(want)} expected"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                detail = f"cannot parse the plan: {exc}"
        said = [int(x) for x in re.findall(r"(?<![\d.-])\d+(?![\d.])", final_response)]
        return [
            Criterion("rooms_allocated_by_guide", rooms_ok, 2.0, f"{len(got)} allocated, {len(want_alloc)} expected up to {last}"),
            Criterion("unplaceable_sessions_flagged", flags_ok, 1.0, f"{len(flagged)} flagged, {len(want_flag)} expected"),
            Criterion("closed_room_not_used", notices_ok, 1.0, "the estates outage"),
            Criterion("bookings_confirmed", confirmed_ok, 1.0, "every clinic booking confirmed"),
            Criterion("plan_written", report_ok, 1.0, detail),
            Criterion("flag_count_and_busiest_room_reported", len(want_flag) in said and any(t in final_response for t in top), 1.0,
                      f"expected {len(want_flag)} flagged and one of {top}"),
        ]
