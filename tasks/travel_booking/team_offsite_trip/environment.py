"""Tools and verifier for travel_booking/team_offsite_trip."""
import csv
import datetime as dt
import io
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


def _day(value: str, name: str) -> str:
    try:
        return dt.date.fromisoformat(value.strip()).isoformat()
    except (AttributeError, ValueError):
        raise ToolError(f"{name} must be a date like 2027-01-12, got {value!r}") from None


class OffsiteTripEnv(WorkspaceEnvironment):
    @tool
    def list_employees(self, page: int = 1, department: str = "") -> dict:
        """List staff from the company directory (id, name, department, home city, e-mail), 20 per page.

        Args:
            page: 1-based page number.
            department: Only staff of this department when non-empty.
        """
        sql = "SELECT id, name, department, home_city, email FROM employees"
        return self.query_page(sql + (" WHERE department = ?" if department else "") + " ORDER BY id",
                               (department,) if department else (), page)

    @tool
    def search_flights(self, origin: str, destination: str, date: str, page: int = 1) -> dict:
        """Search scheduled flights between two cities departing on one day, by departure time, 20 per page.

        Args:
            origin: Departure city, e.g. "Berlin".
            destination: Arrival city, e.g. "Lisbon".
            date: Departure day, YYYY-MM-DD.
            page: 1-based page number.
        """
        day = _day(date, "date")
        return self.query_page("SELECT id, flight_no, airline, origin, destination, depart, arrive, cabin, fare FROM flights "
                               "WHERE origin = ? AND destination = ? AND substr(depart, 1, 10) = ? ORDER BY depart, id",
                               (origin.strip(), destination.strip(), day), page)

    @tool
    def list_hotels(self, city: str, page: int = 1) -> dict:
        """List partner hotels in a city with nightly rate (EUR), guest rating and distance to the city centre venue.

        Args:
            city: The city, e.g. "Vienna".
            page: 1-based page number.
        """
        return self.query_page("SELECT id, name, city, nightly_rate, rating, distance_km FROM hotels WHERE city = ? ORDER BY id",
                               (city.strip(),), page)

    @tool
    def create_trip(self, name: str, destination: str) -> dict:
        """Open a trip; bookings are made against its id.

        Args:
            name: A name for the trip, e.g. "Sales offsite".
            destination: The destination city.
        """
        if not name.strip():
            raise ToolError("give the trip a name")
        cur = self.db.execute("INSERT INTO trips (name, destination) VALUES (?, ?)", (name.strip(), destination.strip()))
        return {"trip_id": cur.lastrowid, "name": name.strip(), "destination": destination.strip()}

    def _trip_and_employee(self, trip_id: int, employee_id: int) -> None:
        self.require_row("trips", trip_id, "open one with create_trip")
        self.require_row("employees", employee_id, "use list_employees")

    @tool
    def book_flight(self, trip_id: int, employee_id: int, flight_id: int) -> dict:
        """Book a seat on a flight for one traveller on a trip; returns the booking.

        Args:
            trip_id: The trip's id from create_trip.
            employee_id: The traveller.
            flight_id: The flight's id from search_flights.
        """
        self._trip_and_employee(trip_id, employee_id)
        flight = self.require_row("flights", flight_id, "use search_flights")
        cur = self.db.execute("INSERT INTO flight_bookings (trip_id, employee_id, flight_id, fare) VALUES (?,?,?,?)",
                              (trip_id, employee_id, flight_id, flight["fare"]))
        return {"booking_id": cur.lastrowid, "flight_no": flight["flight_no"], "fare": flight["fare"]}

    @tool
    def book_hotel(self, trip_id: int, employee_id: int, hotel_id: int, check_in: str, check_out: str) -> dict:
        """Reserve a hotel room for one traveller on a trip; returns the reservation and its total cost.

        Args:
            trip_id: The trip's id from create_trip.
            employee_id: The guest.
            hotel_id: The hotel's id from list_hotels.
            check_in: Arrival day, YYYY-MM-DD.
            check_out: Departure day, YYYY-MM-DD (after check_in).
        """
        self._trip_and_employee(trip_id, employee_id)
        hotel = self.require_row("hotels", hotel_id, "use list_hotels")
        start, end = _day(check_in, "check_in"), _day(check_out, "check_out")
        nights = (dt.date.fromisoformat(end) - dt.date.fromisoformat(start)).days
        if nights < 1:
            raise ToolError("check_out must be at least one day after check_in")
        cost = round(hotel["nightly_rate"] * nights, 2)
        cur = self.db.execute("INSERT INTO hotel_bookings (trip_id, employee_id, hotel_id, check_in, check_out, cost) VALUES (?,?,?,?,?,?)",
                              (trip_id, employee_id, hotel_id, start, end, cost))
        return {"reservation_id": cur.lastrowid, "hotel": hotel["name"], "nights": nights, "cost": cost}

    # --- verifier --------------------------------------------------------------------------------
    def criteria(self, final_response: str) -> list[Criterion]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        expected = {int(k): v for k, v in facts["expected"].items()}
        fb = self.query("SELECT b.trip_id, b.employee_id, b.flight_id, f.airline FROM flight_bookings b JOIN flights f ON f.id = b.flight_id")
        hb = self.query("SELECT trip_id, employee_id, hotel_id, check_in, check_out FROM hotel_bookings")
        got_flights = sorted((b["employee_id"], b["flight_id"]) for b in fb)
        want_flights = sorted((e, r[k]) for e, r in expected.items() for k in ("outbound", "return") if r[k])
        got_hotels = sorted((b["employee_id"], b["hotel_id"], b["check_in"], b["check_out"]) for b in hb)
        want_hotels = sorted((e, r["hotel"], facts["check_in"], facts["check_out"]) for e, r in expected.items() if r["hotel"])
        avoider, airline = facts["avoider"]
        exceptions_ok = bool(fb) and not any(b["employee_id"] in facts["no_flights"] for b in fb) and not any(
            b["employee_id"] == avoider and b["airline"] == airline for b in fb)
        trips = {b["trip_id"] for b in fb + hb}
        trip_rows = self.query("SELECT id, destination FROM trips")
        one_trip = len(trips) == 1 and any(t["id"] in trips and t["destination"] == facts["destination"] for t in trip_rows)

        flight_no = {r["id"]: r["flight_no"] for r in self.query("SELECT id, flight_no FROM flights")}
        hotel_name = {r["id"]: r["name"] for r in self.query("SELECT id, name FROM hotels")}
        report_ok, detail = False, f"{self.params['report_name']} not found"
        path = self.workspace / self.params["report_name"]
        if path.is_file():
            try:
                rows = list(csv.DictReader(io.StringIO(path.read_text().strip())))
                got = {int(r["employee_id"]): ((r["outbound_flight"] or "").strip(), (r["return_flight"] or "").strip(),
                       (r["hotel"] or "").strip(), (r["check_in"] or "").strip(), (r["check_out"] or "").strip(),
                       round(float(r["cost"] or 0), 2)) for r in rows}
                want = {e: (flight_no.get(r["outbound"], ""), flight_no.get(r["return"], ""), hotel_name.get(r["hotel"], ""),
                            facts["check_in"] if r["hotel"] else "", facts["check_out"] if r["hotel"] else "", r["cost"])
                        for e, r in expected.items()}
                report_ok = got == want and len(rows) == len(want)
                detail = "matches the expected itinerary" if report_ok else f"{len(rows)} rows; differs from the expected itinerary"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                detail = f"cannot parse the itinerary: {exc}"
        total = round(sum(r["cost"] for r in expected.values()), 2)
        numbers = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.\d{2}", final_response)]
        return [
            Criterion("flights_booked_per_policy", got_flights == want_flights, 2.0, f"{len(got_flights)} flight bookings, {len(want_flights)} expected (landing by {self.params['cutoff_hour']}:00)"),
            Criterion("traveller_arrangements_respected", exceptions_ok, 1.0, "no flights for the driver or the local attendee; airline wish kept"),
            Criterion("hotel_nights_booked", got_hotels == want_hotels, 2.0, f"{len(got_hotels)} hotel bookings, {len(want_hotels)} expected"),
            Criterion("all_bookings_on_one_trip", one_trip, 1.0, f"bookings on trips {sorted(trips)}"),
            Criterion("itinerary_written", report_ok, 1.0, detail),
            Criterion("total_cost_reported", any(abs(n - total) < 0.01 for n in numbers), 1.0, f"expected total {total:.2f}"),
        ]
