from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class VendorBookingEnv(WorkspaceEnvironment):
    @tool
    def list_events(self, page: int = 1) -> dict:
        """List the agency's events, 20 per page."""
        return self.query_page("SELECT id, name, event_date, city, guests FROM events ORDER BY id", page=page)

    @tool
    def list_vendors(self, category: str = "", page: int = 1) -> dict:
        """List vendors with their rating and insurance expiry date, 20 per page.

        Args:
            category: Only vendors of this service category (e.g. "catering") when non-empty.
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

    def criteria(self, final_response: str) -> list[Criterion]:
        booked = "bookings b JOIN vendors v ON v.id = b.vendor_id"
        paid = ("(SELECT b.quote_id, coalesce(sum(p.amount), 0) AS paid FROM bookings b LEFT JOIN payments p "
                "ON p.booking_id = b.id WHERE b.status = 'confirmed' GROUP BY b.id)")
        today = self.reference.query("SELECT coalesce(sum(amount), 0) AS t FROM payments")[0]["t"]
        return [
            self.tables_match(booked, key="v.category", where="b.status = 'confirmed'",
                              criterion="one_booking_per_requested_service"),
            self.tables_match("bookings", key="quote_id", where="status = 'confirmed'", weight=2.0,
                              criterion="right_vendors_booked"),
            self.tables_match(paid, key="quote_id", columns="paid", tolerance=0.005,
                              criterion="payments_follow_policy"),
            self.file_matches(self.params["report_name"], as_="md", key="category", tolerance=0.005),
            self.answer_states(round(today, 2), criterion="total_paid_today_reported"),
        ]
