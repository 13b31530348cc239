import datetime as dt

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool
from progagent_lib.task.criteria import parse_rows


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
            department: Only staff of this department when non-empty.
        """
        sql = "SELECT id, name, department, home_city, email FROM employees"
        return self.query_page(sql + (" WHERE department = ?" if department else "") + " ORDER BY id",
                               (department,) if department else (), page)

    @tool
    def search_flights(self, origin: str, destination: str, date: str, page: int = 1) -> dict:
        """Search scheduled flights between two cities departing on one day, by departure time, 20 per page. Each
        flight has id, flight_no, airline, origin, destination, depart, arrive, cabin and fare.

        Args:
            origin: Departure city, e.g. "Berlin".
            destination: Arrival city, e.g. "Lisbon".
            date: Departure day, YYYY-MM-DD.
        """
        day = _day(date, "date")
        return self.query_page("SELECT id, flight_no, airline, origin, destination, depart, arrive, cabin, fare FROM flights "
                               "WHERE origin = ? AND destination = ? AND substr(depart, 1, 10) = ? ORDER BY depart, id",
                               (origin.strip(), destination.strip(), day), page)

    @tool
    def list_hotels(self, city: str, page: int = 1) -> dict:
        """List partner hotels in a city with nightly rate (EUR), guest rating and distance to the city centre venue.
        Each hotel has id, name, city, nightly_rate, rating and distance_km.

        Args:
            city: The city, e.g. "Vienna".
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

    def criteria(self, final_response: str) -> list[Criterion]:
        facts = self.facts
        avoider, airline = facts["avoider"]
        flown = self.query("SELECT b.employee_id, f.airline FROM flight_bookings b JOIN flights f ON f.id = b.flight_id")
        kept = bool(flown) and not any(b["employee_id"] in facts["no_flights"] or
                                       (b["employee_id"] == avoider and b["airline"] == airline) for b in flown)
        used = "t.id IN (SELECT trip_id FROM flight_bookings UNION SELECT trip_id FROM hotel_bookings)"
        name = self.params["report_name"]
        total = sum(float(r["cost"]) for r in parse_rows(self.reference.read(name), "csv"))
        return [
            self.tables_match("flight_bookings", key=(), columns=["employee_id", "flight_id"], weight=2.0,
                              criterion="flights_booked_per_policy"),
            Criterion("traveller_arrangements_respected", kept, 1.0,
                      "no flights for the driver or the local attendee; airline wish kept"),
            self.tables_match("hotel_bookings", key="employee_id", columns=["hotel_id", "check_in", "check_out"],
                              weight=2.0, criterion="hotel_nights_booked"),
            self.tables_match("trips t", key="t.destination", where=used, criterion="all_bookings_on_one_trip"),
            self.file_matches(name, key="employee_id", criterion="itinerary_written", columns=[
                "outbound_flight", "return_flight", "hotel", "check_in", "check_out", "cost"]),
            self.answer_states(round(total, 2), criterion="total_cost_reported"),
        ]
