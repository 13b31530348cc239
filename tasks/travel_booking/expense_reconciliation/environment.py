"""Tools and verifier for travel_booking/expense_reconciliation."""
import csv
import io
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, paginate, tool

DECISIONS = ("approved", "partial", "rejected")
REASONS = ("", "outside_trip", "card_paid", "no_receipt", "meal_allowance")


class ExpenseAuditEnv(WorkspaceEnvironment):
    @tool
    def list_claims(self, page: int = 1, status: str = "submitted") -> dict:
        """List expense claims (employee, trip, submission date, status), 20 per page.

        Args:
            page: 1-based page number.
            status: "submitted" or "released".
        """
        return self.query_page("SELECT id, employee_id, trip_id, submitted, status FROM claims WHERE status = ? ORDER BY id", (status,), page)

    @tool
    def get_trip(self, trip_id: int) -> dict:
        """Get a business trip: traveller, city, first and last day, purpose.

        Args:
            trip_id: The trip's id.
        """
        return self.require_row("trips", trip_id)

    @tool
    def list_expense_lines(self, claim_id: int, page: int = 1) -> dict:
        """List the lines of an expense claim (date, category, merchant, amount, currency, receipt attached), 20 per page.

        Args:
            claim_id: The claim's id.
            page: 1-based page number.
        """
        lines = self.query("SELECT id, claim_id, spent_on, category, merchant, amount, currency, has_receipt FROM expense_lines "
                           "WHERE claim_id = ? ORDER BY id", (claim_id,))
        if not lines:  # every claim has lines, so an empty result means the claim id is wrong
            raise ToolError(f"no claim with id {claim_id}; list_claims shows the claim ids")
        return paginate(lines, page)

    @tool
    def list_fx_rates(self, currency: str, page: int = 1) -> dict:
        """List finance's daily exchange rates for one currency (euros per unit), by day, 50 per page.

        Args:
            currency: ISO code, e.g. "GBP".
            page: 1-based page number.
        """
        rows = self.query("SELECT currency, day, eur_per_unit FROM fx_rates WHERE currency = ? ORDER BY day", (currency.strip().upper(),))
        if not rows:
            raise ToolError(f"no rates for currency {currency!r}")
        return paginate(rows, page, page_size=50)

    @tool
    def list_card_transactions(self, employee_id: int, page: int = 1) -> dict:
        """List the corporate card transactions of one employee (date, merchant, amount, currency), 20 per page.

        Args:
            employee_id: The employee's id.
            page: 1-based page number.
        """
        return self.query_page("SELECT id, posted_on, merchant, amount, currency FROM card_transactions WHERE employee_id = ? ORDER BY id",
                               (employee_id,), page)

    @tool
    def decide_line(self, line_id: int, decision: str, approved_eur: float, reason: str = "") -> dict:
        """Record the decision on one expense line.

        Args:
            line_id: The expense line's id.
            decision: "approved", "partial" or "rejected".
            approved_eur: The amount reimbursed for this line in euros (0 when rejected).
            reason: Reason code for partial or rejected lines: outside_trip, card_paid, no_receipt or meal_allowance.
        """
        if decision not in DECISIONS:
            raise ToolError(f"decision must be one of {', '.join(DECISIONS)}")
        if reason not in REASONS:
            raise ToolError(f"reason must be one of {', '.join(r for r in REASONS if r)} (or empty for approvals)")
        self.require_row("expense_lines", line_id, "use list_expense_lines")
        if approved_eur < 0:
            raise ToolError("approved_eur cannot be negative")
        self.db.execute("INSERT OR REPLACE INTO decisions VALUES (?,?,?,?)", (line_id, decision, round(approved_eur, 2), reason))
        return {"line_id": line_id, "decision": decision, "approved_eur": round(approved_eur, 2)}

    @tool
    def release_claim(self, claim_id: int) -> dict:
        """Release a fully decided claim for payment; returns the payment with the reimbursed total.

        Args:
            claim_id: The claim's id.
        """
        claim = self.query("SELECT id, status FROM claims WHERE id = ?", (claim_id,))
        if not claim or claim[0]["status"] != "submitted":
            raise ToolError(f"claim {claim_id} does not exist or was already released")
        open_lines = self.query("SELECT l.id FROM expense_lines l LEFT JOIN decisions d ON d.line_id = l.id WHERE l.claim_id = ? AND d.line_id IS NULL",
                                (claim_id,))
        if open_lines:
            raise ToolError(f"claim {claim_id} still has {len(open_lines)} undecided lines, e.g. line {open_lines[0]['id']}")
        total = self.query("SELECT COALESCE(SUM(d.approved_eur), 0) AS t FROM decisions d JOIN expense_lines l ON l.id = d.line_id WHERE l.claim_id = ?",
                           (claim_id,))[0]["t"]
        cur = self.db.execute("INSERT INTO payments (claim_id, amount_eur) VALUES (?,?)", (claim_id, round(total, 2)))
        self.db.execute("UPDATE claims SET status = 'released' WHERE id = ?", (claim_id,))
        return {"payment_id": cur.lastrowid, "claim_id": claim_id, "amount_eur": round(total, 2)}

    # --- verifier --------------------------------------------------------------------------------
    def criteria(self, final_response: str) -> list[Criterion]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        expected = facts["expected"]
        got = {str(r["line_id"]): r for r in self.query("SELECT * FROM decisions")}
        all_decided = set(got) == set(expected)
        outcome_ok = all_decided and all(got[k]["decision"] == v[0] and got[k]["reason"] == v[2] for k, v in expected.items())
        amounts_ok = all_decided and all(abs(got[k]["approved_eur"] - v[1]) < 0.011 for k, v in expected.items())
        card_ok = bool(got) and all(got.get(k, {}).get("reason") == "card_paid" for k, v in expected.items() if v[2] == "card_paid")
        paid = {str(r["claim_id"]): r["amount_eur"] for r in self.query("SELECT claim_id, amount_eur FROM payments")}
        released_ok = set(paid) == set(facts["claim_totals"])
        totals_ok = released_ok and all(abs(paid[k] - v) < 0.02 for k, v in facts["claim_totals"].items())
        rules_ok = bool(got) and all(got.get(k, {}).get("reason") == v[2] for k, v in expected.items() if v[2] in ("outside_trip", "no_receipt"))
        exception_ok = got.get(facts["excused_line"], {}).get("decision") == "approved"
        report_ok, detail = False, f"{self.params['report_name']} not found"
        path = self.workspace / self.params["report_name"]
        if path.is_file():
            try:
                rows = {r["line_id"].strip(): [r["decision"].strip(), round(float(r["approved_eur"] or 0), 2), (r["reason"] or "").strip()]
                        for r in csv.DictReader(io.StringIO(path.read_text().strip()))}
                report_ok = set(rows) == set(expected) and all(rows[k][0] == v[0] and rows[k][2] == v[2] and abs(rows[k][1] - v[1]) < 0.011
                                                               for k, v in expected.items())
                detail = "matches the expected decisions" if report_ok else f"{len(rows)} rows; differ from the {len(expected)} expected"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                detail = f"cannot parse the report: {exc}"
        numbers = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.\d{2}", final_response)]
        return [
            Criterion("every_line_decided_with_right_outcome", outcome_ok, 2.0, "rules in policy order, first match wins"),
            Criterion("amounts_converted_and_capped", amounts_ok, 2.0, "daily FX rate, cents, meal allowance per claim and day"),
            Criterion("card_paid_lines_rejected", card_ok, 1.0, "lines already on the corporate card"),
            Criterion("date_and_receipt_rules", rules_ok, 1.0, f"outside-trip and missing-receipt rejections (limit {self.params['receipt_limit']} EUR)"),
            Criterion("approved_exception_honoured", exception_ok, 1.0, "the lost hotel receipt with a signed declaration"),
            Criterion("every_claim_released", released_ok, 0.5, f"{len(paid)} released, {len(facts['claim_totals'])} expected"),
            Criterion("released_totals", totals_ok, 0.5, "payment per claim equals its approved lines"),
            Criterion("report_written", report_ok, 1.0, detail),
            Criterion("total_reported", any(abs(n - facts["total"]) < 0.011 for n in numbers), 1.0, f"expected {facts['total']:.2f}"),
        ]
