"""A plausible wrong solution: follows the policy but books the driver flights too (skims the notes for airlines only)."""
import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, cutoff_hour, report_name) -> str:
    invite = next(t for t in read_files(tools, "mail/*").values() if "Team offsite in" in t)
    policy = tools.read_file(path="policy/travel_policy.md")
    dest = re.search(r"offsite will be in (\w+)", invite).group(1)
    days = [dt.datetime.strptime(d, "%d %B %Y").date() for d in re.findall(r"\w+day (\d+ \w+ \d{4})", invite)]
    end = int(re.search(r"finishes at (\d+):00", invite).group(1))
    names = re.findall(r"^  - (.+)$", invite, flags=re.M)
    cutoff = cutoff_hour
    gap = int(re.search(r"at least (\d+) hours", policy).group(1))
    cap = float(re.search(rf"\| {dest} \| (\d+) EUR", policy).group(1))
    avoid = {}
    for text in read_files(tools, "traveller_notes/*").values():
        m = re.search(r"Re: (.+?) \(.*?(?:never to book them on|will not fly) (.+?)(?: again| under)", text, flags=re.S)
        if m:
            avoid[m.group(1)] = m.group(2)
    staff = {e["name"]: e for e in read_all(tools.list_employees)}
    hotel = max((h for h in read_all(tools.list_hotels, city=dest) if h["nightly_rate"] <= cap),
                key=lambda h: (h["rating"], -h["distance_km"]))
    eve, last = days[0] - dt.timedelta(days=1), days[1]
    trip = tools.create_trip(name="Offsite", destination=dest)["trip_id"]
    lines, total = [], 0.0
    for name in names:
        e = staff[name]
        if e["home_city"] == dest:
            lines.append(f"{e['id']},{name},,,,,,0.00")
            continue
        legs = []
        for origin, to, day, test in ((e["home_city"], dest, eve, lambda f: f["arrive"] <= f"{eve} {cutoff:02d}:00"),
                                      (dest, e["home_city"], last, lambda f: f["depart"] >= f"{last} {end + gap:02d}:00")):
            options = [f for f in read_all(tools.search_flights, origin=origin, destination=to, date=day.isoformat())
                       if f["cabin"] == "economy" and f["airline"] != avoid.get(name) and test(f)]
            legs.append(min(options, key=lambda f: (f["fare"], f["depart"])))
        cost = sum(tools.book_flight(trip_id=trip, employee_id=e["id"], flight_id=f["id"])["fare"] for f in legs)
        cost += tools.book_hotel(trip_id=trip, employee_id=e["id"], hotel_id=hotel["id"], check_in=str(eve), check_out=str(last))["cost"]
        total += cost
        lines.append(f"{e['id']},{name},{legs[0]['flight_no']},{legs[1]['flight_no']},{hotel['name']},{eve},{last},{cost:.2f}")
    tools.write_file(path=report_name, content="employee_id,name,outbound_flight,return_flight,hotel,check_in,check_out,cost\n" + "\n".join(lines) + "\n")
    return f"Trip booked, total {total:.2f} EUR."
