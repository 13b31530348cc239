import datetime as dt

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


def _parse_day(text: str, what: str) -> str:
    try:
        return dt.date.fromisoformat(text).isoformat()
    except (TypeError, ValueError):
        raise ToolError(f"{what} must be an ISO date like 2026-09-07, got {text!r}") from None


class PayrollEnv(WorkspaceEnvironment):
    @tool
    def list_employees(self, page: int = 1, department: str = "") -> dict:
        """List staff records (employment type, union local, ordinary hourly rate), 20 per page.

        Args:
            department: Only staff of this department when non-empty.
        """
        where, params = (" WHERE department = ?", (department,)) if department else ("", ())
        return self.query_page("SELECT * FROM employees" + where + " ORDER BY id", params, page)

    @tool
    def list_timesheet_entries(self, employee_id: int, page: int = 1) -> dict:
        """List one employee's recorded working days (date and hours), oldest first, 20 per page.

        Args:
            employee_id: The employee's numeric id (not the E-number).
        """
        self.require_row("employees", employee_id, "list_employees gives the ids")
        return self.query_page("SELECT work_date, hours FROM timesheets WHERE employee_id = ? ORDER BY work_date", (employee_id,), page)

    @tool
    def create_pay_run(self, period_start: str, period_end: str) -> dict:
        """Open a new draft pay run for a period; returns the run with its id.

        Args:
            period_start: First day of the pay period, ISO date (YYYY-MM-DD).
            period_end: Last day of the pay period, ISO date (YYYY-MM-DD), inclusive.
        """
        start, end = _parse_day(period_start, "period_start"), _parse_day(period_end, "period_end")
        if end < start:
            raise ToolError("period_end is before period_start; swap them")
        cur = self.db.execute("INSERT INTO pay_runs (period_start, period_end, status) VALUES (?, ?, 'draft')", (start, end))
        return {"run_id": cur.lastrowid, "period_start": start, "period_end": end, "status": "draft"}

    def _draft_run(self, run_id: int) -> dict:
        pay_run = self.require_row("pay_runs", run_id, "create_pay_run returns the id")
        if pay_run["status"] != "draft":
            raise ToolError(f"pay run {run_id} is already {pay_run['status']} and cannot change")
        return pay_run

    @tool
    def add_pay_line(self, run_id: int, employee_id: int, regular_hours: float, overtime_hours: float,
                     holiday_hours: float, gross_pay: float) -> dict:
        """Add one employee's pay line to a draft run; returns the line with its id.

        Args:
            run_id: The draft pay run's id.
            employee_id: The employee's numeric id.
            regular_hours: Hours paid at the ordinary rate.
            overtime_hours: Hours paid at time and a half.
            holiday_hours: Hours worked on a public holiday.
            gross_pay: Total gross pay of the line in currency units.
        """
        self._draft_run(run_id)
        self.require_row("employees", employee_id, "use list_employees")
        if min(regular_hours, overtime_hours, holiday_hours, gross_pay) < 0:
            raise ToolError("hours and gross pay cannot be negative")
        if self.query("SELECT id FROM pay_lines WHERE run_id = ? AND employee_id = ?", (run_id, employee_id)):
            raise ToolError(f"employee {employee_id} already has a line in run {run_id}; remove it first to replace it")
        cur = self.db.execute(
            "INSERT INTO pay_lines (run_id, employee_id, regular_hours, overtime_hours, holiday_hours, gross_pay) "
            "VALUES (?,?,?,?,?,?)", (run_id, employee_id, regular_hours, overtime_hours, holiday_hours, round(gross_pay, 2)))
        return {"line_id": cur.lastrowid, "run_id": run_id, "employee_id": employee_id, "gross_pay": round(gross_pay, 2)}

    @tool
    def remove_pay_line(self, line_id: int) -> dict:
        """Delete a pay line from a draft run.

        Args:
            line_id: The id returned by add_pay_line.
        """
        pay_line = self.require_row("pay_lines", line_id)
        self._draft_run(pay_line["run_id"])
        self.db.execute("DELETE FROM pay_lines WHERE id = ?", (line_id,))
        return {"line_id": line_id, "removed": True}

    @tool
    def submit_pay_run(self, run_id: int) -> dict:
        """Submit a draft pay run for payment; it can no longer change afterwards.

        Args:
            run_id: The draft pay run's id.
        """
        self._draft_run(run_id)
        lines = self.query("SELECT gross_pay FROM pay_lines WHERE run_id = ?", (run_id,))
        if not lines:
            raise ToolError(f"pay run {run_id} has no lines; add them before submitting")
        self.db.execute("UPDATE pay_runs SET status = 'submitted' WHERE id = ?", (run_id,))
        return {"run_id": run_id, "status": "submitted", "lines": len(lines),
                "total_gross": round(sum(l["gross_pay"] for l in lines), 2)}

    def criteria(self, final_response: str) -> list[Criterion]:
        facts = self.facts
        lines = ("pay_lines l JOIN pay_runs r ON r.id = l.run_id AND r.status = 'submitted' "
                 "JOIN employees e ON e.id = l.employee_id")
        hours = ["l.regular_hours", "l.overtime_hours", "l.holiday_hours"]
        daily_union = f"e.union_local = '{facts['daily_union']}'"
        corrected = "e.emp_no IN (" + ", ".join(f"'{emp_no}'" for emp_no in facts["corrected"]) + ")"

        def matches(columns, where, criterion, weight=1.0, tolerance=0.005):
            return self.tables_match(lines, key="l.employee_id", columns=columns, where=where, tolerance=tolerance,
                                     criterion=criterion, weight=weight)

        total = self.reference.query("SELECT SUM(gross_pay) AS t FROM pay_lines")[0]["t"]
        return [
            self.tables_match("pay_runs", key=["period_start", "period_end"], where="status = 'submitted'",
                              criterion="one_submitted_run_for_the_period"),
            matches((), "", "lines_for_exactly_eligible_staff", weight=2.0),
            matches(hours, daily_union, "union_daily_overtime_applied"),
            matches(hours, f"NOT {daily_union}", "weekly_overtime_and_holiday_hours"),
            matches("l.gross_pay", corrected, "rate_corrections_applied", tolerance=0.015),
            matches("l.gross_pay", "", "gross_pay_correct", weight=2.0, tolerance=0.015),
            self.answer_states(round(total, 2), tolerance=0.015, criterion="total_gross_reported"),
        ]
