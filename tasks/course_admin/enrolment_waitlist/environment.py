import json

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool
from progagent_lib.task.criteria import MAX_FILE_CHARS, compare_json, parse_json

DECISIONS = ("enrol", "waitlist", "decline")


class RegistrationEnv(WorkspaceEnvironment):
    @tool
    def list_courses(self, page: int = 1) -> dict:
        """List this term's courses with their recorded seat capacity, 20 per page."""
        return self.query_page("SELECT code, title, department, capacity FROM courses ORDER BY code", page=page)

    @tool
    def get_course(self, course_code: str) -> dict:
        """Get one course with its prerequisite course codes and how many seats are taken so far.

        Args:
            course_code: The course code, e.g. "CS 214".
        """
        rows = self.query("SELECT * FROM courses WHERE code = ?", (course_code.strip(),))
        if not rows:
            raise ToolError(f"no course with code {course_code!r}; list_courses shows the codes")
        course = rows[0]
        course["prerequisites"] = [r["prereq_code"] for r in self.query(
            "SELECT prereq_code FROM prerequisites WHERE course_id = ? ORDER BY prereq_code", (course["id"],))]
        course["enrolled"] = self.query("SELECT COUNT(*) AS n FROM requests WHERE course_id = ? AND status = 'enrolled'",
                                        (course["id"],))[0]["n"]
        del course["id"]
        return course

    @tool
    def list_requests(self, page: int = 1, course_code: str = "") -> dict:
        """List registration requests in the order they were filed (by request id), 20 per page.

        Args:
            course_code: Only requests for this course when non-empty.
        """
        sql = ("SELECT r.id AS request_id, r.student_id, c.code AS course_code, r.submitted_at, r.status, "
               "r.waitlist_position FROM requests r JOIN courses c ON c.id = r.course_id")
        if course_code:
            return self.query_page(sql + " WHERE c.code = ? ORDER BY r.id", (course_code.strip(),), page)
        return self.query_page(sql + " ORDER BY r.id", page=page)

    @tool
    def get_student(self, student_id: int) -> dict:
        """Get a student's record and full transcript of past course attempts.

        Args:
            student_id: The student's numeric id (as in the requests).
        """
        student = self.require_row("students", student_id)
        student["transcript"] = self.query("SELECT course_code, term, grade FROM transcript WHERE student_id = ?", (student_id,))
        return student

    @tool
    def decide_request(self, request_id: int, decision: str) -> dict:
        """Record the decision on a pending request. A waitlisted request gets the next position on its course's list.

        Args:
            request_id: The request's id.
            decision: One of "enrol", "waitlist" or "decline".
        """
        if decision not in DECISIONS:
            raise ToolError(f"decision must be one of {', '.join(DECISIONS)}, got {decision!r}")
        request = self.require_row("requests", request_id, "use list_requests")
        if request["status"] != "pending":
            raise ToolError(f"request {request_id} is already {request['status']}; decisions are final")
        position = None
        if decision == "enrol":
            status = "enrolled"
            cap, taken = self.query(
                "SELECT capacity, (SELECT COUNT(*) FROM requests WHERE course_id = c.id AND status = 'enrolled') AS taken "
                "FROM courses c WHERE id = ?", (request["course_id"],))[0].values()
            if taken >= cap:
                raise ToolError(f"the course is full ({cap} seats); waitlist the request instead")
        elif decision == "waitlist":
            status = "waitlisted"
            position = self.query("SELECT COALESCE(MAX(waitlist_position), 0) + 1 AS p FROM requests WHERE course_id = ?",
                                  (request["course_id"],))[0]["p"]
        else:
            status = "declined"
        self.db.execute("UPDATE requests SET status = ?, waitlist_position = ? WHERE id = ?", (status, position, request_id))
        return {"request_id": request_id, "status": status, "waitlist_position": position}

    def summary_written(self) -> Criterion:
        """The summary holds the reference's lists: each course's enrolled students in any order, its waitlist in
        order (file_matches compares JSON lists in order)."""
        name = self.params["summary_name"]
        try:
            summary = parse_json(self.fs.read_text(name, MAX_FILE_CHARS))
            got = {code: dict(lists, enrolled=sorted(map(str, lists["enrolled"]))) for code, lists in summary.items()}
        except Exception as exc:  # noqa: BLE001 - missing, unreadable or not shaped as asked: said in the detail
            return Criterion("summary_file_written", False, 1.0, f"{name}: {str(exc)[:200] or type(exc).__name__}")
        want = {code: dict(lists, enrolled=sorted(lists["enrolled"]))
                for code, lists in json.loads(self.reference.read(name)).items()}
        problem = compare_json(got, want, [], tolerance=0)
        return Criterion("summary_file_written", problem is None, 1.0, problem or f"{name} matches the expected result")

    def criteria(self, final_response: str) -> list[Criterion]:
        seats = "requests r JOIN students s ON s.id = r.student_id JOIN courses c ON c.id = r.course_id"
        special = json.dumps(self.facts["special_courses"])  # as JSON text, for json_each below
        declined = self.reference.query("SELECT count(*) AS n FROM requests WHERE status = 'declined'")[0]["n"]
        return [
            self.tables_match("requests", key="id", where="status = 'pending'", criterion="every_request_decided"),
            self.tables_match("requests", key="id", where="status = 'declined'", criterion="declines_correct"),
            self.tables_match(seats, key=["c.code", "s.student_no"], where="r.status = 'enrolled'", weight=2.0,
                              criterion="enrolments_correct"),
            self.tables_match(seats, key=["c.code", "r.waitlist_position"], columns="s.student_no",
                              where="r.status = 'waitlisted'", criterion="waitlists_in_order"),
            # The course with a same-minute tie on its last seat, and the one moved to a smaller room.
            self.tables_match(seats, key=["c.code", "s.student_no"], columns=["r.status", "r.waitlist_position"],
                              where=f"r.status != 'declined' AND c.code IN (SELECT value FROM json_each('{special}'))",
                              criterion="tie_and_room_change_handled"),
            self.summary_written(),
            self.answer_states(declined, criterion="declined_count_reported"),
        ]
