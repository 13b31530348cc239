from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class RefundAuditEnv(WorkspaceEnvironment):
    @tool
    def list_returns(self, page: int = 1) -> dict:
        """List processed returns (order, sku, units, date received, reason, condition, refund issued), 20 per page."""
        return self.query_page(
            "SELECT r.id AS return_id, o.order_no, r.sku, r.qty, r.return_date, r.reason, r.item_condition, r.refund_issued "
            "FROM returns r JOIN orders o ON o.id = r.order_id ORDER BY r.id", page=page)

    @tool
    def get_order(self, order_no: str) -> dict:
        """Get an order with its date, coupon percentage and lines (sku, units, unit price).

        Args:
            order_no: The order number, e.g. "W1230004".
        """
        rows = self.query("SELECT id, order_no, customer, order_date, coupon_pct FROM orders WHERE order_no = ?", (order_no.strip(),))
        if not rows:
            raise ToolError(f"no order {order_no!r}")
        order = rows[0]
        order["lines"] = self.query("SELECT sku, qty, unit_price FROM order_lines WHERE order_id = ?", (order.pop("id"),))
        return order

    @tool
    def get_product(self, sku: str) -> dict:
        """Get a product's name, category, final-sale flag and today's shelf price.

        Args:
            sku: The product's SKU.
        """
        rows = self.query("SELECT * FROM products WHERE sku = ?", (sku.strip(),))
        if not rows:
            raise ToolError(f"no product {sku!r}")
        return rows[0]

    @tool
    def flag_refund(self, return_id: int, correct_amount: float, note: str = "") -> dict:
        """Flag a return whose refund was wrong, with the amount it should have been (flagging again replaces it).

        Args:
            return_id: The return's id.
            correct_amount: The refund the policy allows, in currency (0 when none).
            note: Optional short explanation.
        """
        self.require_row("returns", return_id, "use list_returns")
        if correct_amount < 0:
            raise ToolError("correct_amount cannot be negative")
        self.db.execute("INSERT OR REPLACE INTO refund_flags (return_id, correct_amount, note) VALUES (?,?,?)",
                        (return_id, round(correct_amount, 2), note))
        return {"return_id": return_id, "correct_amount": round(correct_amount, 2), "flagged": True}

    @tool
    def unflag_refund(self, return_id: int) -> dict:
        """Withdraw a flag raised by mistake.

        Args:
            return_id: The return's id.
        """
        if not self.query("SELECT 1 FROM refund_flags WHERE return_id = ?", (return_id,)):
            raise ToolError(f"return {return_id} is not flagged")
        self.db.execute("DELETE FROM refund_flags WHERE return_id = ?", (return_id,))
        return {"return_id": return_id, "flagged": False}

    def criteria(self, final_response: str) -> list[Criterion]:
        net = self.reference.query("SELECT sum(r.refund_issued - f.correct_amount) AS net FROM refund_flags f "
                                   "JOIN returns r ON r.id = f.return_id")[0]["net"]
        return [
            self.tables_match("refund_flags", key="return_id", criterion="exactly_the_wrong_refunds_flagged", weight=2.0),
            self.tables_match("refund_flags", key="return_id", columns="correct_amount", tolerance=0.011, weight=2.0,
                              criterion="correct_amounts_recorded"),
            self.tables_match("refund_flags", key="return_id", columns="correct_amount", where="return_id IN (2, 4)",
                              tolerance=0.011, criterion="restocking_fee_and_window_cases_flagged"),
            self.tables_match("refund_flags", key="return_id", where="return_id IN (1, 3)",
                              criterion="holiday_and_defective_exceptions_not_flagged"),
            self.file_matches(self.params["report_name"], key="return_id", tolerance=0.011, criterion="audit_file_written"),
            self.answer_states(round(net or 0.0, 2), tolerance=0.011, criterion="net_over_refund_reported"),
        ]
