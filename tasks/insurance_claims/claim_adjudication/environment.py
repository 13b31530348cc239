from typing import Literal

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

REASON_CODES = ("not_in_force", "late_notification", "excluded_peril")


class ClaimAdjudicationEnv(WorkspaceEnvironment):
    @tool
    def list_claims(self, page: int = 1, status: Literal["open", "decided", "closed"] = "open") -> dict:
        """List claims with their policy, loss and report dates and cause, 20 per page.

        Args:
            status: "open", "decided" or "closed".
        """
        return self.query_page("SELECT id, claim_no, policy_id, loss_date, reported_date, peril, description, status "
                               "FROM claims WHERE status = ? ORDER BY id", (status,), page)

    @tool
    def get_policy(self, policy_id: int) -> dict:
        """Get a policy: number, holder, product, period, excess and sum insured.

        Args:
            policy_id: The policy's id (as on a claim).
        """
        return self.require_row("policies", policy_id, what="policy")

    @tool
    def list_claim_items(self, claim_id: int, page: int = 1) -> dict:
        """List the assessed line items of a claim (category, description, amount in pounds), 20 per page.

        Args:
            claim_id: The claim's id.
        """
        self.require_row("claims", claim_id, "use list_claims")
        return self.query_page("SELECT id, category, description, amount FROM claim_items WHERE claim_id = ? ORDER BY id",
                               (claim_id,), page)

    @tool
    def record_decision(self, claim_id: int, decision: Literal["approve", "deny"], reason: str = "", payout: float = 0.0) -> dict:
        """Record the decision on an open claim; returns the decision id (needed to pay an approved claim).

        Args:
            claim_id: The open claim.
            decision: "approve" or "deny".
            reason: For a denial, one of not_in_force, late_notification, excluded_peril; empty for an approval.
            payout: Amount to pay for an approval, in pounds; 0 for a denial.
        """
        claim = self.query("SELECT id, status FROM claims WHERE id = ?", (claim_id,))
        if not claim or claim[0]["status"] != "open":
            raise ToolError(f"claim {claim_id} does not exist or is not open")
        if decision == "deny" and reason not in REASON_CODES:
            raise ToolError(f"a denial needs a reason code: one of {', '.join(REASON_CODES)}")
        if decision == "approve" and (reason or payout < 0):
            raise ToolError("an approval takes no reason and a payout of at least 0")
        cur = self.db.execute("INSERT INTO decisions (claim_id, decision, reason, payout) VALUES (?,?,?,?)",
                              (claim_id, decision, reason, round(payout, 2) if decision == "approve" else 0.0))
        self.db.execute("UPDATE claims SET status = 'decided' WHERE id = ?", (claim_id,))
        return {"decision_id": cur.lastrowid, "claim_id": claim_id, "decision": decision}

    @tool
    def issue_payment(self, decision_id: int, payee: str) -> dict:
        """Pay out an approved decision's amount.

        Args:
            decision_id: The id returned by record_decision for an approval.
            payee: Who receives the money (name).
        """
        row = self.query("SELECT id, decision, payout FROM decisions WHERE id = ?", (decision_id,))
        if not row or row[0]["decision"] != "approve":
            raise ToolError(f"decision {decision_id} does not exist or is not an approval")
        if self.query("SELECT id FROM payments WHERE decision_id = ?", (decision_id,)):
            raise ToolError(f"decision {decision_id} has already been paid")
        cur = self.db.execute("INSERT INTO payments (decision_id, payee, amount) VALUES (?,?,?)", (decision_id, payee.strip(), row[0]["payout"]))
        return {"payment_id": cur.lastrowid, "amount": row[0]["payout"], "payee": payee.strip()}

    def criteria(self, final_response: str) -> list[Criterion]:
        decided = "decisions d JOIN claims c ON c.id = d.claim_id"
        paid = "payments p JOIN decisions d ON d.id = p.decision_id JOIN claims c ON c.id = d.claim_id"
        # the claim on SIU hold is the one open claim the reference solution leaves undecided
        held = {r["claim_no"] for r in self.reference.query("SELECT claim_no FROM claims WHERE status = 'open'")}
        mine = {r["claim_no"] for r in self.query(f"SELECT c.claim_no FROM {decided}")}
        total = self.reference.query("SELECT SUM(amount) AS t FROM payments")[0]["t"]
        return [
            self.tables_match(decided, key="c.claim_no", criterion="exactly_the_decidable_claims_decided"),
            Criterion("siu_hold_respected", bool(mine) and not held & mine, 1.0,
                      f"{', '.join(sorted(held))} must stay open"),
            self.tables_match(decided, key="c.claim_no", columns=["d.decision", "d.reason"], weight=2.0,
                              criterion="decisions_and_reason_codes"),
            self.tables_match(decided, key="c.claim_no", columns="d.payout", tolerance=0.01, weight=2.0,
                              criterion="payouts_apply_limits_and_excess"),
            self.tables_match(paid, key="c.claim_no", columns=["p.payee", "p.amount"], tolerance=0.01,
                              criterion="approved_claims_paid_to_holders"),
            self.file_matches(self.params["report_name"], as_="json", key="claim_no", criterion="report_written"),
            self.answer_states(round(total, 2), criterion="total_payout_reported"),
        ]
