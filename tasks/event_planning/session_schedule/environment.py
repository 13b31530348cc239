import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool
from progagent_lib.task.criteria import MAX_FILE_CHARS, compare_rows, parse_rows


class SessionScheduleEnv(WorkspaceEnvironment):
    @tool
    def list_sessions(self, page: int = 1) -> dict:
        """List programme sessions with track, format, expected attendance and speaker ids, 20 per page."""
        result = self.query_page("SELECT id, code, title, track, format, expected_attendance, abstract "
                                 "FROM sessions ORDER BY id", page=page)
        for s in result["items"]:
            s["speaker_ids"] = [r["speaker_id"] for r in self.query(
                "SELECT speaker_id FROM session_speakers WHERE session_id = ? ORDER BY speaker_id", (s["id"],))]
        return result

    @tool
    def list_speakers(self, page: int = 1) -> dict:
        """List speakers, 20 per page."""
        return self.query_page("SELECT id, name, affiliation, bio FROM speakers ORDER BY id", page=page)

    @tool
    def list_rooms(self, page: int = 1) -> dict:
        """List rooms with seating capacity and whether they are lab-equipped, 20 per page."""
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

    # Many timetables keep the rules, so the timetable is checked against the rules, not against the reference's.
    def broken(self, rule: str) -> int:
        """How many scheduled sessions (or pairs of them) break one of the rules below."""
        day, start = re.fullmatch(r"day (\d) at (\d\d:\d\d)", self.params["sponsor_slot"]).groups()
        track = "(SELECT track FROM sessions WHERE id = {}.session_id)"
        sql = {
            "clash": f"FROM timetable a JOIN timetable b ON a.slot_id = b.slot_id AND a.session_id < b.session_id "
                     f"WHERE {track.format('a')} = {track.format('b')} OR EXISTS (SELECT 1 FROM session_speakers x "
                     "JOIN session_speakers y ON y.speaker_id = x.speaker_id WHERE x.session_id = a.session_id "
                     "AND y.session_id = b.session_id)",
            "room": "FROM timetable t JOIN rooms r ON r.id = t.room_id JOIN sessions s ON s.id = t.session_id WHERE "
                    "r.capacity < s.expected_attendance OR (s.format = 'workshop' AND NOT r.lab_equipped) OR "
                    "r.name = :closed",
            "availability": "FROM timetable t JOIN slots s ON s.id = t.slot_id JOIN session_speakers p ON "
                            "p.session_id = t.session_id WHERE (p.speaker_id = :only_day2 AND s.day != 2) OR "
                            "(p.speaker_id = :morning_day1 AND (s.day != 1 OR s.end_time > '13:00')) OR "
                            "(p.speaker_id = :late_riser AND s.start = '09:00') OR (s.day = :day AND s.start = :start)",
        }[rule]
        values = dict(self.facts, closed=self.params["closed_room"], day=int(day), start=start)
        return self.db.execute(f"SELECT count(*) {sql}", values).fetchone()[0]

    def timetable_written(self, complete: bool) -> Criterion:
        """The file lists this episode's timetable, once every programme session is in it."""
        name = self.params["timetable_name"]
        want = self.query("SELECT s.code AS session_code, sl.day, sl.start, r.name AS room FROM timetable t JOIN "
                          "sessions s ON s.id = t.session_id JOIN slots sl ON sl.id = t.slot_id JOIN rooms r ON "
                          "r.id = t.room_id")
        try:
            got = parse_rows(self.fs.read_text(name, MAX_FILE_CHARS), "csv")
        except Exception as exc:  # noqa: BLE001 - missing, unreadable or not a table: said in the detail
            return Criterion("timetable_file_written", False, 1.0, f"{name}: {str(exc)[:200] or type(exc).__name__}")
        for row in got:  # "Day 1" and "9:00" name the slot of day 1 at 09:00 too
            row["day"] = str(row.get("day")).casefold().removeprefix("day").strip()
            row["start"] = str(row.get("start")).zfill(5)
        problem = compare_rows(got, want, [], ["session_code", "day", "start", "room"], tolerance=0)
        detail = problem or ("matches the timetable" if complete else "the programme is not complete")
        return Criterion("timetable_file_written", complete and problem is None, 1.0, detail)

    def criteria(self, final_response: str) -> list[Criterion]:
        scheduled = self.query("SELECT count(*) AS n FROM timetable")[0]["n"]
        programme = self.reference.query("SELECT count(*) AS n FROM timetable")[0]["n"]
        complete = self.tables_match("timetable", key="session_id", weight=2.0,
                                     criterion="every_programme_session_scheduled_once")
        # The keynote (session 1) alone in the Main Hall (room 1) in the opening slot (slot 1), as in the reference.
        keynote = self.tables_match("timetable", key="session_id", columns=["room_id", "slot_id"],
                                    where="session_id = 1 OR slot_id = 1")
        clashes, misfits, unavailable = (self.broken(rule) for rule in ("clash", "room", "availability"))
        return [
            complete,
            Criterion("no_speaker_or_track_clash", scheduled > 0 and not clashes, 1.0, f"{clashes} clashing pairs"),
            Criterion("rooms_fit_sessions", scheduled > 0 and not misfits, 1.0,
                      f"{misfits} sessions in a room too small, without a lab for a workshop, or in "
                      f"{self.params['closed_room']} (closed)"),
            Criterion("availability_and_keynote_respected", keynote.passed and not unavailable, 1.0,
                      f"{unavailable} sessions against a speaker's e-mailed availability or on "
                      f"{self.params['sponsor_slot']}; keynote: {keynote.detail}"),
            self.timetable_written(complete.passed),
            self.answer_states(programme, criterion="programme_size_reported"),
        ]
