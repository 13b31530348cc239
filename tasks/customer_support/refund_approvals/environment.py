from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

DECISIONS = ("approve", "decline", "supervisor", "finance", "hold")


class RefundApprovalEnv(WorkspaceEnvironment):
    @tool
    def list_refund_requests(self, status: str = "pending", page: int = 1) -> dict:
        """List refund requests, 20 per page.

        Args:
            status: "pending" (default) or "decided"; empty for every request.
        """
        base = "SELECT id, order_id, requested_on, amount, reason, status, decided_amount FROM refund_requests"
        wheres = {"pending": " WHERE status = 'pending'", "decided": " WHERE status != 'pending'", "": ""}
        if status not in wheres:
            raise ToolError("status must be 'pending', 'decided' or empty")
        return self.query_page(base + wheres[status] + " ORDER BY id", page=page)

    @tool
    def get_order(self, order_id: int) -> dict:
        """Get one order with its delivery date and the refunds already issued on it.

        Args:
            order_id: The order's numeric id.
        """
        order = self.require_row("orders", order_id)
        order["refunds_issued"] = self.query("SELECT amount, issued_on FROM refunds WHERE order_id = ? ORDER BY id", (order_id,))
        return order

    @tool
    def list_customers(self, page: int = 1) -> dict:
        """List customers with their loyalty tier, 20 per page."""
        return self.query_page("SELECT id, name, email, loyalty_tier FROM customers ORDER BY id", page=page)

    @tool
    def decide_refund(self, request_id: int, decision: str, amount: float = 0.0, note: str = "") -> dict:
        """Record the decision on a pending refund request.

        Args:
            request_id: The request's numeric id.
            decision: One of "approve", "decline", "supervisor", "finance", "hold".
            amount: The approved amount in dollars; required (> 0) for "approve", otherwise ignored.
            note: Optional explanation kept with the decision.
        """
        if decision not in DECISIONS:
            raise ToolError(f"unknown decision {decision!r}; use one of {', '.join(DECISIONS)}")
        refund_request = self.require_row("refund_requests", request_id, "use list_refund_requests")
        if refund_request["status"] != "pending":
            raise ToolError(f"request {request_id} was already decided ({refund_request['status']})")
        if decision == "approve" and amount <= 0:
            raise ToolError("an approval needs the approved amount (greater than zero)")
        approved = round(amount, 2) if decision == "approve" else 0.0
        self.db.execute("UPDATE refund_requests SET status = ?, decided_amount = ?, decision_note = ? WHERE id = ?",
                        (decision, approved, note, request_id))
        return {"request_id": request_id, "decision": decision, "amount": approved}

    def criteria(self, final_response: str) -> list[Criterion]:
        total = self.reference.query("SELECT sum(decided_amount) AS t FROM refund_requests WHERE status = 'approve'")
        return [
            self.tables_match("refund_requests", key="id", columns="status", weight=2.0,
                              criterion="every_request_decided_correctly"),
            self.tables_match("refund_requests", key="id", columns=["status", "decided_amount"], tolerance=0.005,
                              criterion="approved_amounts_correct"),
            self.tables_match("refund_requests", key="id", where="status = 'hold'", criterion="fraud_holds_current"),
            self.file_matches(self.params["report_name"], as_="csv", key="request_id", tolerance=0.005,
                              criterion="report_written"),
            self.answer_states(round(total[0]["t"] or 0.0, 2), criterion="approved_total_reported"),
        ]
