"""Tools and verifier for event_planning/vendor_booking."""
import json
import re
from datetime import date, timedelta

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class VendorBookingEnv(WorkspaceEnvironment):
    @tool
    def list_events(self, page: int = 1) -> dict:
        """List the agency's events, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, name, event_date, city, guests FROM events ORDER BY id", page=page)

    @tool
    def list_vendors(self, category: str = "", page: int = 1) -> dict:
        """List vendors with their rating and insurance expiry date, 20 per page.

        Args:
            category: Only vendors of this service category (e.g. "catering") when non-empty.
            page: 1-based page number.
        """
        sql = "SELECT id, name, category, city, rating, insurance_expiry, contact_email FROM vendors"
        if category:
            return self.query_page(sql + " WHERE category = ? ORDER BY id", (category,), page)
        return self.query_page(sql + " ORDER BY id", page=page)

    @tool
    def list_quotes(self, event_id: int, page: int = 1) -> dict:
        """List the quotes vendors sent for one event, 20 per page.

        Args:
            event_id: The event's numeric id.
            page: 1-based page number.
        """
        self.require_row("events", event_id, "list_events shows the ids")
        return self.query_page("SELECT id, vendor_id, amount, valid_until FROM quotes WHERE event_id = ? ORDER BY id",
                               (event_id,), page)

    @tool
    def create_booking(self, quote_id: int) -> dict:
        """Accept a vendor's quote, creating a booking for its event; returns the booking id.

        Args:
            quote_id: The id of the quote to accept.
        """
        q = self.require_row("quotes", quote_id, "use list_quotes")
        if self.query("SELECT id FROM bookings WHERE quote_id = ? AND status = 'confirmed'", (quote_id,)):
            raise ToolError(f"quote {quote_id} is already booked")
        cur = self.db.execute("INSERT INTO bookings (event_id, quote_id, vendor_id, amount, status) VALUES (?,?,?,?, 'confirmed')",
                              (q["event_id"], quote_id, q["vendor_id"], q["amount"]))
        return {"booking_id": cur.lastrowid, "vendor_id": q["vendor_id"], "amount": q["amount"], "status": "confirmed"}

    @tool
    def cancel_booking(self, booking_id: int) -> dict:
        """Cancel a confirmed booking (its payments are voided with it).

        Args:
            booking_id: The id returned by create_booking.
        """
        if not self.query("SELECT id FROM bookings WHERE id = ? AND status = 'confirmed'", (booking_id,)):
            raise ToolError(f"no confirmed booking with id {booking_id}")
        self.db.execute("UPDATE bookings SET status = 'cancelled' WHERE id = ?", (booking_id,))
        self.db.execute("DELETE FROM payments WHERE booking_id = ?", (booking_id,))
        return {"booking_id": booking_id, "status": "cancelled"}

    @tool
    def record_payment(self, booking_id: int, amount: float, note: str = "") -> dict:
        """Pay a vendor against a booking; returns the payment id.

        Args:
            booking_id: The id returned by create_booking.
            amount: Amount in euros, greater than zero and at most the booking's outstanding balance.
            note: Optional remark, e.g. "deposit".
        """
        rows = self.query("SELECT amount FROM bookings WHERE id = ? AND status = 'confirmed'", (booking_id,))
        if not rows:
            raise ToolError(f"no confirmed booking with id {booking_id}")
        paid = self.query("SELECT coalesce(sum(amount), 0) AS s FROM payments WHERE booking_id = ?", (booking_id,))[0]["s"]
        if amount <= 0 or amount > rows[0]["amount"] - paid + 0.005:
            raise ToolError(f"amount must be positive and at most the outstanding {rows[0]['amount'] - paid:.2f}")
        cur = self.db.execute("INSERT INTO payments (booking_id, amount, note) VALUES (?,?,?)", (booking_id, round(amount, 2), note))
        return {"payment_id": cur.lastrowid, "booking_id": booking_id, "amount": round(amount, 2)}

    # --- verifier --------------------------------------------------------------------------------
    def expected(self) -> dict[str, dict]:
        f = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        day = self.query("SELECT event_date FROM events WHERE id = ?", (f["event_id"],))[0]["event_date"]
        day = (date.fromisoformat(day) + timedelta(days=self.params["insurance_margin_days"])).isoformat()
        rows = self.query("SELECT q.id, q.amount, q.valid_until, v.id AS vendor_id, v.name, v.category, v.rating, "
                          "v.insurance_expiry FROM quotes q JOIN vendors v ON v.id = q.vendor_id WHERE q.event_id = ?",
                          (f["event_id"],))
        out = {}
        for category, cap in f["caps"].items():
            fits = [r for r in rows if r["category"] == category and r["amount"] <= cap and r["valid_until"] >= f["today"]
                    and r["insurance_expiry"] >= day and r["vendor_id"] != f["blacklisted_vendor"]]
            best = min(fits, key=lambda r: (-r["rating"], r["amount"]))
            due = round(best["amount"] * f["deposit_pct"] / 100, 2) if best["amount"] > f["threshold"] else best["amount"]
            out[category] = {"quote_id": best["id"], "vendor": best["name"], "amount": best["amount"], "due": due}
        return out

    def report_rows(self) -> tuple[dict | None, str]:
        path = self.workspace / self.params["report_name"]
        if not path.is_file():
            return None, f"{self.params['report_name']} not found"
        got = {}
        for line in path.read_text().splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) != 4 or cells[0].lower() == "category" or set(cells[0]) <= set("-: "):
                continue
            try:
                got[cells[0].lower()] = (cells[1], float(re.sub(r"[^\d.]", "", cells[2])), float(re.sub(r"[^\d.]", "", cells[3])))
            except ValueError:
                return None, f"cannot read amounts in row {line!r}"
        return got, f"{len(got)} rows"

    def criteria(self, final_response: str) -> list[Criterion]:
        expected = self.expected()
        live = self.query("SELECT id, quote_id FROM bookings WHERE status = 'confirmed'")
        booked = {b["quote_id"] for b in live}
        want_quotes = {e["quote_id"] for e in expected.values()}
        payments = {}
        for p in self.query("SELECT p.booking_id, p.amount, b.quote_id FROM payments p JOIN bookings b ON b.id = p.booking_id "
                            "WHERE b.status = 'confirmed'"):
            payments[p["quote_id"]] = round(payments.get(p["quote_id"], 0) + p["amount"], 2)
        paid_ok = booked == want_quotes and all(abs(payments.get(e["quote_id"], 0) - e["due"]) < 0.005 for e in expected.values())
        got, detail = self.report_rows()
        report_ok = got is not None and set(got) == set(expected) and all(
            got[c][0].lower() == e["vendor"].lower() and abs(got[c][1] - e["amount"]) < 0.005 and abs(got[c][2] - e["due"]) < 0.005
            for c, e in expected.items())
        total = round(sum(e["due"] for e in expected.values()), 2)
        numbers = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.\d{2}", final_response)]
        return [
            Criterion("one_booking_per_requested_service", len(live) == len(expected) and len(booked) == len(live), 1.0,
                      f"{len(live)} confirmed bookings, {len(expected)} expected"),
            Criterion("right_vendors_booked", booked == want_quotes, 2.0,
                      f"best rating within the cap, after every exclusion (insurance {self.params['insurance_margin_days']} days past the event); nothing for {self.params['skipped_service']}"),
            Criterion("payments_follow_policy", paid_ok, 1.0, "deposit or full payment per the payment policy"),
            Criterion("report_written", report_ok, 1.0, detail if not report_ok else "matches the bookings"),
            Criterion("total_paid_today_reported", any(abs(n - total) < 0.01 for n in numbers), 1.0, f"expected {total:.2f}"),
        ]
