import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class EffortReportingEnv(WorkspaceEnvironment):
    @tool
    def list_people(self, page: int = 1) -> dict:
        """List research personnel with department, role and annual salary, 20 per page."""
        return self.query_page("SELECT id, name, department, role, annual_salary FROM people ORDER BY id", page=page)

    @tool
    def list_grants(self, page: int = 1) -> dict:
        """List grants with sponsor and start and end dates, 20 per page."""
        return self.query_page("SELECT id, code, sponsor, title, start_date, end_date FROM grants ORDER BY id", page=page)

    @tool
    def list_effort_lines(self, page: int = 1, person_id: int = 0) -> dict:
        """List effort lines (person, grant, charged % and cost-shared %), 50 per page.

        Args:
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

    def criteria(self, final_response: str) -> list[Criterion]:
        flags = "overcommitment_flags f JOIN certifications c ON c.id = f.certification_id"
        uncovered = float(re.search(r"\$([\d,]+\.\d\d)", self.reference.answer).group(1).replace(",", ""))
        return [
            self.tables_match("certifications", key="person_id", criterion="everyone_with_active_effort_certified"),
            self.tables_match("certifications", key="person_id", columns="total_effort_pct", tolerance=0.01,
                              weight=2.0, criterion="certified_totals_correct"),
            self.tables_match(flags, key="c.person_id", columns="f.excess_pct", tolerance=0.01,
                              criterion="overcommitments_flagged"),
            self.answer_states(uncovered, criterion="salary_cap_cost_reported"),
        ]
