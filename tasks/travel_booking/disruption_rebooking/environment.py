import datetime as dt

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class DisruptionEnv(WorkspaceEnvironment):
    @tool
    def list_departures(self, airport: str, date: str, page: int = 1) -> dict:
        """List scheduled departures from an airport on one day, by departure time; 20 per page. Each departure has
        id, flight_no, origin, destination, depart and arrive (YYYY-MM-DD HH:MM) and seats_left (free seats).

        Args:
            airport: Three-letter airport code, e.g. "AMS".
            date: The day, YYYY-MM-DD.
        """
        try:
            day = dt.date.fromisoformat(date.strip()).isoformat()
        except ValueError:
            raise ToolError(f"date must look like 2026-12-09, got {date!r}") from None
        return self.query_page("SELECT id, flight_no, origin, destination, depart, arrive, seats_left FROM flights "
                               "WHERE origin = ? AND substr(depart, 1, 10) = ? ORDER BY depart, id", (airport.strip().upper(), day), page)

    @tool
    def list_flight_bookings(self, flight_id: int, page: int = 1) -> dict:
        """List our customers' bookings on one flight, 20 per page: id, booking_ref, passenger_id, flight_id,
        booked_on (the booking date) and status.

        Args:
            flight_id: The flight's id.
        """
        self.require_row("flights", flight_id)
        return self.query_page("SELECT id, booking_ref, passenger_id, flight_id, booked_on, status FROM bookings "
                               "WHERE flight_id = ? ORDER BY id", (flight_id,), page)

    @tool
    def get_passenger(self, passenger_id: int) -> dict:
        """Get a passenger's name, loyalty tier and e-mail.

        Args:
            passenger_id: The passenger's id.
        """
        return self.require_row("passengers", passenger_id)

    def _confirmed(self, booking_id: int) -> dict:
        rows = self.query("SELECT * FROM bookings WHERE id = ?", (booking_id,))
        if not rows or rows[0]["status"] != "confirmed":
            raise ToolError(f"booking {booking_id} does not exist or is not confirmed")
        return rows[0]

    @tool
    def rebook(self, booking_id: int, flight_id: int) -> dict:
        """Move a confirmed booking to another flight; takes a seat and returns the new booking: new_booking_id,
        booking_ref and flight_no.

        Args:
            booking_id: The booking to move.
            flight_id: The flight to move it to.
        """
        old = self._confirmed(booking_id)
        f = self.require_row("flights", flight_id)
        if f["seats_left"] < 1:
            raise ToolError(f"flight {f['flight_no']} has no free seats")
        ref = old["booking_ref"] + "-R"
        cur = self.db.execute("INSERT INTO bookings (booking_ref, passenger_id, flight_id, booked_on, status, replaces) "
                              "VALUES (?,?,?, '2026-11-30', 'confirmed', ?)", (ref, old["passenger_id"], flight_id, booking_id))
        self.db.execute("UPDATE bookings SET status = 'rebooked' WHERE id = ?", (booking_id,))
        self.db.execute("UPDATE flights SET seats_left = seats_left - 1 WHERE id = ?", (flight_id,))
        return {"new_booking_id": cur.lastrowid, "booking_ref": ref, "flight_no": f["flight_no"]}

    @tool
    def refund_booking(self, booking_id: int) -> dict:
        """Cancel a confirmed booking and refund it in full.

        Args:
            booking_id: The booking to refund.
        """
        self._confirmed(booking_id)
        self.db.execute("UPDATE bookings SET status = 'refunded' WHERE id = ?", (booking_id,))
        return {"booking_id": booking_id, "status": "refunded"}

    @tool
    def issue_voucher(self, booking_id: int, amount: int) -> dict:
        """Issue a delay voucher (EUR) on a booking.

        Args:
            booking_id: The booking the voucher belongs to.
            amount: Voucher value in whole euros.
        """
        self._confirmed(booking_id)
        if amount <= 0:
            raise ToolError("amount must be positive")
        cur = self.db.execute("INSERT INTO vouchers (booking_id, amount) VALUES (?,?)", (booking_id, amount))
        return {"voucher_id": cur.lastrowid, "booking_id": booking_id, "amount": amount}

    def criteria(self, final_response: str) -> list[Criterion]:
        facts = self.facts
        moves = "bookings b JOIN bookings o ON o.id = b.replaces JOIN flights f ON f.id = b.flight_id"
        moved = self.tables_match(moves, key="o.booking_ref")
        refunded = self.tables_match("bookings", key="booking_ref", where="status = 'refunded'")
        state = {r["booking_ref"]: r for r in self.query("SELECT booking_ref, status, flight_id, replaces FROM bookings")}
        acted = any(r["replaces"] or r["status"] == "refunded" for r in state.values())
        on_closed = [ref for ref, r in state.items() if r["replaces"] and r["flight_id"] in facts["closed_flights"]]
        kept = state[facts["already_cancelled"]]["status"] == "cancelled" and \
            state[facts["refund_wish"]]["status"] == "refunded"
        rebooked = self.reference.query("SELECT count(*) AS n FROM bookings WHERE replaces IS NOT NULL")[0]["n"]
        vouchers = self.reference.query("SELECT coalesce(sum(amount), 0) AS t FROM vouchers")[0]["t"]
        return [
            Criterion("no_rebooking_onto_cancelled_departures", acted and not on_closed, 1.0,
                      "new flights must actually operate"),
            Criterion("refund_wish_and_cancelled_booking", acted and kept, 1.0,
                      "the customer who asked for a refund gets one; a cancelled booking stays as it is"),
            Criterion("every_affected_booking_handled", moved.passed and refunded.passed, 2.0,
                      f"rebooked: {moved.detail}; refunded: {refunded.detail}"),
            self.tables_match(moves, key="o.booking_ref", columns="f.flight_no", weight=2.0,
                              criterion="priority_and_earliest_flight"),
            self.tables_match("vouchers v JOIN bookings b ON b.id = v.booking_id LEFT JOIN bookings o ON o.id = b.replaces",
                              key="coalesce(o.booking_ref, b.booking_ref)", columns="v.amount",
                              criterion="vouchers_on_new_bookings"),
            self.file_matches(self.params["report_name"], key="booking_ref", criterion="log_written",
                              columns=["action", "new_flight", "delay_minutes", "voucher"]),
            self.answer_states([rebooked, vouchers], criterion="counts_reported"),
        ]
