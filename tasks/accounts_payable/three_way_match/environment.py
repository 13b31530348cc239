from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

REASONS = ("vendor_hold", "no_matching_po", "quantity_variance", "price_variance")


class MatchingEnv(WorkspaceEnvironment):
    def _invoice_header(self, invoice_id: int) -> dict:
        rows = self.query(
            "SELECT i.id AS invoice_id, i.invoice_no, i.vendor_id, v.name AS vendor, i.po_number, i.invoice_date, i.status, "
            "i.hold_reason, ROUND(SUM(l.qty * l.unit_price), 2) AS amount FROM invoices i JOIN vendors v ON v.id = i.vendor_id "
            "JOIN invoice_lines l ON l.invoice_id = i.id WHERE i.id = ? GROUP BY i.id", (invoice_id,))
        if not rows:
            raise ToolError(f"no invoice with id {invoice_id}; list_invoices shows the ids")
        return rows[0]

    @tool
    def list_invoices(self, page: int = 1, status: str = "") -> dict:
        """List supplier invoices with vendor, PO reference and amount, 20 per page.

        Args:
            status: Only invoices with this status ("pending", "approved" or "on_hold") when non-empty.
        """
        result = self.query_page("SELECT id FROM invoices" + (" WHERE status = ?" if status else "") + " ORDER BY id",
                                 (status,) if status else (), page)
        result["items"] = [self._invoice_header(r["id"]) for r in result["items"]]
        return result

    @tool
    def get_invoice(self, invoice_id: int) -> dict:
        """Get one invoice with its lines (line number, quantity billed, unit price).

        Args:
            invoice_id: The invoice's numeric id.
        """
        invoice = self._invoice_header(invoice_id)
        invoice["lines"] = self.query("SELECT line_no, qty, unit_price FROM invoice_lines WHERE invoice_id = ? ORDER BY line_no",
                                      (invoice_id,))
        return invoice

    @tool
    def get_purchase_order(self, po_number: str) -> dict:
        """Get a purchase order with its vendor and lines (line number, item, quantity ordered, unit price).

        Args:
            po_number: The order number, e.g. "PO-26003".
        """
        rows = self.query("SELECT p.id, p.po_number, p.vendor_id, v.name AS vendor, p.order_date FROM purchase_orders p "
                          "JOIN vendors v ON v.id = p.vendor_id WHERE p.po_number = ?", (po_number.strip(),))
        if not rows:
            raise ToolError(f"no purchase order {po_number!r}")
        order = rows[0]
        order["lines"] = self.query("SELECT line_no, item, qty_ordered, unit_price FROM po_lines WHERE po_id = ? ORDER BY line_no",
                                    (order.pop("id"),))
        return order

    @tool
    def list_receipts(self, po_number: str, page: int = 1) -> dict:
        """List goods receipts booked against a purchase order (order line number, quantity, date), 20 per page.

        Args:
            po_number: The order number, e.g. "PO-26003".
        """
        if not self.query("SELECT id FROM purchase_orders WHERE po_number = ?", (po_number.strip(),)):
            raise ToolError(f"no purchase order {po_number!r}")
        return self.query_page("SELECT l.line_no, r.qty_received, r.received_date FROM receipts r JOIN po_lines l ON l.id = r.po_line_id "
                               "JOIN purchase_orders p ON p.id = l.po_id WHERE p.po_number = ? ORDER BY r.id", (po_number.strip(),), page)

    def _pending(self, invoice_id: int) -> None:
        status = self._invoice_header(invoice_id)["status"]
        if status != "pending":
            raise ToolError(f"invoice {invoice_id} is already {status}; only pending invoices can be decided")

    @tool
    def approve_invoice(self, invoice_id: int) -> dict:
        """Approve a pending invoice for payment.

        Args:
            invoice_id: The invoice's numeric id.
        """
        self._pending(invoice_id)
        self.db.execute("UPDATE invoices SET status = 'approved' WHERE id = ?", (invoice_id,))
        return {"invoice_id": invoice_id, "status": "approved"}

    @tool
    def hold_invoice(self, invoice_id: int, reason: str) -> dict:
        """Put a pending invoice on hold with a reason code.

        Args:
            invoice_id: The invoice's numeric id.
            reason: One of "vendor_hold", "no_matching_po", "quantity_variance", "price_variance".
        """
        if reason not in REASONS:
            raise ToolError(f"reason must be one of {', '.join(REASONS)}, got {reason!r}")
        self._pending(invoice_id)
        self.db.execute("UPDATE invoices SET status = 'on_hold', hold_reason = ? WHERE id = ?", (reason, invoice_id))
        return {"invoice_id": invoice_id, "status": "on_hold", "reason": reason}

    def criteria(self, final_response: str) -> list[Criterion]:
        approved = self.reference.query("SELECT round(sum(l.qty * l.unit_price), 2) AS t FROM invoices i "
                                        "JOIN invoice_lines l ON l.invoice_id = i.id WHERE i.status = 'approved'")
        return [
            self.tables_match("invoices", key="id", where="status != 'pending'",
                              criterion="every_invoice_in_the_batch_decided"),
            self.tables_match("invoices", key="id", where="status = 'approved'", weight=2.0,
                              criterion="approvals_correct"),
            self.tables_match("invoices", key="id", columns="hold_reason", where="status = 'on_hold'",
                              criterion="hold_reasons_correct"),
            self.tables_match("invoices", key="id", where="hold_reason = 'price_variance'",
                              criterion="price_tolerances_applied"),
            self.file_matches(self.params["report_name"], as_="csv", key="invoice_no",
                              criterion="exceptions_file_written"),
            self.answer_states(approved[0]["t"] or 0.0, tolerance=0.015, criterion="approved_total_reported"),
        ]
