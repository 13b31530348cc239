import datetime as dt
from typing import Literal

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class PaymentRunEnv(WorkspaceEnvironment):
    @tool
    def list_vendors(self, page: int = 1) -> dict:
        """List suppliers with the payment terms on file, 20 per page."""
        return self.query_page("SELECT id, name, terms FROM vendors ORDER BY id", page=page)

    @tool
    def list_invoices(self, page: int = 1, status: Literal["approved", "scheduled", "paid"] = "approved") -> dict:
        """List supplier invoices by status (approved = waiting for payment; also scheduled or paid), 20 per page.

        Args:
            status: "approved", "scheduled" or "paid".
        """
        return self.query_page("SELECT id, invoice_no, vendor_id, invoice_date, amount FROM invoices WHERE status = ? "
                               "ORDER BY id", (status,), page)

    @tool
    def create_payment_batch(self, payment_date: str) -> dict:
        """Open a payment batch that pays on the given date; returns its id.

        Args:
            payment_date: The payment date, ISO format (YYYY-MM-DD).
        """
        try:
            day = dt.date.fromisoformat(payment_date)
        except ValueError:
            raise ToolError(f"payment_date must be an ISO date, got {payment_date!r}") from None
        cur = self.db.execute("INSERT INTO payment_batches (payment_date, status) VALUES (?, 'open')", (day.isoformat(),))
        return {"batch_id": cur.lastrowid, "payment_date": day.isoformat(), "status": "open"}

    @tool
    def add_payment(self, batch_id: int, invoice_id: int, discount: float) -> dict:
        """Add an invoice to an open batch, paying its amount less the given discount; returns the payment.

        Args:
            batch_id: The id returned by create_payment_batch.
            invoice_id: The invoice's numeric id.
            discount: Early-payment discount taken, in currency (0 when none).
        """
        batch = self.query("SELECT status FROM payment_batches WHERE id = ?", (batch_id,))
        if not batch or batch[0]["status"] != "open":
            raise ToolError(f"no open payment batch with id {batch_id}")
        invoice = self.require_row("invoices", invoice_id, "use list_invoices")
        if invoice["status"] != "approved":
            raise ToolError(f"invoice {invoice_id} is {invoice['status']}, not waiting for payment")
        if not 0 <= discount < invoice["amount"]:
            raise ToolError("discount must be at least 0 and below the invoice amount")
        paid = round(invoice["amount"] - discount, 2)
        cur = self.db.execute("INSERT INTO payments (batch_id, invoice_id, discount, amount_paid) VALUES (?,?,?,?)",
                              (batch_id, invoice_id, round(discount, 2), paid))
        self.db.execute("UPDATE invoices SET status = 'scheduled' WHERE id = ?", (invoice_id,))
        return {"payment_id": cur.lastrowid, "invoice_id": invoice_id, "amount_paid": paid, "discount": round(discount, 2)}

    @tool
    def remove_payment(self, payment_id: int) -> dict:
        """Take a payment out of an open batch; the invoice waits for payment again.

        Args:
            payment_id: The id returned by add_payment.
        """
        rows = self.query("SELECT p.invoice_id, b.status FROM payments p JOIN payment_batches b ON b.id = p.batch_id WHERE p.id = ?",
                          (payment_id,))
        if not rows or rows[0]["status"] != "open":
            raise ToolError(f"no payment {payment_id} in an open batch")
        self.db.execute("DELETE FROM payments WHERE id = ?", (payment_id,))
        self.db.execute("UPDATE invoices SET status = 'approved' WHERE id = ?", (rows[0]["invoice_id"],))
        return {"payment_id": payment_id, "removed": True}

    @tool
    def release_payment_batch(self, batch_id: int) -> dict:
        """Release an open batch to the bank; returns its totals.

        Args:
            batch_id: The batch's id.
        """
        batch = self.query("SELECT status FROM payment_batches WHERE id = ?", (batch_id,))
        if not batch or batch[0]["status"] != "open":
            raise ToolError(f"no open payment batch with id {batch_id}")
        totals = self.query("SELECT COUNT(*) AS n, COALESCE(SUM(amount_paid), 0) AS paid, COALESCE(SUM(discount), 0) AS saved "
                            "FROM payments WHERE batch_id = ?", (batch_id,))[0]
        if not totals["n"]:
            raise ToolError("the batch is empty; add payments first")
        self.db.execute("UPDATE payment_batches SET status = 'released' WHERE id = ?", (batch_id,))
        return {"batch_id": batch_id, "status": "released", "payments": totals["n"],
                "total_paid": round(totals["paid"], 2), "total_discount": round(totals["saved"], 2)}

    def criteria(self, final_response: str) -> list[Criterion]:
        paid, released = "payments p JOIN payment_batches b ON b.id = p.batch_id", "b.status = 'released'"
        blocked = self.facts["blocked"]
        stopped = self.query(f"SELECT count(*) AS n FROM {paid} JOIN invoices i ON i.id = p.invoice_id "
                             f"WHERE {released} AND i.vendor_id = ?", (blocked,))[0]["n"]
        saved = self.reference.query(f"SELECT sum(p.discount) AS s FROM {paid} WHERE {released}")[0]["s"]
        return [
            self.tables_match("payment_batches", key="payment_date", where="status = 'released'",
                              criterion="one_released_batch_on_the_run_date"),
            self.tables_match(paid, key="p.invoice_id", where=released, weight=2.0,
                              criterion="exactly_the_invoices_due_in_this_run"),
            self.tables_match(paid, key="p.invoice_id", columns="p.discount", where=released, tolerance=0.011,
                              criterion="discounts_taken_correctly"),
            Criterion("payment_stop_respected", stopped == 0, 1.0, f"{stopped} payments to the disputed supplier"),
            self.file_matches(self.params["report_name"], as_="csv", key="invoice_no", criterion="run_file_written"),
            self.answer_states(round(saved or 0.0, 2), criterion="savings_reported"),
        ]
