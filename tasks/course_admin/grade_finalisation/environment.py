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
        """List this term's courses (code, title, lecturer), 20 per page."""
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
        """
        return self.query_page("SELECT s.id AS student_id, s.student_no, s.name FROM roster r JOIN students s ON s.id = r.student_id "
                               "WHERE r.course_id = ? ORDER BY s.id", (self._course_id(course_code),), page)

    @tool
    def list_submissions(self, course_code: str, page: int = 1) -> dict:
        """List the marked submissions for a course (student id, component, time handed in, raw mark out of 100), 50 per page.

        Args:
            course_code: The course code.
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

    def criteria(self, final_response: str) -> list[Criterion]:
        # The generator plants the 25-hours-late piece, the extension and the excusal on the first three students
        # of course 1's roster, in that order.
        late, extended, excused = (r["student_id"] for r in self.query(
            "SELECT student_id FROM roster WHERE course_id = 1 ORDER BY student_id LIMIT 3"))
        key, graded = ["course_id", "student_id"], ["final_mark", "letter"]
        fails = self.reference.query("SELECT count(*) AS n FROM final_grades WHERE letter = 'F'")[0]["n"]
        return [
            self.tables_match("final_grades", key=key, criterion="grade_for_every_rostered_student"),
            *(self.tables_match("final_grades", key=key, columns=graded, where=f"course_id = 1 AND student_id = {who}",
                                tolerance=0.051, criterion=name)
              for name, who in (("late_penalty_by_started_day", late), ("extension_applied", extended),
                                ("excused_component_reweighted", excused))),
            self.tables_match("final_grades", key=key, columns=graded, tolerance=0.051, weight=2.0,
                              criterion="all_marks_and_letters_correct"),
            self.file_matches(self.params["report_name"], as_="json", criterion="distribution_file_written"),
            self.answer_states(fails, criterion="fail_count_reported"),
        ]
