"""Tools and verifier for course_admin/grade_finalisation."""
import datetime as dt
import json
import math
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

LETTERS = ("A", "B", "C", "D", "F")


class GradesEnv(WorkspaceEnvironment):
    def _course_id(self, course_code: str) -> int:
        rows = self.query("SELECT id FROM courses WHERE code = ?", (course_code.strip(),))
        if not rows:
            raise ToolError(f"no course {course_code!r}; list_courses shows the codes")
        return rows[0]["id"]

    @tool
    def list_courses(self, page: int = 1) -> dict:
        """List this term's courses (code, title, lecturer), 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT code, title, lecturer FROM courses ORDER BY code", page=page)

    @tool
    def get_assessment_scheme(self, course_code: str) -> list:
        """Get a course's assessed components with their weights (percent) and deadlines.

        Args:
            course_code: The course code, e.g. "ECO214".
        """
        return self.query("SELECT name, weight, due_at FROM assessments WHERE course_id = ? ORDER BY due_at",
                          (self._course_id(course_code),))

    @tool
    def list_roster(self, course_code: str, page: int = 1) -> dict:
        """List the students registered on a course, 20 per page.

        Args:
            course_code: The course code.
            page: 1-based page number.
        """
        return self.query_page("SELECT s.id AS student_id, s.student_no, s.name FROM roster r JOIN students s ON s.id = r.student_id "
                               "WHERE r.course_id = ? ORDER BY s.id", (self._course_id(course_code),), page)

    @tool
    def list_submissions(self, course_code: str, page: int = 1) -> dict:
        """List the marked submissions for a course (student id, component, time handed in, raw mark out of 100), 50 per page.

        Args:
            course_code: The course code.
            page: 1-based page number.
        """
        return self.query_page("SELECT x.student_id, a.name AS component, x.submitted_at, x.raw_score FROM submissions x "
                               "JOIN assessments a ON a.id = x.assessment_id WHERE a.course_id = ? ORDER BY x.id",
                               (self._course_id(course_code),), page, page_size=50)

    @tool
    def record_final_grade(self, course_code: str, student_id: int, final_mark: float, letter: str) -> dict:
        """Record (or overwrite) a student's final mark and letter grade on a course.

        Args:
            course_code: The course code.
            student_id: The student's numeric id.
            final_mark: Final mark out of 100, one decimal place.
            letter: Letter grade: A, B, C, D or F.
        """
        cid = self._course_id(course_code)
        if not self.query("SELECT 1 FROM roster WHERE course_id = ? AND student_id = ?", (cid, student_id)):
            raise ToolError(f"student {student_id} is not on the roster of {course_code}")
        if letter not in LETTERS:
            raise ToolError(f"letter must be one of {', '.join(LETTERS)}, got {letter!r}")
        if not 0 <= final_mark <= 100:
            raise ToolError("final_mark must be between 0 and 100")
        self.db.execute("INSERT OR REPLACE INTO final_grades (course_id, student_id, final_mark, letter) VALUES (?,?,?,?)",
                        (cid, student_id, round(final_mark, 1), letter))
        return {"course_code": course_code, "student_id": student_id, "final_mark": round(final_mark, 1), "letter": letter}

    # --- verifier --------------------------------------------------------------------------------
    def expected(self) -> dict[tuple, tuple]:
        """(course id, student id) -> (final mark, letter)."""
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        ext_student, ext_aid, ext_deadline = facts["extension"]
        out = {}
        for entry in self.query("SELECT course_id, student_id FROM roster"):
            parts = self.query("SELECT id, name, weight, due_at FROM assessments WHERE course_id = ?", (entry["course_id"],))
            total = weight_sum = 0.0
            for a in parts:
                if [entry["student_id"], a["id"]] == facts["excused"]:
                    continue
                weight_sum += a["weight"]
                sub = self.query("SELECT submitted_at, raw_score FROM submissions WHERE assessment_id = ? AND student_id = ?",
                                 (a["id"], entry["student_id"]))
                if not sub:
                    continue
                deadline = ext_deadline if (entry["student_id"], a["id"]) == (ext_student, ext_aid) else a["due_at"]
                hours = (dt.datetime.fromisoformat(sub[0]["submitted_at"]) - dt.datetime.fromisoformat(deadline)).total_seconds() / 3600
                mark = sub[0]["raw_score"]
                if a["name"] == "Final exam":
                    mark = min(100.0, mark + self.params["exam_uplift"])
                if hours > facts["cutoff_days"] * 24:
                    mark = 0.0
                elif hours > 0:
                    mark = max(0.0, mark - min(self.params["max_late_penalty"], facts["penalty"] * math.ceil(hours / 24)))
                total += a["weight"] * mark
            final = math.floor(total / weight_sum * 10 + 0.5 + 1e-9) / 10
            letter = next((l for l, b in zip(LETTERS, facts["bounds"]) if final >= b), "F")
            out[(entry["course_id"], entry["student_id"])] = (final, letter)
        return out

    def criteria(self, final_response: str) -> list[Criterion]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        want = self.expected()
        got = {(r["course_id"], r["student_id"]): (r["final_mark"], r["letter"]) for r in self.query("SELECT * FROM final_grades")}

        def right(key) -> bool:
            return key in got and abs(got[key][0] - want[key][0]) < 0.051 and got[key][1] == want[key][1]

        specials = [(1, facts["late_student"]), (1, facts["extension"][0]), (1, facts["excused"][0])]
        codes = {r["id"]: r["code"] for r in self.query("SELECT id, code FROM courses")}
        dist = {}
        for (cid, _), (_, letter) in want.items():
            dist.setdefault(codes[cid], {}).setdefault(letter, 0)
            dist[codes[cid]][letter] += 1
        name = self.params["report_name"]
        report_ok, detail = False, f"{name} not found"
        path = self.workspace / name
        if path.is_file():
            try:
                data = json.loads(path.read_text())
                norm = {str(c).strip(): {str(l).strip().upper(): int(n) for l, n in v.items() if int(n)} for c, v in data.items()}
                report_ok = norm == dist
                detail = "matches the expected distribution" if report_ok else "differs from the expected letter counts"
            except (ValueError, AttributeError, TypeError) as exc:
                detail = f"cannot parse the file: {exc}"
        fails = sum(1 for _, letter in want.values() if letter == "F")
        numbers = [int(x) for x in re.findall(r"\b\d+\b", final_response)]
        wrong = sum(1 for k in want if not right(k))
        return [
            Criterion("grade_for_every_rostered_student", set(got) == set(want), 1.0, f"{len(got)} recorded, {len(want)} expected"),
            Criterion("late_penalty_by_started_day", right(specials[0]), 1.0, "a piece 25 hours late has started two days"),
            Criterion("extension_applied", right(specials[1]), 1.0, "the extended deadline replaces the original"),
            Criterion("excused_component_reweighted", right(specials[2]), 1.0, "weights rescaled without the excused piece"),
            Criterion("all_marks_and_letters_correct", wrong == 0, 2.0, f"{wrong} grades differ (final exams uplifted)"),
            Criterion("distribution_file_written", report_ok, 1.0, detail),
            Criterion("fail_count_reported", fails in numbers, 1.0, f"expected {fails} fails"),
        ]
