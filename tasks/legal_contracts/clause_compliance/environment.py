from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

SEVERITIES = ("high", "medium", "low")


class ClauseComplianceEnv(WorkspaceEnvironment):
    @tool
    def list_contracts(self, page: int = 1, contract_type: str = "") -> dict:
        """Page through supplier contracts (number, supplier, type, annual value in pounds), 20 at a time.

        Args:
            contract_type: Only "services", "supply" or "licence" contracts when non-empty.
        """
        return self.query_page("SELECT * FROM contracts WHERE ? = '' OR contract_type = ? ORDER BY id", (contract_type, contract_type), page)

    @tool
    def list_clauses(self, page: int = 1, contract_id: int = 0, heading: str = "") -> dict:
        """Page through the clause repository: each clause's contract, heading and wording, 20 at a time.

        Args:
            contract_id: Only this contract's clauses when non-zero.
            heading: Only clauses with this heading (e.g. "Payment") when non-empty.
        """
        return self.query_page("SELECT id, contract_id, heading, text FROM clauses WHERE (? = 0 OR contract_id = ?) "
                               "AND (? = '' OR heading = ?) ORDER BY id", (contract_id, contract_id, heading, heading), page)

    @tool
    def raise_issue(self, contract_id: int, clause: str, severity: str) -> dict:
        """Log a playbook deviation for one clause of a contract; returns the new issue's id.

        Args:
            contract_id: The contract's numeric id.
            clause: The clause heading exactly as in the repository, e.g. "Limitation of liability".
            severity: "high", "medium" or "low".
        """
        if severity not in SEVERITIES:
            raise ToolError(f"severity must be one of {SEVERITIES}, got {severity!r}")
        if not self.query("SELECT 1 FROM clauses WHERE contract_id = ? AND heading = ?", (contract_id, clause)):
            raise ToolError(f"contract {contract_id} has no clause headed {clause!r}; check list_clauses")
        if self.query("SELECT 1 FROM issues WHERE contract_id = ? AND heading = ?", (contract_id, clause)):
            raise ToolError(f"an issue for {clause!r} of contract {contract_id} already exists")
        issue = self.db.execute("INSERT INTO issues (contract_id, heading, severity) VALUES (?,?,?)", (contract_id, clause, severity))
        return {"issue_id": issue.lastrowid, "contract_id": contract_id, "clause": clause, "severity": severity}

    @tool
    def assign_issue(self, issue_id: int, reviewer: str) -> dict:
        """Route a logged issue to a reviewer.

        Args:
            issue_id: The id returned by raise_issue.
            reviewer: Who reviews it, e.g. "Senior Counsel".
        """
        self.require_row("issues", issue_id, "raise it first")
        if not reviewer.strip():
            raise ToolError("reviewer must not be empty")
        self.db.execute("UPDATE issues SET reviewer = ? WHERE id = ?", (reviewer.strip(), issue_id))
        return {"issue_id": issue_id, "reviewer": reviewer.strip()}

    def criteria(self, final_response: str) -> list[Criterion]:
        waived = self.facts["waived"]
        logged_waived = self.query("SELECT id FROM issues WHERE contract_id = ? AND heading = ?", tuple(waived))
        high = self.reference.query("SELECT COUNT(DISTINCT contract_id) AS n FROM issues WHERE severity = 'high'")
        return [
            self.tables_match("issues", key=["contract_id", "heading"], weight=2.0,
                              criterion="issues_for_exactly_the_deviations"),
            self.tables_match("issues", key=["contract_id", "heading"], columns="severity",
                              criterion="severities_follow_playbook"),
            self.tables_match("issues", key=["contract_id", "heading"], columns="reviewer",
                              criterion="issues_routed_to_reviewers"),
            Criterion("approved_deviation_not_logged", not logged_waived, 1.0, "side-letter approval honoured"),
            self.file_matches(self.params["report_name"], as_="md", key=["contract_no", "clause"],
                              criterion="review_table_written"),
            self.answer_states(high[0]["n"], criterion="high_severity_contract_count"),
        ]
