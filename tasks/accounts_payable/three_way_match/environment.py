"""Tools and verifier for accounts_payable/three_way_match."""
import csv
import datetime as dt
import io
import json
import re

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
            page: 1-based page number.
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
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def cutoff(self) -> str:
        """The batch's last invoice date, ISO."""
        return dt.datetime.strptime(self.params["cutoff_date"], "%d %B %Y").date().isoformat()

    def expected(self) -> dict[int, tuple[str, str | None, float]]:
        """invoice id -> (invoice_no, expected hold reason or None for approval, amount), for the batch's invoices."""
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        out = {}
        for inv in self.query("SELECT * FROM invoices WHERE invoice_date <= ?", (self.cutoff(),)):
            lines = self.query("SELECT line_no, qty, unit_price FROM invoice_lines WHERE invoice_id = ?", (inv["id"],))
            amount = round(sum(l["qty"] * l["unit_price"] for l in lines), 2)
            po = self.query("SELECT id, vendor_id FROM purchase_orders WHERE po_number = ?", (inv["po_number"],))
            reason = None
            if inv["vendor_id"] == facts["held_vendor"]:
                reason = "vendor_hold"
            elif not po or po[0]["vendor_id"] != inv["vendor_id"]:
                reason = "no_matching_po"
            else:
                pct = facts["special_pct"] if inv["vendor_id"] == facts["special_vendor"] else facts["general_pct"]
                order = {l["line_no"]: l for l in self.query(
                    "SELECT l.line_no, l.unit_price, COALESCE(SUM(r.qty_received), 0) AS received FROM po_lines l "
                    "LEFT JOIN receipts r ON r.po_line_id = l.id WHERE l.po_id = ? GROUP BY l.id", (po[0]["id"],))}
                if any(l["qty"] > order[l["line_no"]]["received"] for l in lines):
                    reason = "quantity_variance"
                elif any(l["unit_price"] > order[l["line_no"]]["unit_price"] * (1 + pct / 100) + 1e-9 for l in lines):
                    reason = "price_variance"
            out[inv["id"]] = (inv["invoice_no"], reason, amount)
        return out

    def criteria(self, final_response: str) -> list[Criterion]:
        expected = self.expected()
        actual = {r["id"]: (r["status"], r["hold_reason"]) for r in self.query("SELECT id, status, hold_reason FROM invoices")}
        decided = all((s != "pending") == (i in expected) for i, (s, _) in actual.items())
        approvals_ok = all((actual[i][0] == "approved") == (e[1] is None) for i, e in expected.items())
        reasons_ok = all(actual[i] == ("on_hold", e[1]) for i, e in expected.items() if e[1] is not None)
        price_ok = all((actual[i][1] == "price_variance") == (e[1] == "price_variance") for i, e in expected.items())

        holds = {e[0]: e[1] for e in expected.values() if e[1] is not None}
        report_name = self.params["report_name"]
        report_ok, detail = False, f"{report_name} not found"
        path = self.workspace / report_name
        if path.is_file():
            try:
                rows = list(csv.DictReader(io.StringIO(path.read_text().strip())))
                got = {r["invoice_no"].strip(): r["reason"].strip() for r in rows}
                report_ok = got == holds and len(rows) == len(holds)
                detail = "lists exactly the held invoices" if report_ok else f"{len(rows)} rows, {len(holds)} holds expected"
            except (KeyError, AttributeError) as exc:
                detail = f"cannot parse the file: {exc}"
        total = round(sum(e[2] for e in expected.values() if e[1] is None), 2)
        numbers = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.\d+", final_response)]
        return [
            Criterion("every_invoice_in_the_batch_decided", decided, 1.0,
                      f"every invoice dated up to {self.cutoff()} decided, later ones left pending"),
            Criterion("approvals_correct", approvals_ok, 2.0, "approved exactly the invoices that match"),
            Criterion("hold_reasons_correct", reasons_ok, 1.0, "reason by the memo's precedence"),
            Criterion("price_tolerances_applied", price_ok, 1.0, "general tolerance, and the framework vendor's wider one"),
            Criterion("exceptions_file_written", report_ok, 1.0, detail),
            Criterion("approved_total_reported", any(abs(n - total) < 0.015 for n in numbers), 1.0, f"expected {total:.2f}"),
        ]
