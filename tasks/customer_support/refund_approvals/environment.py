"""Tools and verifier for customer_support/refund_approvals."""
import csv
import io
import json
import re
from datetime import date

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

DECISIONS = ("approve", "decline", "supervisor", "finance", "hold")


class RefundApprovalEnv(WorkspaceEnvironment):
    @tool
    def list_refund_requests(self, status: str = "pending", page: int = 1) -> dict:
        """List refund requests, 20 per page.

        Args:
            status: "pending" (default) or "decided"; empty for every request.
            page: 1-based page number.
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
        """List customers with their loyalty tier, 20 per page.

        Args:
            page: 1-based page number.
        """
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

    # --- verifier --------------------------------------------------------------------------------
    def expected(self) -> dict[int, tuple[str, float]]:
        f = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        issued = {}
        for r in self.query("SELECT order_id, amount FROM refunds"):
            issued[r["order_id"]] = issued.get(r["order_id"], 0) + r["amount"]
        out = {}
        for r in self.query("SELECT q.id, q.requested_on, q.amount, q.reason, o.id AS oid, o.delivered_on, o.total, "
                            "c.id AS cid, c.loyalty_tier FROM refund_requests q JOIN orders o ON o.id = q.order_id "
                            "JOIN customers c ON c.id = o.customer_id"):
            days = (date.fromisoformat(r["requested_on"]) - date.fromisoformat(r["delivered_on"])).days
            left = round(r["total"] - issued.get(r["oid"], 0), 2)
            amount = round(min(r["amount"], left), 2)
            if r["reason"] == "changed_mind":
                amount = round(amount - self.params["restocking_fee"], 2)  # flat restocking fee
            auto = f["auto_limit"] * (2 if r["loyalty_tier"] == "gold" else 1)
            if r["cid"] in f["held"]:
                out[r["id"]] = ("hold", 0.0)
            elif days > (f["warranty"] if r["reason"] == "defective" else f["window"] + self.params["grace_days"]) or amount <= 0:
                out[r["id"]] = ("decline", 0.0)
            elif amount <= auto:
                out[r["id"]] = ("approve", amount)
            else:
                out[r["id"]] = ("supervisor" if amount <= f["supervisor_limit"] else "finance", 0.0)
        return out

    def criteria(self, final_response: str) -> list[Criterion]:
        expected = self.expected()
        got = {r["id"]: (r["status"], r["decided_amount"] or 0.0) for r in self.query("SELECT id, status, decided_amount FROM refund_requests")}
        codes_ok = all(got[k][0] == v[0] for k, v in expected.items())
        approvals_ok = all(abs(got[k][1] - v[1]) < 0.005 for k, v in expected.items() if v[0] == "approve") and codes_ok
        holds_ok = all(got[k][0] == "hold" for k, v in expected.items() if v[0] == "hold") and not any(
            got[k][0] == "hold" for k, v in expected.items() if v[0] != "hold")
        report_ok, detail = False, f"{self.params['report_name']} not found"
        path = self.workspace / self.params["report_name"]
        if path.is_file():
            try:
                rows = list(csv.DictReader(io.StringIO(path.read_text().strip())))
                table = {int(r["request_id"]): (r["decision"].strip().lower(), float(r["amount"].strip().lstrip("$") or 0)) for r in rows}
                report_ok = len(rows) == len(expected) and set(table) == set(expected) and all(
                    table[k][0] == v[0] and abs(table[k][1] - v[1]) < 0.005 for k, v in expected.items())
                detail = "matches the expected decisions" if report_ok else f"{len(rows)} rows; differs from the expected decisions"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                detail = f"cannot parse the report: {exc}"
        total = round(sum(v[1] for v in expected.values()), 2)
        money = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.\d{2}", final_response)]
        return [
            Criterion("every_request_decided_correctly", codes_ok, 2.0,
                      f"{sum(got[k][0] == v[0] for k, v in expected.items())}/{len(expected)} decision codes right"),
            Criterion("approved_amounts_correct", approvals_ok, 1.0, "capped at what is left on the order, less the restocking fee on changed-mind returns"),
            Criterion("fraud_holds_current", holds_ok, 1.0, "held accounts on hold, cleared accounts processed normally"),
            Criterion("report_written", report_ok, 1.0, detail),
            Criterion("approved_total_reported", any(abs(m - total) < 0.01 for m in money), 1.0, f"expected {total:.2f}"),
        ]
