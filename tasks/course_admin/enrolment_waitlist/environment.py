"""Tools and verifier for course_admin/enrolment_waitlist."""
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

GRADES = ["A", "A-", "B+", "B", "B-", "C+", "C", "C-", "D", "F"]
DECISIONS = ("enrol", "waitlist", "decline")


class RegistrationEnv(WorkspaceEnvironment):
    @tool
    def list_courses(self, page: int = 1) -> dict:
        """List this term's courses with their recorded seat capacity, 20 per page.

        Args:
            page: 1-based page number.
        """
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
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def expected(self) -> tuple[dict, dict]:
        """(per course {enrolled: set, waitlist: list} by student number, request id -> expected status)."""
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        limit = GRADES.index(facts["min_grade"])
        best: dict[tuple, int] = {}
        for t in self.query("SELECT student_id, course_code, grade FROM transcript"):
            key = (t["student_id"], t["course_code"])
            best[key] = min(best.get(key, 99), GRADES.index(t["grade"]))
        needs: dict[int, list] = {}
        for p in self.query("SELECT course_id, prereq_code FROM prerequisites"):
            needs.setdefault(p["course_id"], []).append(p["prereq_code"])
        requests = self.query(
            "SELECT r.id, r.student_id, r.course_id, r.submitted_at, s.student_no, c.code, c.capacity "
            "FROM requests r JOIN students s ON s.id = r.student_id JOIN courses c ON c.id = r.course_id")
        plan = {}
        status = {}
        for r in sorted(requests, key=lambda r: (r["submitted_at"], r["student_no"])):
            course = plan.setdefault(r["code"], {"enrolled": set(), "waitlist": []})
            seats = (facts["room_limit"][1] if r["code"] == facts["room_limit"][0] else r["capacity"]) - self.params["reserved_seats"]
            waived = [r["student_no"], r["code"]] == facts["waiver"]
            ok = waived or all(best.get((r["student_id"], p), 99) <= limit for p in needs.get(r["course_id"], []))
            if r["student_no"] in facts["holds"] or not ok:
                status[r["id"]] = "declined"
            elif len(course["enrolled"]) < seats:
                course["enrolled"].add(r["student_no"])
                status[r["id"]] = "enrolled"
            elif len(course["waitlist"]) < self.params["waitlist_cap"]:
                course["waitlist"].append(r["student_no"])
                status[r["id"]] = "waitlisted"
            else:
                status[r["id"]] = "declined"
        return plan, status

    def criteria(self, final_response: str) -> list[Criterion]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        plan, status = self.expected()
        rows = self.query("SELECT r.id, r.status, r.waitlist_position, s.student_no, c.code FROM requests r "
                          "JOIN students s ON s.id = r.student_id JOIN courses c ON c.id = r.course_id")
        actual = {r["id"]: r["status"] for r in rows}
        got = {}
        for r in sorted(rows, key=lambda r: (r["waitlist_position"] or 0)):
            course = got.setdefault(r["code"], {"enrolled": set(), "waitlist": []})
            if r["status"] == "enrolled":
                course["enrolled"].add(r["student_no"])
            elif r["status"] == "waitlisted":
                course["waitlist"].append(r["student_no"])
        decided = all(s != "pending" for s in actual.values())
        declines_ok = {i for i, s in actual.items() if s == "declined"} == {i for i, s in status.items() if s == "declined"}
        enrol_ok = all(got.get(c, {}).get("enrolled") == p["enrolled"] for c, p in plan.items())
        waitlist_ok = all(got.get(c, {}).get("waitlist") == p["waitlist"] for c, p in plan.items())
        tie, room = facts["tie_course"], facts["room_limit"][0]
        special_ok = all(got.get(c) == plan[c] for c in (tie, room))

        summary_name = self.params["summary_name"]
        report_ok, report_detail = False, f"{summary_name} not found"
        path = self.workspace / summary_name
        if path.is_file():
            try:
                data = json.loads(path.read_text())
                norm = {str(k).strip(): ({str(s).strip() for s in v.get("enrolled", [])}, [str(s).strip() for s in v.get("waitlist", [])])
                        for k, v in data.items()}
                want = {c: (p["enrolled"], p["waitlist"]) for c, p in plan.items()}
                extra = {c for c, v in norm.items() if c not in want and v != (set(), [])}
                report_ok = not extra and all(norm.get(c, (set(), [])) == w for c, w in want.items())
                report_detail = "matches the expected decisions" if report_ok else "differs from the expected enrolments or waitlists"
            except (ValueError, AttributeError, TypeError) as exc:
                report_detail = f"cannot parse the summary: {exc}"
        declined = sum(1 for s in status.values() if s == "declined")
        numbers = [int(x) for x in re.findall(r"\b\d+\b", final_response)]
        return [
            Criterion("every_request_decided", decided, 1.0, "no request left pending"),
            Criterion("declines_correct", declines_ok, 1.0, "prerequisite failures (after waivers), held students and full waitlists declined"),
            Criterion("enrolments_correct", enrol_ok, 2.0, "enrolled students per course, seats held back respected"),
            Criterion("waitlists_in_order", waitlist_ok, 1.0, "waitlists in submission order, ties by student number"),
            Criterion("tie_and_room_change_handled", special_ok, 1.0, f"{tie} (same-minute tie) and {room} (smaller room)"),
            Criterion("summary_file_written", report_ok, 1.0, report_detail),
            Criterion("declined_count_reported", declined in numbers, 1.0, f"expected {declined} declined"),
        ]
