"""A plausible wrong solution: honours refund requests in the notes but misses the customer's arrival deadline."""
import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, small_voucher, large_voucher, report_name) -> str:
    notice = tools.read_file(path="inbox/airline_ops_notice.eml")
    book = tools.read_file(path="playbook/disruption_playbook.md")
    hub, lo, hi, when = re.search(r"from (\w{3}) scheduled between (\d\d):00 and (\d\d):00 on \w+ (\d+ \w+ \d{4})", notice).groups()
    lo, hi = int(lo), int(hi)
    day = dt.datetime.strptime(when, "%d %B %Y").date()
    bands = list(zip((int(a) for a in re.findall(r"at least (\d+) minutes later", book)), (small_voucher, large_voucher)))
    dep = read_all(tools.list_departures, airport=hub, date=str(day)) + read_all(tools.list_departures, airport=hub, date=str(day + dt.timedelta(days=1)))
    shut = lambda f: f["depart"].startswith(str(day)) and lo <= int(f["depart"][11:13]) < hi
    free = {f["id"]: f["seats_left"] for f in dep}
    wants_refund = set()
    for text in read_files(tools, "customer_notes/*").values():
        wants_refund |= set(re.findall(r"Booking (\w+) \(.*?\): customer called - if anything goes wrong", text))
    queue = []
    for f in dep:
        if shut(f):
            for b in read_all(tools.list_flight_bookings, flight_id=f["id"]):
                if b["status"] == "confirmed":
                    tier = tools.get_passenger(passenger_id=b["passenger_id"])["loyalty_tier"]
                    queue.append(((["gold", "silver", "standard"].index(tier), b["booked_on"], b["booking_ref"]), b, f))
    rows, n, total = [], 0, 0
    for _, b, f in sorted(queue, key=lambda q: q[0]):
        alt = [g for g in dep if not shut(g) and g["destination"] == f["destination"] and g["depart"] >= f["depart"] and free[g["id"]]]
        if not alt or b["booking_ref"] in wants_refund:
            tools.refund_booking(booking_id=b["id"])
            rows.append(f"{b['booking_ref']},refunded,,,0")
            continue
        g = min(alt, key=lambda g: (g["depart"], g["id"]))
        free[g["id"]] -= 1
        nb = tools.rebook(booking_id=b["id"], flight_id=g["id"])["new_booking_id"]
        mins = int((dt.datetime.fromisoformat(g["depart"]) - dt.datetime.fromisoformat(f["depart"])).total_seconds() // 60)
        v = bands[1][1] if mins >= bands[1][0] else bands[0][1] if mins >= bands[0][0] else 0
        if v:
            tools.issue_voucher(booking_id=nb, amount=v)
        n, total = n + 1, total + v
        rows.append(f"{b['booking_ref']},rebooked,{g['flight_no']},{mins},{v}")
    tools.write_file(path=report_name, content="booking_ref,action,new_flight,delay_minutes,voucher\n" + "\n".join(rows) + "\n")
    return f"Rebooked {n}; vouchers {total} EUR."
