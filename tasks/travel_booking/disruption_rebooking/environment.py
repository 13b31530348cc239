"""Tools and verifier for travel_booking/disruption_rebooking."""
import csv
import datetime as dt
import io
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class DisruptionEnv(WorkspaceEnvironment):
    @tool
    def list_departures(self, airport: str, date: str, page: int = 1) -> dict:
        """List scheduled departures from an airport on one day, by departure time, with free seats; 20 per page.

        Args:
            airport: Three-letter airport code, e.g. "AMS".
            date: The day, YYYY-MM-DD.
            page: 1-based page number.
        """
        try:
            day = dt.date.fromisoformat(date.strip()).isoformat()
        except ValueError:
            raise ToolError(f"date must look like 2026-12-09, got {date!r}") from None
        return self.query_page("SELECT id, flight_no, origin, destination, depart, arrive, seats_left FROM flights "
                               "WHERE origin = ? AND substr(depart, 1, 10) = ? ORDER BY depart, id", (airport.strip().upper(), day), page)

    @tool
    def list_flight_bookings(self, flight_id: int, page: int = 1) -> dict:
        """List our customers' bookings on one flight (reference, passenger, booking date, status), 20 per page.

        Args:
            flight_id: The flight's id.
            page: 1-based page number.
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
        """Move a confirmed booking to another flight; takes a seat and returns the new booking.

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

    # --- verifier --------------------------------------------------------------------------------
    def criteria(self, final_response: str) -> list[Criterion]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        expected = facts["expected"]
        rows = {r["booking_ref"]: r for r in self.query("SELECT b.*, f.flight_no FROM bookings b JOIN flights f ON f.id = b.flight_id")}
        by_id = {r["id"]: r for r in rows.values()}
        moved = {by_id[r["replaces"]]["booking_ref"]: r for r in rows.values() if r["replaces"]}
        refunded = {ref for ref, r in rows.items() if r["status"] == "refunded"}
        want_rebooked = {k for k, v in expected.items() if v[0] == "rebooked"}
        want_refunded = {k for k, v in expected.items() if v[0] == "refunded"}
        handled_ok = set(moved) == want_rebooked and refunded == want_refunded
        flights_ok = handled_ok and all(moved[k]["flight_no"] == expected[k][1] for k in want_rebooked)
        vouchers = {}
        for v in self.query("SELECT booking_id, amount FROM vouchers"):
            vouchers.setdefault(v["booking_id"], []).append(v["amount"])
        want_v = {moved[k]["id"]: [expected[k][3]] for k in want_rebooked if k in moved and expected[k][3]}
        vouchers_ok = flights_ok and vouchers == want_v

        report_ok, detail = False, f"{self.params['report_name']} not found"
        path = self.workspace / self.params["report_name"]
        if path.is_file():
            try:
                got = {}
                for r in csv.DictReader(io.StringIO(path.read_text().strip())):
                    delay = (r["delay_minutes"] or "").strip()
                    got[r["booking_ref"].strip()] = [r["action"].strip(), (r["new_flight"] or "").strip() or None,
                                                     int(float(delay)) if delay else None, int(float(r["voucher"] or 0))]
                report_ok = got == expected
                detail = "matches the expected handling" if report_ok else f"{len(got)} rows; differ from the {len(expected)} expected"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                detail = f"cannot parse the log: {exc}"
        total = sum(v[3] for v in expected.values())
        said = [int(x) for x in re.findall(r"(?<![\d.])\d+(?![\d.])", final_response)]
        acted = bool(moved) or bool(refunded)
        closed_ok = acted and not any(r["flight_id"] in facts["closed_flights"] for r in moved.values())
        untouched_ok = acted and rows[facts["already_cancelled"]]["status"] == "cancelled" and facts["refund_wish"] in refunded
        return [
            Criterion("no_rebooking_onto_cancelled_departures", closed_ok, 1.0, "new flights must actually operate"),
            Criterion("refund_wish_and_cancelled_booking", untouched_ok, 1.0, "the customer who asked for a refund gets one; a cancelled booking stays as it is"),
            Criterion("every_affected_booking_handled", handled_ok, 2.0, f"{len(moved)} rebooked / {len(refunded)} refunded; expected {len(want_rebooked)} / {len(want_refunded)}"),
            Criterion("priority_and_earliest_flight", flights_ok, 2.0, "tier, booking date and ref order; earliest operating flight with a seat"),
            Criterion("vouchers_on_new_bookings", vouchers_ok, 1.0, f"delay bands from the playbook, {self.params['small_voucher']} / {self.params['large_voucher']} EUR"),
            Criterion("log_written", report_ok, 1.0, detail),
            Criterion("counts_reported", len(want_rebooked) in said and total in said, 1.0, f"expected {len(want_rebooked)} rebooked and {total} EUR vouchers"),
        ]
