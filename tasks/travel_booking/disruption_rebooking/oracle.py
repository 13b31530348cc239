import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all, read_files

STAMP = "%Y-%m-%d %H:%M"


def solve(tools, small_voucher, large_voucher, report_name, read_deadlines=True) -> str:
    texts = read_files(tools)
    refund_refs, deadlines = set(), {}
    for text in texts.values():
        m = re.search(r"departures from (\w{3}) scheduled between (\d\d):00 and (\d\d):00 on \w+ (\d+ \w+ \d{4})", text)
        if m:
            hub, lo, hi, when = m.groups()
            lo, hi, day = int(lo), int(hi), dt.datetime.strptime(when, "%d %B %Y").date()
        if "# Disruption playbook" in text:
            b1, b2 = (int(a) for a in re.findall(r"at least (\d+) minutes later", text))
            v1, v2 = small_voucher, large_voucher
        refund_refs |= set(re.findall(r"Booking (\w+) \([^)]*\): customer called - if anything goes wrong", text))
        for ref, hhmm, when in re.findall(r"Booking (\w+) \([^)]*\): .*?must land by (\d\d:\d\d) on \w+ (\d+ \w+ \d{4})", text):
            deadlines[ref] = dt.datetime.strptime(f"{when} {hhmm}", "%d %B %Y %H:%M").strftime(STAMP)

    def operates(f):
        depart = dt.datetime.strptime(f["depart"], STAMP)
        return not (depart.date() == day and lo <= depart.hour < hi)

    flights = read_all(tools.list_departures, airport=hub, date=day.isoformat())
    flights += read_all(tools.list_departures, airport=hub, date=(day + dt.timedelta(days=1)).isoformat())
    seats = {f["id"]: f["seats_left"] for f in flights}
    affected = []
    for f in flights:
        if not operates(f):
            for b in read_all(tools.list_flight_bookings, flight_id=f["id"]):
                if b["status"] == "confirmed":
                    affected.append((b, f))
    tiers = {"gold": 0, "silver": 1, "standard": 2}
    ranked = []
    for b, f in affected:
        tier = tools.get_passenger(passenger_id=b["passenger_id"])["loyalty_tier"]
        ranked.append(((tiers[tier], b["booked_on"], b["booking_ref"]), b, f))
    ranked.sort(key=lambda r: r[0])

    log, rebooked, voucher_total = [], 0, 0
    for (_, _, ref), b, orig in ranked:
        options = [f for f in flights if operates(f) and f["destination"] == orig["destination"] and f["depart"] >= orig["depart"]
                   and seats[f["id"]] > 0 and (ref not in deadlines or f["arrive"] <= deadlines[ref] or not read_deadlines)]
        if ref in refund_refs or not options:
            tools.refund_booking(booking_id=b["id"])
            log.append(f"{ref},refunded,,,0")
            continue
        new = min(options, key=lambda f: (f["depart"], f["id"]))
        seats[new["id"]] -= 1
        moved = tools.rebook(booking_id=b["id"], flight_id=new["id"])
        delay = int((dt.datetime.strptime(new["depart"], STAMP) - dt.datetime.strptime(orig["depart"], STAMP)).total_seconds() // 60)
        voucher = v2 if delay >= b2 else v1 if delay >= b1 else 0
        if voucher:
            tools.issue_voucher(booking_id=moved["new_booking_id"], amount=voucher)
        rebooked += 1
        voucher_total += voucher
        log.append(f"{ref},rebooked,{new['flight_no']},{delay},{voucher}")
    tools.write_file(path=report_name, content="booking_ref,action,new_flight,delay_minutes,voucher\n" + "\n".join(log) + "\n")
    return f"I rebooked {rebooked} bookings and refunded {len(log) - rebooked}. Vouchers issued total {voucher_total} EUR."
