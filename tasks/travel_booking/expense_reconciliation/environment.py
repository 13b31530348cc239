from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, paginate, tool

DECISIONS = ("approved", "partial", "rejected")
REASONS = ("", "outside_trip", "card_paid", "no_receipt", "meal_allowance")


class ExpenseAuditEnv(WorkspaceEnvironment):
    @tool
    def list_claims(self, page: int = 1, status: str = "submitted") -> dict:
        """List expense claims (employee, trip, submission date, status), 20 per page.

        Args:
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

    def criteria(self, final_response: str) -> list[Criterion]:
        excused = self.facts["excused_line"]
        honoured = self.query("SELECT decision FROM decisions WHERE line_id = ?", (excused,))
        total = self.reference.query("SELECT sum(approved_eur) AS t FROM decisions")[0]["t"] or 0.0
        return [
            self.tables_match("decisions", key="line_id", columns=["decision", "reason"], weight=2.0,
                              criterion="every_line_decided_with_right_outcome"),
            self.tables_match("decisions", key="line_id", columns="approved_eur", tolerance=0.011, weight=2.0,
                              criterion="amounts_converted_and_capped"),
            self.tables_match("decisions", key="line_id", where="reason = 'card_paid'",
                              criterion="card_paid_lines_rejected"),
            self.tables_match("decisions", key="line_id", columns="reason", criterion="date_and_receipt_rules",
                              where="reason IN ('outside_trip', 'no_receipt')"),
            Criterion("approved_exception_honoured", [r["decision"] for r in honoured] == ["approved"], 1.0,
                      "the lost hotel receipt with a signed declaration"),
            self.tables_match("payments", key="claim_id", criterion="every_claim_released", weight=0.5),
            self.tables_match("payments", key="claim_id", columns="amount_eur", tolerance=0.02, weight=0.5,
                              criterion="released_totals"),
            self.file_matches(self.params["report_name"], key="line_id", tolerance=0.011,
                              columns=["decision", "approved_eur", "reason"]),
            self.answer_states(round(total, 2), tolerance=0.011, criterion="total_reported"),
        ]
