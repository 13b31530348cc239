"""Tools and verifier for hr_payroll/bonus_allocation."""
import csv
import io
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, paginate, tool


def shared_ranks(scores: dict[int, float]) -> dict[int, int]:
    """Competition ranking: equal scores share a rank and the following ranks are skipped."""
    ordered = sorted(scores.values(), reverse=True)
    return {key: 1 + sum(1 for s in ordered if s > value) for key, value in scores.items()}


class BonusEnv(WorkspaceEnvironment):
    @tool
    def list_employees(self, page: int = 1, department: str = "") -> dict:
        """List staff with department, hire date and salary, 20 per page.

        Args:
            page: 1-based page number.
            department: Only this department when non-empty.
        """
        return self.query_page("SELECT * FROM employees WHERE ? = '' OR department = ? ORDER BY id", (department, department), page)

    @tool
    def list_review_scores(self, cycle: int, page: int = 1) -> dict:
        """List performance reviews (employee id, score out of 100, reviewer comment) of one review cycle, 50 per page.

        Args:
            cycle: The review cycle's year, e.g. 2026.
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def expected(self, facts: dict) -> dict[int, dict]:
        staff = self.query("SELECT e.*, r.score FROM employees e JOIN reviews r ON r.employee_id = e.id AND r.cycle = 2026")
        out = {}
        for department, pool in facts["pools"].items():
            if department == self.params["held_department"]:
                continue  # that pool is on hold
            eligible = {e["id"]: e for e in staff if e["department"] == department and e["hire_date"] <= facts["cutoff"]
                        and e["emp_no"] not in facts["pip"] and e["score"] >= self.params["min_score"]}
            ranks = shared_ranks({i: e["score"] for i, e in eligible.items()})
            units = {i: 3 if r <= facts["tiers"][0] else 2 if r <= facts["tiers"][1] else 1 for i, r in ranks.items()}
            total = sum(units.values())
            for i, e in eligible.items():
                out[i] = {"emp_no": e["emp_no"], "department": department, "rank": ranks[i], "units": units[i],
                          "bonus": pool * units[i] // total}
        return out

    def criteria(self, final_response: str) -> list[Criterion]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        want = self.expected(facts)
        rounds = self.query("SELECT round_id, COUNT(*) AS n FROM awards GROUP BY round_id")
        got = {a["employee_id"]: a["amount"] for a in self.query("SELECT * FROM awards")}
        excluded = {e["id"] for e in self.query("SELECT id, emp_no, hire_date FROM employees")} - set(want)
        eng = [i for i, w in want.items() if w["department"] == "Engineering"]

        report_ok, detail = False, f"{self.params['report_name']} not found"
        path = self.workspace / self.params["report_name"]
        if path.is_file():
            try:
                rows = list(csv.DictReader(io.StringIO(path.read_text().strip())))
                seen = {r["emp_no"].strip(): (r["department"].strip(), int(r["rank"]), int(r["units"]), int(float(r["bonus"])))
                        for r in rows}
                expect = {w["emp_no"]: (w["department"], w["rank"], w["units"], w["bonus"]) for w in want.values()}
                report_ok = len(rows) == len(expect) and seen == expect
                detail = "matches the expected ranking" if report_ok else f"{len(rows)} rows, {len(expect)} awards expected"
            except (KeyError, ValueError, AttributeError, TypeError) as exc:
                detail = f"cannot parse the file: {exc}"
        total = sum(w["bonus"] for w in want.values())
        numbers = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*(?:\.\d+)?", final_response)]
        return [
            Criterion("awards_in_a_single_round", len(rounds) == 1, 1.0, f"{len(rounds)} rounds hold awards"),
            Criterion("exactly_the_eligible_staff_awarded", set(got) == set(want), 2.0,
                      f"{len(got)} awards, {len(want)} eligible (late joiners, PIP, scores under {self.params['min_score']} "
                      f"and the held {self.params['held_department']} pool excluded)"),
            Criterion("tied_scores_share_ranks", all(got.get(i) == want[i]["bonus"] for i in eng), 1.0,
                      "Engineering's tie pattern: shared ranks skip the following ones"),
            Criterion("award_amounts_correct", all(got.get(i) == w["bonus"] for i, w in want.items()), 2.0,
                      "pool x units / department units, rounded down"),
            Criterion("no_award_for_ineligible", not (excluded & set(got)), 1.0, "late joiners, people on a plan, low scorers and the held pool get nothing"),
            Criterion("ranking_file_written", report_ok, 1.0, detail),
            Criterion("total_awarded_reported", any(abs(n - total) < 0.5 for n in numbers), 1.0, f"expected {total}"),
        ]
