"""Tools and verifier for event_planning/session_schedule."""
import csv
import io
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class SessionScheduleEnv(WorkspaceEnvironment):
    @tool
    def list_sessions(self, page: int = 1) -> dict:
        """List programme sessions with track, format, expected attendance and speaker ids, 20 per page.

        Args:
            page: 1-based page number.
        """
        result = self.query_page("SELECT id, code, title, track, format, expected_attendance, abstract "
                                 "FROM sessions ORDER BY id", page=page)
        for s in result["items"]:
            s["speaker_ids"] = [r["speaker_id"] for r in self.query(
                "SELECT speaker_id FROM session_speakers WHERE session_id = ? ORDER BY speaker_id", (s["id"],))]
        return result

    @tool
    def list_speakers(self, page: int = 1) -> dict:
        """List speakers, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, name, affiliation, bio FROM speakers ORDER BY id", page=page)

    @tool
    def list_rooms(self, page: int = 1) -> dict:
        """List rooms with seating capacity and whether they are lab-equipped, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, name, capacity, lab_equipped FROM rooms ORDER BY id", page=page)

    @tool
    def list_slots(self) -> list:
        """List the conference's time slots (day 1 or 2, start and end time)."""
        return self.query("SELECT id, day, start, end_time FROM slots ORDER BY id")

    @tool
    def schedule_session(self, session_id: int, room_id: int, slot_id: int) -> dict:
        """Put a session in a room at a time slot (moving it if it was already scheduled).

        Args:
            session_id: The session's numeric id.
            room_id: The room's numeric id.
            slot_id: The slot's numeric id.
        """
        self.require_row("sessions", session_id, "use list_sessions")
        self.require_row("rooms", room_id, "use list_rooms")
        self.require_row("slots", slot_id, "use list_slots")
        taken = self.query("SELECT session_id FROM timetable WHERE room_id = ? AND slot_id = ? AND session_id != ?",
                           (room_id, slot_id, session_id))
        if taken:
            raise ToolError(f"room {room_id} already holds session {taken[0]['session_id']} in slot {slot_id}")
        self.db.execute("INSERT OR REPLACE INTO timetable VALUES (?, ?, ?)", (session_id, room_id, slot_id))
        return {"session_id": session_id, "room_id": room_id, "slot_id": slot_id}

    @tool
    def unschedule_session(self, session_id: int) -> dict:
        """Take a session off the timetable.

        Args:
            session_id: The session's numeric id.
        """
        if not self.query("SELECT session_id FROM timetable WHERE session_id = ?", (session_id,)):
            raise ToolError(f"session {session_id} is not scheduled")
        self.db.execute("DELETE FROM timetable WHERE session_id = ?", (session_id,))
        return {"session_id": session_id, "scheduled": False}

    # --- verifier --------------------------------------------------------------------------------
    def criteria(self, final_response: str) -> list[Criterion]:
        f = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        sessions = {s["id"]: s for s in self.query("SELECT * FROM sessions")}
        rooms = {r["id"]: r for r in self.query("SELECT * FROM rooms")}
        slots = {s["id"]: s for s in self.query("SELECT * FROM slots")}
        speakers_of = {}
        for link in self.query("SELECT session_id, speaker_id FROM session_speakers"):
            speakers_of.setdefault(link["session_id"], set()).add(link["speaker_id"])
        plan = {t["session_id"]: (t["room_id"], t["slot_id"]) for t in self.query("SELECT * FROM timetable")}
        programme = set(sessions) - set(f["withdrawn"])
        complete = set(plan) == programme

        by_slot = {}
        for sid, (room, slot) in plan.items():
            by_slot.setdefault(slot, []).append(sid)
        clash = []
        for slot, sids in by_slot.items():
            people = [sp for s in sids for sp in speakers_of.get(s, ())]
            tracks = [sessions[s]["track"] for s in sids]
            if len(people) != len(set(people)):
                clash.append(f"speaker clash in slot {slot}")
            if len(tracks) != len(set(tracks)):
                clash.append(f"track clash in slot {slot}")
        fits = all(rooms[r]["capacity"] >= sessions[s]["expected_attendance"] and (sessions[s]["format"] != "workshop" or rooms[r]["lab_equipped"])
                   for s, (r, _) in plan.items())
        closed_free = not any(rooms[r]["name"] == self.params["closed_room"] for r, _ in plan.values())

        def allowed(speaker: int, slot: dict) -> bool:
            if speaker == f["only_day2"]:
                return slot["day"] == 2
            if speaker == f["morning_day1"]:
                return slot["day"] == 1 and slot["end_time"] <= "13:00"
            if speaker == f["late_riser"]:
                return slot["start"] != "09:00"
            return True

        available = all(allowed(sp, slots[slot]) for s, (_, slot) in plan.items() for sp in speakers_of.get(s, ()))
        sponsor_day, sponsor_start = re.fullmatch(r"day (\d) at (\d\d:\d\d)", self.params["sponsor_slot"]).groups()
        sponsor_free = not any(slots[slot]["day"] == int(sponsor_day) and slots[slot]["start"] == sponsor_start
                               for _, slot in plan.values())
        keynote = plan.get(1)
        opening = min(slots, key=lambda k: (slots[k]["day"], slots[k]["start"]))
        keynote_ok = keynote is not None and keynote == (1, opening) and by_slot.get(opening) == [1]

        names = {r["id"]: r["name"] for r in rooms.values()}
        report_ok, detail = False, f"{self.params['timetable_name']} not found"
        path = self.workspace / self.params["timetable_name"]
        if path.is_file():
            try:
                rows = list(csv.DictReader(io.StringIO(path.read_text().strip())))
                got = sorted((r["session_code"].strip(), int(str(r["day"]).strip().lower().replace("day", "").strip()),
                              r["start"].strip().zfill(5), r["room"].strip()) for r in rows)
                want = sorted((sessions[s]["code"], slots[slot]["day"], slots[slot]["start"], names[room]) for s, (room, slot) in plan.items())
                report_ok = complete and got == want
                detail = "matches the timetable" if report_ok else f"{len(rows)} rows; differs from the timetable"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                detail = f"cannot parse the report: {exc}"
        counts = {int(n) for n in re.findall(r"(?<![\d.\-])\d+(?![\d.])", final_response)}
        return [
            Criterion("every_programme_session_scheduled_once", complete, 2.0,
                      f"{len(plan)} scheduled, {len(programme)} on the programme (withdrawals excluded)"),
            Criterion("no_speaker_or_track_clash", bool(plan) and not clash, 1.0, "; ".join(clash[:3]) or "none"),
            Criterion("rooms_fit_sessions", bool(plan) and fits and closed_free, 1.0,
                      f"capacity, labs for workshops, nothing in {self.params['closed_room']} (closed)"),
            Criterion("availability_and_keynote_respected", available and keynote_ok and sponsor_free, 1.0,
                      f"speakers' e-mailed availability; keynote alone in the Main Hall first thing on day 1; "
                      f"nothing on {self.params['sponsor_slot']}"),
            Criterion("timetable_file_written", report_ok, 1.0, detail),
            Criterion("programme_size_reported", len(programme) in counts, 1.0, f"expected {len(programme)}"),
        ]
