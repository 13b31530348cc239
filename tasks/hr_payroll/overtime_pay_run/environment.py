"""Tools and verifier for hr_payroll/overtime_pay_run."""
import datetime as dt
import json
import re

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
            page: 1-based page number.
            department: Only staff of this department when non-empty.
        """
        where, params = (" WHERE department = ?", (department,)) if department else ("", ())
        return self.query_page("SELECT * FROM employees" + where + " ORDER BY id", params, page)

    @tool
    def list_timesheet_entries(self, employee_id: int, page: int = 1) -> dict:
        """List one employee's recorded working days (date and hours), oldest first, 20 per page.

        Args:
            employee_id: The employee's numeric id (not the E-number).
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def _facts(self) -> dict:
        return {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}

    def expected_lines(self, facts: dict) -> dict[int, dict]:
        """emp id -> the line the policy, agreements, holiday notice, corrections and the request call for."""
        expected = {}
        for emp in self.query("SELECT * FROM employees WHERE employment_type = 'employee' AND department != ?",
                              (self.params["excluded_department"],)):
            days = self.query("SELECT work_date, hours FROM timesheets WHERE employee_id = ? AND work_date BETWEEN ? AND ?",
                              (emp["id"], facts["period_start"], facts["period_end"]))
            if not days:
                continue
            holiday = sum(d["hours"] for d in days if d["work_date"] == facts["holiday"])
            ordinary = [d for d in days if d["work_date"] != facts["holiday"]]
            regular = overtime = 0.0
            if emp["union_local"] == facts["daily_union"]:
                for d in ordinary:
                    regular += min(d["hours"], facts["daily_threshold"])
                    overtime += max(0.0, d["hours"] - facts["daily_threshold"])
            else:
                weeks: dict[tuple, float] = {}
                for d in ordinary:
                    week = dt.date.fromisoformat(d["work_date"]).isocalendar()[:2]
                    weeks[week] = weeks.get(week, 0.0) + d["hours"]
                regular = sum(min(h, 40.0) for h in weeks.values())
                overtime = sum(max(0.0, h - 40.0) for h in weeks.values())
            overtime = min(overtime, float(self.params["overtime_cap"]))  # the excess is banked, not paid
            rate = facts["corrected_rates"].get(emp["emp_no"], emp["hourly_rate"])
            gross = round(rate * (regular + 1.5 * overtime + 2 * holiday), 2)
            expected[emp["id"]] = {"regular": regular, "overtime": overtime, "holiday": holiday, "gross": gross,
                                   "union": emp["union_local"] == facts["daily_union"], "emp_no": emp["emp_no"]}
        return expected

    def criteria(self, final_response: str) -> list[Criterion]:
        facts = self._facts()
        expected = self.expected_lines(facts)
        runs = self.query("SELECT * FROM pay_runs WHERE status = 'submitted'")
        run_ok = len(runs) == 1 and (runs[0]["period_start"], runs[0]["period_end"]) == (facts["period_start"], facts["period_end"])
        lines = self.query("SELECT * FROM pay_lines WHERE run_id = ?", (runs[0]["id"],)) if len(runs) == 1 else []
        got = {l["employee_id"]: l for l in lines}

        def hours_match(eid: int) -> bool:
            line, want = got.get(eid), expected[eid]
            return line is not None and all(abs(line[f"{k}_hours"] - want[k]) < 0.005 for k in ("regular", "overtime", "holiday"))

        def gross_match(eid: int) -> bool:
            return eid in got and abs(got[eid]["gross_pay"] - expected[eid]["gross"]) < 0.015

        corrected_ids = [e for e, w in expected.items() if w["emp_no"] in facts["corrected_rates"]]
        total = round(sum(w["gross"] for w in expected.values()), 2)
        numbers = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*(?:\.\d+)?", final_response)]
        wrong_gross = sum(1 for e in expected if not gross_match(e))
        return [
            Criterion("one_submitted_run_for_the_period", run_ok, 1.0,
                      f"{len(runs)} submitted runs; period {facts['period_start']}..{facts['period_end']} expected"),
            Criterion("lines_for_exactly_eligible_staff", set(got) == set(expected), 2.0,
                      f"{len(got)} lines, {len(expected)} expected (employees with time in the period, no contractors, "
                      f"nobody from {self.params['excluded_department']})"),
            Criterion("union_daily_overtime_applied", all(hours_match(e) for e, w in expected.items() if w["union"]), 1.0,
                      f"{facts['daily_union']} members get overtime per day, not per week (capped at {self.params['overtime_cap']} h)"),
            Criterion("weekly_overtime_and_holiday_hours", all(hours_match(e) for e, w in expected.items() if not w["union"]), 1.0,
                      f"40-hour weekly threshold with holiday hours set apart, overtime capped at {self.params['overtime_cap']} h"),
            Criterion("rate_corrections_applied", all(gross_match(e) for e in corrected_ids), 1.0,
                      "promoted staff are paid at the corrected rate"),
            Criterion("gross_pay_correct", wrong_gross == 0, 2.0, f"{wrong_gross} lines with wrong gross pay"),
            Criterion("total_gross_reported", any(abs(n - total) < 0.015 for n in numbers), 1.0, f"expected total {total:.2f}"),
        ]
