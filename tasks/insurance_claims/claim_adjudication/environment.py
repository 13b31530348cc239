"""Tools and verifier for insurance_claims/claim_adjudication."""
import json
import re
from typing import Literal

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

REASON_CODES = ("not_in_force", "late_notification", "excluded_peril")


class ClaimAdjudicationEnv(WorkspaceEnvironment):
    @tool
    def list_claims(self, page: int = 1, status: Literal["open", "decided", "closed"] = "open") -> dict:
        """List claims with their policy, loss and report dates and cause, 20 per page.

        Args:
            page: 1-based page number.
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
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def criteria(self, final_response: str) -> list[Criterion]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        expected = {k: tuple(v) for k, v in facts["expected"].items()}
        got = {}
        for r in self.query("SELECT c.claim_no, d.decision, d.reason, d.payout, d.id FROM decisions d JOIN claims c ON c.id = d.claim_id"):
            got.setdefault(r["claim_no"], []).append(r)
        single = all(len(v) == 1 for v in got.values())
        decided_ok = single and set(got) == set(expected)
        outcomes_ok = decided_ok and all(got[k][0]["decision"] == v[0] and (got[k][0]["reason"] or "") == v[1] for k, v in expected.items())
        payouts_ok = decided_ok and all(abs(got[k][0]["payout"] - v[2]) < 0.01 for k, v in expected.items() if v[0] == "approve")
        hold_ok = facts["hold"] not in got and bool(got)

        holders = {r["claim_no"]: r["holder"] for r in self.query(
            "SELECT c.claim_no, p.holder FROM claims c JOIN policies p ON p.id = c.policy_id")}
        pays = self.query("SELECT c.claim_no, p.payee, p.amount FROM payments p JOIN decisions d ON d.id = p.decision_id "
                          "JOIN claims c ON c.id = d.claim_id")
        want_pay = sorted((k, holders[k], v[2]) for k, v in expected.items() if v[0] == "approve")
        got_pay = sorted((p["claim_no"], p["payee"], round(p["amount"], 2)) for p in pays)
        pay_ok = got_pay == want_pay

        report_ok, detail = False, f"{self.params['report_name']} not found"
        path = self.workspace / self.params["report_name"]
        if path.is_file():
            try:
                data = json.loads(path.read_text())
                rows = {d["claim_no"].strip(): (d["decision"].strip(), (d.get("reason") or "").strip(), round(float(d["payout"]), 2))
                        for d in data}
                report_ok = len(data) == len(expected) and rows == expected
                detail = "matches the expected decisions" if report_ok else f"{len(data)} entries; differ from the {len(expected)} expected"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                detail = f"cannot parse the report: {exc}"
        total = round(sum(v[2] for v in expected.values()), 2)
        numbers = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.\d{2}", final_response)]
        return [
            Criterion("exactly_the_decidable_claims_decided", decided_ok, 1.0, f"{len(got)} decided, {len(expected)} expected"),
            Criterion("siu_hold_respected", hold_ok, 1.0, f"claim {facts['hold']} must stay open"),
            Criterion("decisions_and_reason_codes", outcomes_ok, 2.0, "rules checked in the guidance's order"),
            Criterion("payouts_apply_limits_and_excess", payouts_ok, 2.0, "sub-limits, excess and sum insured"),
            Criterion("approved_claims_paid_to_holders", pay_ok, 1.0, f"{len(got_pay)} payments, {len(want_pay)} expected"),
            Criterion("report_written", report_ok, 1.0, detail),
            Criterion("total_payout_reported", any(abs(n - total) < 0.01 for n in numbers), 1.0, f"expected total {total:.2f}"),
        ]
