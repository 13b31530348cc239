from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

HANDLERS = ("outside_counsel", "recovery_desk")


class SubrogationEnv(WorkspaceEnvironment):
    @tool
    def list_claims(self, page: int = 1, status: str = "") -> dict:
        """List claims with loss date, amount paid, third party and their assessed share of fault, 20 per page.

        Args:
            status: Only claims in this status ("paid", "open" or "denied"); empty for all.
        """
        if status and status not in ("paid", "open", "denied"):
            raise ToolError('status must be "paid", "open", "denied" or empty')
        sql = ("SELECT id, claim_no, line, loss_date, status, paid_amount, third_party_id, third_party_fault_pct, description "
               "FROM claims")
        return self.query_page(sql + (" WHERE status = ?" if status else "") + " ORDER BY id", (status,) if status else (), page)

    @tool
    def get_third_party(self, third_party_id: int) -> dict:
        """Get one third party: name, kind (business, individual or municipality) and their insurer, if any.

        Args:
            third_party_id: The third party's numeric id.
        """
        return self.require_row("third_parties", third_party_id, what="third party")

    @tool
    def open_recovery_case(self, claim_id: int, expected_recovery: float) -> dict:
        """Open a subrogation recovery case for a paid claim; returns the new case id.

        Args:
            claim_id: The claim to recover.
            expected_recovery: The expected recovery in dollars.
        """
        claim = self.require_row("claims", claim_id, "use list_claims")
        if claim["status"] != "paid":
            raise ToolError(f"claim {claim_id} is {claim['status']}; only paid claims can be recovered")
        if self.query("SELECT id FROM recovery_cases WHERE claim_id = ?", (claim_id,)):
            raise ToolError(f"claim {claim_id} already has a recovery case")
        cur = self.db.execute("INSERT INTO recovery_cases (claim_id, expected_recovery, handler) VALUES (?,?,NULL)",
                              (claim_id, round(float(expected_recovery), 2)))
        return {"case_id": cur.lastrowid, "claim_id": claim_id, "handler": None}

    @tool
    def assign_case(self, case_id: int, handler: str) -> dict:
        """Assign an open recovery case to a handler.

        Args:
            case_id: The id returned when the case was opened.
            handler: "outside_counsel" or "recovery_desk".
        """
        if handler not in HANDLERS:
            raise ToolError(f"handler must be one of {HANDLERS}, got {handler!r}")
        self.require_row("recovery_cases", case_id, "open the case first")
        self.db.execute("UPDATE recovery_cases SET handler = ? WHERE id = ?", (handler, case_id))
        return {"case_id": case_id, "handler": handler}

    def _on_shared_cases(self, columns: str, criterion: str, where: str = "") -> Criterion:
        """Compared on the cases both opened, so that one wrong pick does not fail every criterion."""
        mine = {r["claim_id"] for r in self.query("SELECT claim_id FROM recovery_cases")}
        shared = mine & {r["claim_id"] for r in self.reference.query("SELECT claim_id FROM recovery_cases")}
        if not shared:
            return Criterion(criterion, False, 1.0, "no case opened for an expected claim")
        ids = ", ".join(str(i) for i in sorted(shared))
        return self.tables_match("recovery_cases", key="claim_id", columns=columns, where=f"claim_id IN ({ids}){where}",
                                 tolerance=0.01, criterion=criterion)

    def criteria(self, final_response: str) -> list[Criterion]:
        total = self.reference.query("SELECT SUM(expected_recovery) AS t FROM recovery_cases")[0]["t"]
        return [
            self.tables_match("recovery_cases", key="claim_id", weight=2.0,
                              criterion="cases_opened_for_the_top_candidates"),
            self._on_shared_cases("expected_recovery", "expected_recoveries_recorded"),
            # an unassigned case of any claim fails too: the reference leaves none
            self._on_shared_cases("handler", "handlers_assigned", where=" OR handler IS NULL"),
            self.file_matches(self.params["report_name"], as_="csv", key="rank", criterion="ranking_report_written"),
            self.answer_states(round(total, 2), criterion="total_expected_recovery_reported"),
        ]
