"""Tools and verifier for hr_payroll/leave_year_end."""
import datetime as dt
import json
import math
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

YEAR = 2026


def months_employed(hire: dt.date) -> int:
    """Calendar months of the leave year on whose first day the person was already employed."""
    return sum(1 for month in range(1, 13) if hire <= dt.date(YEAR, month, 1))


class LeaveEnv(WorkspaceEnvironment):
    @tool
    def list_employees(self, page: int = 1, status: str = "") -> dict:
        """List staff with hire date, FTE, employment status and the leave balance they opened the year with, 20 per page.

        Args:
            page: 1-based page number.
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
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def expected(self) -> dict[int, dict]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        years, bonus = facts["service"]
        who, when = facts["reclassified"]
        out = {}
        for e in self.query("SELECT * FROM employees WHERE status = 'active'"):
            hire = dt.date.fromisoformat(e["hire_date"])
            accrued = math.floor(facts["monthly"] * months_employed(hire) * e["fte"] * 2 + 0.5 + 1e-9) / 2
            long_service = (hire.year + years, hire.month, hire.day) <= (YEAR, 12, 31)
            accrued += bonus if long_service else 0
            taken = sum(r["days"] for r in self.query(
                "SELECT start_date, days FROM leave_records WHERE employee_id = ? AND kind = 'annual' AND start_date LIKE ?",
                (e["id"], f"{YEAR}-%")) if not (e["id"] == who and r["start_date"] == when))
            taken += self.params["shutdown_days"]  # the December shutdown, not yet in the system
            cap = facts["cap"] + self.params["extra_carry_days"]  # the board's one-off raise
            balance = e["opening_balance"] + accrued - taken
            out[e["id"]] = {"accrued": accrued, "taken": taken, "carried": min(balance, cap),
                            "forfeited": max(0.0, balance - cap), "long_service": long_service,
                            "new_hire": hire.year == YEAR, "corrected": e["id"] == who}
        return out

    def criteria(self, final_response: str) -> list[Criterion]:
        want = self.expected()
        got = {r["employee_id"]: r for r in self.query("SELECT * FROM year_end_balances WHERE year = ?", (YEAR,))}

        def close(eid: int, field: str, key: str) -> bool:
            return eid in got and abs(got[eid][field] - want[eid][key]) < 0.01

        def all_ok(field: str, key: str, only: str = "") -> bool:
            return all(close(e, field, key) for e, w in want.items() if not only or w[only])

        total = sum(w["forfeited"] for w in want.values())
        numbers = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*(?:\.\d+)?", final_response)]
        return [
            Criterion("balances_for_exactly_active_staff", set(got) == set(want), 2.0, f"{len(got)} posted, {len(want)} expected"),
            Criterion("new_hires_accrue_from_first_full_month", all_ok("accrued", "accrued", "new_hire"), 1.0,
                      "months counted only when employed on the 1st"),
            Criterion("long_service_days_added", all_ok("accrued", "accrued", "long_service"), 1.0, "service completed by 31 December"),
            Criterion("accrual_correct", all_ok("accrued", "accrued"), 1.0, "monthly rate x months x FTE, to the half day"),
            Criterion("annual_leave_taken_correct", all_ok("taken", "taken"), 1.0, f"2026 annual leave only, reclassified days excluded, plus {self.params['shutdown_days']} shutdown days"),
            Criterion("carry_over_and_forfeit_correct", all_ok("carried_forward", "carried") and all_ok("forfeited", "forfeited"), 1.0,
                      f"carry-over capped at the handbook limit plus {self.params['extra_carry_days']} days"),
            Criterion("total_forfeited_reported", any(abs(n - total) < 0.01 for n in numbers), 1.0, f"expected {total:g} days"),
        ]
