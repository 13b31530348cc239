"""Tools and verifier for grant_management/effort_reporting."""
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class EffortReportingEnv(WorkspaceEnvironment):
    @tool
    def list_people(self, page: int = 1) -> dict:
        """List research personnel with department, role and annual salary, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, name, department, role, annual_salary FROM people ORDER BY id", page=page)

    @tool
    def list_grants(self, page: int = 1) -> dict:
        """List grants with sponsor and start and end dates, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, code, sponsor, title, start_date, end_date FROM grants ORDER BY id", page=page)

    @tool
    def list_effort_lines(self, page: int = 1, person_id: int = 0) -> dict:
        """List effort lines (person, grant, charged % and cost-shared %), 50 per page.

        Args:
            page: 1-based page number.
            person_id: Only this person's lines when non-zero.
        """
        where, args = (" WHERE person_id = ?", (person_id,)) if person_id else ("", ())
        return self.query_page("SELECT id, person_id, grant_id, charged_pct, cost_shared_pct FROM effort_lines" + where + " ORDER BY id",
                               args, page, page_size=50)

    @tool
    def certify_effort(self, person_id: int, total_effort_pct: float) -> dict:
        """Record a person's certified total committed effort for the period; returns the certification id.

        Args:
            person_id: The person being certified.
            total_effort_pct: Their total committed effort in percent (may exceed 100).
        """
        self.require_row("people", person_id, "use list_people", what="person")
        if total_effort_pct < 0:
            raise ToolError("total_effort_pct cannot be negative")
        if self.query("SELECT id FROM certifications WHERE person_id = ?", (person_id,)):
            raise ToolError(f"person {person_id} is already certified for this period")
        cur = self.db.execute("INSERT INTO certifications (person_id, total_effort_pct) VALUES (?, ?)",
                              (person_id, float(total_effort_pct)))
        return {"certification_id": cur.lastrowid, "person_id": person_id}

    @tool
    def flag_overcommitment(self, certification_id: int, excess_pct: float) -> dict:
        """Flag a certification as over-committed by the given excess over 100%.

        Args:
            certification_id: The id returned by certify_effort.
            excess_pct: How many percentage points above 100 the total is.
        """
        self.require_row("certifications", certification_id, "certify the person first")
        if excess_pct <= 0:
            raise ToolError("excess_pct must be positive")
        cur = self.db.execute("INSERT INTO overcommitment_flags (certification_id, excess_pct) VALUES (?, ?)",
                              (certification_id, float(excess_pct)))
        return {"flag_id": cur.lastrowid, "certification_id": certification_id}

    # --- verifier --------------------------------------------------------------------------------
    def _expected(self) -> tuple[dict[int, float], float]:
        rules = json.loads(self.query("SELECT value FROM _verifier_facts WHERE key = 'rules'")[0]["value"])
        people = {p["id"]: p for p in self.query("SELECT * FROM people")}
        grants = {g["id"]: g for g in self.query("SELECT * FROM grants")}
        totals: dict[int, float] = {}
        uncovered = 0.0
        for line in self.query("SELECT * FROM effort_lines"):
            grant = grants[line["grant_id"]]
            if grant["end_date"] < rules["period_start"] or people[line["person_id"]]["department"] == self.params["excluded_department"]:
                continue
            totals[line["person_id"]] = totals.get(line["person_id"], 0.0) + line["charged_pct"] + line["cost_shared_pct"]
            salary = people[line["person_id"]]["annual_salary"]
            if grant["sponsor"] == rules["capped"] and salary > rules["cap"]:
                uncovered += line["charged_pct"] / 100 * (salary - rules["cap"]) / 2
        for pid in totals:
            p = people[pid]
            if p["role"] == "faculty":
                totals[pid] += rules["teaching"] + (rules["clinical"] if p["department"] == rules["clinical_dept"] else 0)
        return totals, round(uncovered, 2)

    def criteria(self, final_response: str) -> list[Criterion]:
        totals, uncovered = self._expected()
        certs = {c["person_id"]: c for c in self.query("SELECT * FROM certifications")}
        flags = {f["person_id"]: f["excess_pct"] for f in self.query(
            "SELECT c.person_id, f.excess_pct FROM overcommitment_flags f JOIN certifications c ON c.id = f.certification_id")}
        n_flags = self.query("SELECT COUNT(*) AS n FROM overcommitment_flags")[0]["n"]
        common = [p for p in totals if p in certs]
        limit = self.params["effort_limit"]
        over = {p: t - limit for p, t in totals.items() if t > limit + 1e-9}
        flags_ok = set(flags) == set(over) and n_flags == len(flags) and all(abs(flags[p] - e) < 0.01 for p, e in over.items())
        numbers = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*(?:\.\d+)?", final_response)]
        return [
            Criterion("everyone_with_active_effort_certified", set(certs) == set(totals), 1.0,
                      f"{len(certs)} certified, {len(totals)} expected"),
            Criterion("certified_totals_correct", bool(common) and all(abs(certs[p]["total_effort_pct"] - totals[p]) < 0.01 for p in common),
                      2.0, "active grants only, plus teaching and clinical reserves"),
            Criterion("overcommitments_flagged", flags_ok, 1.0, f"{len(over)} people over {limit}%"),
            Criterion("salary_cap_cost_reported", any(abs(n - uncovered) < 0.01 for n in numbers), 1.0,
                      f"expected {uncovered:.2f}"),
        ]
