"""Tools and verifier for accounts_payable/duplicate_invoices."""
import datetime as dt
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


def normalise(number: str) -> str:
    """Invoice number without case, spaces, hyphens, slashes or leading zeros of its digit runs."""
    return re.sub(r"(?<!\d)0+(?=\d)", "", re.sub(r"[\s\-/]", "", number.upper()))


class DuplicateEnv(WorkspaceEnvironment):
    @tool
    def list_vendors(self, page: int = 1) -> dict:
        """List suppliers (id and name), 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, name FROM vendors ORDER BY id", page=page)

    @tool
    def list_invoices(self, page: int = 1, vendor_id: int = 0) -> dict:
        """List ledger invoices (id, supplier, number, date, amount, status, description), 50 per page, by id.

        Args:
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def expected(self) -> dict[int, tuple[int, str]]:
        """duplicate id -> (original id, rule)."""
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        seen: dict[int, list[dict]] = {}
        out = {}
        for inv in self.query("SELECT id, vendor_id, invoice_no, invoice_date, amount FROM invoices ORDER BY id"):
            earlier = seen.setdefault(inv["vendor_id"], [])
            day = dt.date.fromisoformat(inv["invoice_date"])
            for other in earlier:
                if normalise(other["invoice_no"]) == normalise(inv["invoice_no"]):
                    out[inv["id"]] = (other["id"], "number")
                    break
                close = abs((dt.date.fromisoformat(other["invoice_date"]) - day).days) <= self.params["window_days"]
                if inv["vendor_id"] != facts["weekly"] and close and abs(other["amount"] - inv["amount"]) < 0.005:
                    out[inv["id"]] = (other["id"], "amount_date")
                    break
            earlier.append(inv)
        return out

    def criteria(self, final_response: str) -> list[Criterion]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        want = self.expected()
        ledger = {r["id"]: r for r in self.query("SELECT * FROM invoices")}
        # Voiding changes the status; a voided invoice was unpaid before, anything on a case was paid.
        recovered = {r["invoice_id"]: r["vendor_id"] for r in self.query(
            "SELECT i.invoice_id, c.vendor_id FROM recovery_items i JOIN recovery_cases c ON c.id = i.case_id")}
        voided = {i: r["duplicate_of"] for i, r in ledger.items() if r["status"] == "void"}
        all_paid_dupes = {i for i in want if ledger[i]["status"] == "paid"}
        unpaid_dupes = set(want) - all_paid_dupes
        paid_dupes = {i for i in all_paid_dupes if ledger[i]["amount"] >= self.params["min_recovery"]}  # worth chasing
        cases = self.query("SELECT c.vendor_id, COUNT(DISTINCT c.id) AS n FROM recovery_cases c JOIN recovery_items i "
                           "ON i.case_id = c.id GROUP BY c.vendor_id")
        weekly_ids = {i for i, r in ledger.items() if r["vendor_id"] == facts["weekly"]}
        # Re-keyed numbers that need an action (paid ones below the minimum are left alone, but listed in the file).
        number_dupes = {i for i, (_, rule) in want.items() if rule == "number"} - (all_paid_dupes - paid_dupes)

        report_name = self.params["report_name"]
        report_ok, detail = False, f"{report_name} not found"
        path = self.workspace / report_name
        if path.is_file():
            try:
                data = json.loads(path.read_text())
                got = {int(d["duplicate"]): (int(d["original"]), str(d["rule"]).strip()) for d in data}
                report_ok = got == want and len(data) == len(want)
                detail = "lists exactly the duplicate pairs" if report_ok else f"{len(data)} entries, {len(want)} pairs expected"
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                detail = f"cannot parse the file: {exc}"
        total = round(sum(ledger[i]["amount"] for i in paid_dupes), 2)
        numbers = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.\d+", final_response)]
        return [
            Criterion("unpaid_duplicates_voided", voided == {i: want[i][0] for i in unpaid_dupes}, 2.0,
                      f"{len(voided)} voided, {len(unpaid_dupes)} expected, each against its original"),
            Criterion("paid_duplicates_on_recovery_cases", set(recovered) == paid_dupes, 2.0,
                      f"{len(recovered)} on cases, {len(paid_dupes)} expected (paid duplicates of at least {self.params['min_recovery']})"),
            Criterion("one_case_per_supplier", all(c["n"] == 1 for c in cases) and bool(cases) == bool(paid_dupes), 1.0,
                      "a single recovery case per supplier"),
            Criterion("weekly_supplier_not_flagged_by_amount", not ((set(voided) | set(recovered)) & (weekly_ids - set(want))), 1.0,
                      "the weekly biller's regular invoices are not duplicates"),
            Criterion("rekeyed_numbers_caught", number_dupes <= set(voided) | set(recovered), 1.0,
                      "numbers compared without case, separators or leading zeros"),
            Criterion("duplicates_file_written", report_ok, 1.0, detail),
            Criterion("recovery_total_reported", any(abs(n - total) < 0.011 for n in numbers), 1.0, f"expected {total:.2f}"),
        ]
