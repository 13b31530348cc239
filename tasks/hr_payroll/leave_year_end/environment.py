from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

YEAR = 2026


class LeaveEnv(WorkspaceEnvironment):
    @tool
    def list_employees(self, page: int = 1, status: str = "") -> dict:
        """List staff with hire date, FTE, employment status and the leave balance they opened the year with, 20 per page.

        Args:
            status: Only staff with this status ("active" or "left") when non-empty.
        """
        if status and status not in ("active", "left"):
            raise ToolError(f"status must be 'active', 'left' or empty, got {status!r}")
        where = " WHERE status = ?" if status else ""
        return self.query_page(f"SELECT * FROM employees{where} ORDER BY id", (status,) if status else (), page)

    @tool
    def list_leave_records(self, employee_id: int, page: int = 1) -> dict:
        """List one employee's leave records (start date, days, kind: annual, sick or unpaid), 20 per page.

        Args:
            employee_id: The employee's numeric id.
        """
        self.require_row("employees", employee_id, "use list_employees")
        return self.query_page("SELECT start_date, days, kind FROM leave_records WHERE employee_id = ? ORDER BY start_date",
                               (employee_id,), page)

    @tool
    def post_year_end_balance(self, employee_id: int, accrued: float, taken: float, carried_forward: float,
                              forfeited: float) -> dict:
        """Post (or replace) an employee's 2026 year-end leave balance; returns the entry id.

        Args:
            employee_id: The employee's numeric id.
            accrued: Days accrued in the year, long-service days included.
            taken: Days of annual leave taken in the year.
            carried_forward: Days carried into the next year.
            forfeited: Days lost to the carry-over limit.
        """
        self.require_row("employees", employee_id, "use list_employees")
        if min(accrued, taken, forfeited) < 0:
            raise ToolError("accrued, taken and forfeited cannot be negative")
        self.db.execute("DELETE FROM year_end_balances WHERE employee_id = ? AND year = ?", (employee_id, YEAR))
        cur = self.db.execute("INSERT INTO year_end_balances (employee_id, year, accrued, taken, carried_forward, forfeited) "
                              "VALUES (?,?,?,?,?,?)", (employee_id, YEAR, accrued, taken, carried_forward, forfeited))
        return {"entry_id": cur.lastrowid, "employee_id": employee_id, "year": YEAR}

    def criteria(self, final_response: str) -> list[Criterion]:
        balances = "year_end_balances b JOIN employees e ON e.id = b.employee_id"
        veteran_hired_by = self.facts["long_service_hired_by"]  # long service by 31 Dec

        def matches(columns, where, criterion, weight=1.0):
            return self.tables_match(balances, key="b.employee_id", columns=columns, where=f"b.year = {YEAR}{where}",
                                     tolerance=0.01, criterion=criterion, weight=weight)

        total = self.reference.query("SELECT SUM(forfeited) AS t FROM year_end_balances")[0]["t"]
        return [
            matches((), "", "balances_for_exactly_active_staff", weight=2.0),
            matches("b.accrued", f" AND e.hire_date >= '{YEAR}-01-01'", "new_hires_accrue_from_first_full_month"),
            matches("b.accrued", f" AND e.hire_date <= '{veteran_hired_by}'", "long_service_days_added"),
            matches("b.accrued", "", "accrual_correct"),
            matches("b.taken", "", "annual_leave_taken_correct"),
            matches(["b.carried_forward", "b.forfeited"], "", "carry_over_and_forfeit_correct"),
            self.answer_states(total, criterion="total_forfeited_reported"),
        ]
