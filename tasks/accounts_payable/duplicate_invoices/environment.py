import json

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class DuplicateEnv(WorkspaceEnvironment):
    @tool
    def list_vendors(self, page: int = 1) -> dict:
        """List suppliers (id and name), 20 per page."""
        return self.query_page("SELECT id, name FROM vendors ORDER BY id", page=page)

    @tool
    def list_invoices(self, page: int = 1, vendor_id: int = 0) -> dict:
        """List ledger invoices (id, supplier, number, date, amount, status, description), 50 per page, by id.

        Args:
            vendor_id: Only this supplier's invoices when non-zero.
        """
        sql = "SELECT id, vendor_id, invoice_no, invoice_date, amount, status, description FROM invoices"
        if vendor_id:
            return self.query_page(sql + " WHERE vendor_id = ? ORDER BY id", (vendor_id,), page, page_size=50)
        return self.query_page(sql + " ORDER BY id", page=page, page_size=50)

    def _invoice(self, invoice_id: int) -> dict:
        return self.require_row("invoices", invoice_id, "use list_invoices")

    @tool
    def void_invoice(self, invoice_id: int, duplicate_of: int) -> dict:
        """Void an unpaid invoice as a duplicate of another one.

        Args:
            invoice_id: The duplicate's id.
            duplicate_of: The original invoice's id.
        """
        invoice, original = self._invoice(invoice_id), self._invoice(duplicate_of)
        if invoice["status"] != "posted":
            raise ToolError(f"invoice {invoice_id} is {invoice['status']}; only unpaid (posted) invoices can be voided")
        if invoice_id == duplicate_of or original["vendor_id"] != invoice["vendor_id"]:
            raise ToolError("the original must be a different invoice from the same supplier")
        self.db.execute("UPDATE invoices SET status = 'void', duplicate_of = ? WHERE id = ?", (duplicate_of, invoice_id))
        return {"invoice_id": invoice_id, "status": "void", "duplicate_of": duplicate_of}

    @tool
    def open_recovery_case(self, vendor_id: int) -> dict:
        """Open a recovery case against a supplier for money paid twice; returns the case id.

        Args:
            vendor_id: The supplier's id.
        """
        self.require_row("vendors", vendor_id, "use list_vendors", what="supplier")
        cur = self.db.execute("INSERT INTO recovery_cases (vendor_id) VALUES (?)", (vendor_id,))
        return {"case_id": cur.lastrowid, "vendor_id": vendor_id}

    @tool
    def add_to_recovery_case(self, case_id: int, invoice_id: int) -> dict:
        """Add a paid duplicate invoice to its supplier's recovery case.

        Args:
            case_id: The id returned by open_recovery_case.
            invoice_id: The paid duplicate's id.
        """
        case = self.require_row("recovery_cases", case_id)
        invoice = self._invoice(invoice_id)
        if invoice["vendor_id"] != case["vendor_id"]:
            raise ToolError("the invoice belongs to another supplier than the case")
        if invoice["status"] != "paid":
            raise ToolError(f"invoice {invoice_id} is {invoice['status']}; only paid duplicates are recovered")
        if self.query("SELECT 1 FROM recovery_items WHERE invoice_id = ?", (invoice_id,)):
            raise ToolError(f"invoice {invoice_id} is already on a recovery case")
        self.db.execute("INSERT INTO recovery_items VALUES (?, ?)", (case_id, invoice_id))
        return {"case_id": case_id, "invoice_id": invoice_id}

    def criteria(self, final_response: str) -> list[Criterion]:
        report = self.params["report_name"]
        on_case = "recovery_items r JOIN recovery_cases c ON c.id = r.case_id"
        flagged = "invoices i LEFT JOIN recovery_items r ON r.invoice_id = i.id"
        flags = ["i.status", "r.case_id IS NOT NULL"]
        weekly = self.facts["weekly"]
        # The weekly biller's invoices flagged (voided or on a case) beyond the reference's re-keyed duplicate.
        weekly_flagged = f"SELECT i.id FROM {flagged} WHERE i.vendor_id = ? AND (i.status = 'void' OR r.case_id)"
        false_flags = {r["id"] for r in self.query(weekly_flagged, (weekly,))} - {
            r["id"] for r in self.reference.query(weekly_flagged, (weekly,))}
        rekeyed = [d["duplicate"] for d in json.loads(self.reference.read(report)) if d["rule"] == "number"]
        recovered = self.reference.query(f"SELECT sum(i.amount) AS t FROM {on_case} "
                                         "JOIN invoices i ON i.id = r.invoice_id")
        return [
            self.tables_match("invoices", key="id", columns="duplicate_of", where="status = 'void'", weight=2.0,
                              criterion="unpaid_duplicates_voided"),
            self.tables_match(on_case, key="r.invoice_id", columns="c.vendor_id", weight=2.0,
                              criterion="paid_duplicates_on_recovery_cases"),
            self.tables_match(f"(SELECT c.vendor_id, count(DISTINCT c.id) AS cases FROM {on_case} "
                              "GROUP BY c.vendor_id)", key="vendor_id", columns="cases",
                              criterion="one_case_per_supplier"),
            Criterion("weekly_supplier_not_flagged_by_amount", not false_flags, 1.0,
                      f"{len(false_flags)} of the weekly biller's regular invoices flagged as duplicates"),
            self.tables_match(flagged, key="i.id", columns=flags, where=f"i.id IN ({', '.join(map(str, rekeyed))})",
                              criterion="rekeyed_numbers_caught"),
            self.file_matches(report, as_="json", key="duplicate", criterion="duplicates_file_written"),
            self.answer_states(round(recovered[0]["t"] or 0.0, 2), criterion="recovery_total_reported"),
        ]
