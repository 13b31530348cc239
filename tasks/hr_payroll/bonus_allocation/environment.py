from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, paginate, tool


class BonusEnv(WorkspaceEnvironment):
    @tool
    def list_employees(self, page: int = 1, department: str = "") -> dict:
        """List staff with department, hire date and salary, 20 per page.

        Args:
            department: Only this department when non-empty.
        """
        return self.query_page("SELECT * FROM employees WHERE ? = '' OR department = ? ORDER BY id", (department, department), page)

    @tool
    def list_review_scores(self, cycle: int, page: int = 1) -> dict:
        """List performance reviews (employee id, score out of 100, reviewer comment) of one review cycle, 50 per page.

        Args:
            cycle: The review cycle's year, e.g. 2026.
        """
        rows = self.query("SELECT employee_id, score, reviewer_comment FROM reviews WHERE cycle = ? ORDER BY id", (cycle,))
        if not rows:
            raise ToolError(f"no reviews for cycle {cycle}")
        return paginate(rows, page, page_size=50)

    @tool
    def create_bonus_round(self, name: str) -> dict:
        """Open a bonus round to record awards in; returns its id.

        Args:
            name: A name for the round, e.g. "2026 annual bonus".
        """
        if not name.strip():
            raise ToolError("give the round a name")
        cur = self.db.execute("INSERT INTO bonus_rounds (name) VALUES (?)", (name.strip(),))
        return {"round_id": cur.lastrowid, "name": name.strip()}

    @tool
    def record_award(self, round_id: int, employee_id: int, amount: int) -> dict:
        """Record (or replace) one person's bonus in a round.

        Args:
            round_id: The id returned by create_bonus_round.
            employee_id: The employee's numeric id.
            amount: Bonus in whole currency units.
        """
        self.require_row("bonus_rounds", round_id, "create one first")
        self.require_row("employees", employee_id, "use list_employees")
        if amount < 0:
            raise ToolError("amount cannot be negative")
        cur = self.db.execute("INSERT OR REPLACE INTO awards (round_id, employee_id, amount) VALUES (?,?,?)",
                              (round_id, employee_id, amount))
        return {"award_id": cur.lastrowid, "round_id": round_id, "employee_id": employee_id, "amount": amount}

    def criteria(self, final_response: str) -> list[Criterion]:
        rounds = self.query("SELECT COUNT(DISTINCT round_id) AS n FROM awards")[0]["n"]
        eligible = {r["employee_id"] for r in self.reference.query("SELECT employee_id FROM awards")}
        ineligible = [r["employee_id"] for r in self.query("SELECT employee_id FROM awards")
                      if r["employee_id"] not in eligible]
        engineering = "awards a JOIN employees e ON e.id = a.employee_id AND e.department = 'Engineering'"
        total = self.reference.query("SELECT SUM(amount) AS t FROM awards")[0]["t"]
        return [
            Criterion("awards_in_a_single_round", rounds == 1, 1.0, f"{rounds} rounds hold awards"),
            self.tables_match("awards", key="employee_id", weight=2.0, criterion="exactly_the_eligible_staff_awarded"),
            self.tables_match(engineering, key="a.employee_id", columns="a.amount",
                              criterion="tied_scores_share_ranks"),
            self.tables_match("awards", key="employee_id", columns="amount", weight=2.0,
                              criterion="award_amounts_correct"),
            Criterion("no_award_for_ineligible", not ineligible, 1.0,
                      f"{len(ineligible)} awards for late joiners, people on a plan, low scorers or the held pool"),
            self.file_matches(self.params["report_name"], as_="csv", key="emp_no", criterion="ranking_file_written"),
            self.answer_states(total, tolerance=0.5, criterion="total_awarded_reported"),
        ]
