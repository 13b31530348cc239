"""Tools and verifier for accounts_payable/discount_payment_run."""
import csv
import datetime as dt
import io
import json
import re
from typing import Literal

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


def roll_weekend(day: dt.date) -> dt.date:
    """Saturday and Sunday deadlines move to the following Monday."""
    return day + dt.timedelta(days=(7 - day.weekday()) % 7) if day.weekday() >= 5 else day


class PaymentRunEnv(WorkspaceEnvironment):
    @tool
    def list_vendors(self, page: int = 1) -> dict:
        """List suppliers with the payment terms on file, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, name, terms FROM vendors ORDER BY id", page=page)

    @tool
    def list_invoices(self, page: int = 1, status: Literal["approved", "scheduled", "paid"] = "approved") -> dict:
        """List supplier invoices by status (approved = waiting for payment; also scheduled or paid), 20 per page.

        Args:
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def expected(self, facts: dict) -> dict[int, float]:
        """invoice id -> discount to take, for the invoices that belong in this run."""
        run, nxt = dt.date.fromisoformat(facts["run"]), dt.date.fromisoformat(facts["next"])
        changed, change_from = facts["changed"]
        terms = {v["id"]: v["terms"] for v in self.query("SELECT id, terms FROM vendors")}
        out = {}
        for inv in self.query("SELECT * FROM invoices WHERE status != 'paid'"):
            if inv["vendor_id"] == facts["blocked"] or inv["amount"] > self.params["approval_limit"]:
                continue
            text = "3/20 net 45" if inv["vendor_id"] == changed and inv["invoice_date"] >= change_from else terms[inv["vendor_id"]]
            m = re.fullmatch(r"(?:(\d+)/(\d+) )?net (\d+)", text)
            dated = dt.date.fromisoformat(inv["invoice_date"])
            due = roll_weekend(dated + dt.timedelta(days=int(m.group(3))))
            live = m.group(1) is not None and run <= roll_weekend(dated + dt.timedelta(days=int(m.group(2))))
            last_chance = live and roll_weekend(dated + dt.timedelta(days=int(m.group(2)))) < nxt
            if last_chance or due < nxt:
                out[inv["id"]] = round(inv["amount"] * int(m.group(1)) / 100, 2) if live else 0.0
        return out

    def criteria(self, final_response: str) -> list[Criterion]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        want = self.expected(facts)
        batches = self.query("SELECT * FROM payment_batches WHERE status = 'released'")
        batch_ok = len(batches) == 1 and batches[0]["payment_date"] == facts["run"]
        paid = {p["invoice_id"]: p for p in self.query(
            "SELECT p.* FROM payments p JOIN payment_batches b ON b.id = p.batch_id WHERE b.status = 'released'")}
        set_ok = set(paid) == set(want)
        discounts_ok = all(i in paid and abs(paid[i]["discount"] - d) < 0.011 for i, d in want.items())
        blocked = {r["id"] for r in self.query("SELECT id FROM invoices WHERE vendor_id = ?", (facts["blocked"],))}
        numbers_by_id = {r["id"]: (r["invoice_no"], r["amount"]) for r in self.query("SELECT id, invoice_no, amount FROM invoices")}

        report_name = self.params["report_name"]
        report_ok, detail = False, f"{report_name} not found"
        path = self.workspace / report_name
        if path.is_file():
            try:
                rows = list(csv.DictReader(io.StringIO(path.read_text().strip())))
                got = {r["invoice_no"].strip(): (float(r["amount_paid"]), float(r["discount"])) for r in rows}
                expect = {numbers_by_id[i][0]: (round(numbers_by_id[i][1] - d, 2), d) for i, d in want.items()}
                report_ok = len(rows) == len(expect) and got.keys() == expect.keys() and all(
                    abs(got[k][0] - v[0]) < 0.011 and abs(got[k][1] - v[1]) < 0.011 for k, v in expect.items())
                detail = "matches the expected run" if report_ok else f"{len(rows)} rows, {len(expect)} payments expected"
            except (KeyError, ValueError, AttributeError, TypeError) as exc:
                detail = f"cannot parse the file: {exc}"
        saved = round(sum(want.values()), 2)
        numbers = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.\d+", final_response)]
        return [
            Criterion("one_released_batch_on_the_run_date", batch_ok, 1.0, f"released batch dated {facts['run']}"),
            Criterion("exactly_the_invoices_due_in_this_run", set_ok, 2.0,
                      f"{len(paid)} paid, {len(want)} expected (none above {self.params['approval_limit']})"),
            Criterion("discounts_taken_correctly", discounts_ok, 1.0, "live discounts taken, weekend roll, new terms"),
            Criterion("payment_stop_respected", not (blocked & set(paid)), 1.0, "no payment to the disputed supplier"),
            Criterion("run_file_written", report_ok, 1.0, detail),
            Criterion("savings_reported", any(abs(n - saved) < 0.011 for n in numbers), 1.0, f"expected {saved:.2f}"),
        ]
