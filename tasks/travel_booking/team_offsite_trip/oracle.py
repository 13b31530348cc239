import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def long_day(text):
    return dt.datetime.strptime(re.sub(r"^\w+day ", "", text), "%d %B %Y").date()


def solve(tools, cutoff_hour, report_name, read_driver_notes=True) -> str:
    texts = read_files(tools)
    drivers, avoid = set(), {}
    for path, text in texts.items():
        if "Subject: Team offsite in" in text:
            dest = re.search(r"offsite will be in (\w+)\.", text).group(1)
            first = long_day(re.search(r"09:00 on (\w+ \d+ \w+ \d{4})", text).group(1))
            end_hour, last = re.search(r"finishes at (\d+):00 on (\w+ \d+ \w+ \d{4})", text).groups()
            end_hour, last = int(end_hour), long_day(last)
            attendees = [ln.strip()[2:] for ln in text.splitlines() if ln.startswith("  - ")]
        if "# Company travel policy" in text:
            cutoff = cutoff_hour
            gap = int(re.search(r"at least (\d+) hours after", text).group(1))
            allowance = {c: float(v) for c, v in re.findall(r"\| (\w+) \| (\d+) EUR \|", text)}
        who = re.search(r"^Re: (.+?) \(", text, flags=re.M)
        if who:
            if "no flights are needed" in text:
                drivers.add(who.group(1))
            banned = re.search(r"never to book them on (.+?) again", text) or re.search(r"will not fly (.+?) under", text)
            if banned:
                avoid[who.group(1)] = banned.group(1)

    staff = {e["name"]: e for e in read_all(tools.list_employees)}
    eve = first - dt.timedelta(days=1)
    hotels = [h for h in read_all(tools.list_hotels, city=dest) if h["nightly_rate"] <= allowance[dest]]
    hotel = max(hotels, key=lambda h: (h["rating"], -h["distance_km"], -h["id"]))
    trip = tools.create_trip(name=f"Team offsite {dest}", destination=dest)["trip_id"]

    schedule = {}

    def cheapest(origin, destination, day, ok):
        key = (origin, destination, day)
        if key not in schedule:  # travellers from the same city share a route: search it once
            schedule[key] = read_all(tools.search_flights, origin=origin, destination=destination, date=day.isoformat())
        found = [f for f in schedule[key] if f["cabin"] == "economy" and ok(f)]
        return min(found, key=lambda f: (f["fare"], f["depart"], f["id"]))

    rows, total = [], 0.0
    for name in sorted(attendees, key=lambda n: staff[n]["id"]):
        e = staff[name]
        out = back = None
        cost = 0.0
        if e["home_city"] != dest:
            if name not in drivers or not read_driver_notes:
                airline_ok = lambda f: f["airline"] != avoid.get(name)
                out = cheapest(e["home_city"], dest, eve, lambda f: airline_ok(f) and f["arrive"] <= f"{eve.isoformat()} {cutoff:02d}:00")
                back = cheapest(dest, e["home_city"], last, lambda f: airline_ok(f) and f["depart"] >= f"{last.isoformat()} {end_hour + gap:02d}:00")
                for f in (out, back):
                    cost += tools.book_flight(trip_id=trip, employee_id=e["id"], flight_id=f["id"])["fare"]
            cost += tools.book_hotel(trip_id=trip, employee_id=e["id"], hotel_id=hotel["id"], check_in=eve.isoformat(),
                                     check_out=last.isoformat())["cost"]
        cost = round(cost, 2)
        total += cost
        stay = (hotel["name"], eve.isoformat(), last.isoformat()) if e["home_city"] != dest else ("", "", "")
        rows.append(",".join([str(e["id"]), name, out["flight_no"] if out else "", back["flight_no"] if back else "", *stay, f"{cost:.2f}"]))
    tools.write_file(path=report_name, content="employee_id,name,outbound_flight,return_flight,hotel,check_in,check_out,cost\n"
                     + "\n".join(rows) + "\n")
    return f"Everything is booked. The total cost of the trip is {total:.2f} EUR."
