"""Tools and verifier for legal_contracts/clause_compliance."""
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

SEVERITIES = ("high", "medium", "low")


def expected_issues(contracts: list[dict], terms: dict, rules: dict, waived: tuple, min_value: float, accepted_law: str) -> dict:
    """{(contract_id, heading): severity} for every clause of an in-scope contract that departs from the playbook."""
    found = {}
    for c in contracts:
        if c["annual_value"] < min_value:
            continue
        t = terms[c["id"]]
        cap = t["cap"]
        if cap is None or cap < 1:
            found[(c["id"], "Limitation of liability")] = "high"
        elif cap > rules["cap_max"]:
            found[(c["id"], "Limitation of liability")] = "medium"
        if t["pay"] < rules["pay_min"]:
            found[(c["id"], "Payment")] = "medium"
        if t["law"] not in ("England and Wales", "Scotland", accepted_law) and not (t["law"] == "New York" and c["contract_type"] == "licence"):
            found[(c["id"], "Governing law")] = "medium"
        if (t["term"] is None or t["term"] > rules["term_max"]) and c["annual_value"] >= rules["small_value"]:
            found[(c["id"], "Termination")] = "medium"
        if t["conf"] < rules["conf_min"]:
            found[(c["id"], "Confidentiality")] = "low"
        if t["breach"] is not None and t["breach"] > rules["breach_max"]:
            found[(c["id"], "Data protection")] = "high"
    found.pop(waived, None)
    return found


class ClauseComplianceEnv(WorkspaceEnvironment):
    @tool
    def list_contracts(self, page: int = 1, contract_type: str = "") -> dict:
        """Page through supplier contracts (number, supplier, type, annual value in pounds), 20 at a time.

        Args:
            page: 1-based page number.
            contract_type: Only "services", "supply" or "licence" contracts when non-empty.
        """
        return self.query_page("SELECT * FROM contracts WHERE ? = '' OR contract_type = ? ORDER BY id", (contract_type, contract_type), page)

    @tool
    def list_clauses(self, page: int = 1, contract_id: int = 0, heading: str = "") -> dict:
        """Page through the clause repository: each clause's contract, heading and wording, 20 at a time.

        Args:
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def criteria(self, final_response: str) -> list[Criterion]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        terms = {r["contract_id"]: json.loads(r["terms"]) for r in self.query("SELECT * FROM _clause_terms")}
        contracts = self.query("SELECT * FROM contracts")
        want = expected_issues(contracts, terms, facts["rules"], tuple(facts["waived"]), self.params["min_value"], self.params["accepted_law"])
        logged = {(i["contract_id"], i["heading"]): i for i in self.query("SELECT * FROM issues")}
        severities_ok = all(k in logged and logged[k]["severity"] == s for k, s in want.items())
        routed_ok = all(k in logged and (logged[k]["reviewer"] or "").lower() == facts["reviewers"][s].lower() for k, s in want.items())

        number = {c["id"]: c["contract_no"] for c in contracts}
        table_want = {(number[cid], heading.lower(), sev) for (cid, heading), sev in want.items()}
        report_name = self.params["report_name"]
        table_got, note = set(), f"{report_name} not found"
        path = self.workspace / report_name
        if path.is_file():
            for line in path.read_text().splitlines():
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                if len(cells) == 3 and re.fullmatch(r"SC-\d{5}", cells[0]):
                    table_got.add((cells[0], cells[1].lower(), cells[2].lower()))
            note = f"{len(table_got)} issue rows in the table, {len(table_want)} expected"
        high = {cid for (cid, _), s in want.items() if s == "high"}
        said = [int(n) for n in re.findall(r"(?<![\w.-])\d+(?![\w.])", final_response)]
        return [
            Criterion("issues_for_exactly_the_deviations", set(logged) == set(want), 2.0,
                      f"{len(logged)} logged, {len(want)} expected (contracts worth at least {self.params['min_value']}, {self.params['accepted_law']} law accepted)"),
            Criterion("severities_follow_playbook", severities_ok, 1.0, "severity per the playbook"),
            Criterion("issues_routed_to_reviewers", routed_ok, 1.0, "each issue routed by severity"),
            Criterion("approved_deviation_not_logged", tuple(facts["waived"]) not in logged, 1.0, "side-letter approval honoured"),
            Criterion("review_table_written", table_got == table_want, 1.0, note),
            Criterion("high_severity_contract_count", len(high) in said, 1.0, f"expected {len(high)}"),
        ]
