import re
import statistics
from datetime import datetime, timedelta

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, excluded_street, booked_days, report_name, working_days=True) -> str:
    holidays, ignore_stuck_accounts, ignore_reverse = set(), set(), set()
    for text in read_files(tools).values():
        flat = " ".join(text.split())
        if "Meter health check" in flat:
            run = int(re.search(r"same register value on (\d+) or more", flat).group(1))
            factor = float(re.search(r"more than (\d+) times the meter's median", flat).group(1))
            today = datetime.strptime(re.search(r"Today is (\d+ \w+ \d{4})", flat).group(1), "%d %B %Y").date()
            visit_after = {}
            for days, what in re.findall(r"(\d+) working days? after today for (reverse|a stuck|a spike)", flat):
                visit_after[what.replace("a ", "")] = int(days)
        for when in re.findall(r"\w+day (\d+ \w+ \d{4}) is a public\s+holiday", flat):
            holidays.add(datetime.strptime(when, "%d %B %Y").date())
        if "does not move there is expected" in flat:
            ignore_stuck_accounts |= set(re.findall(r"account (AC-\d+)", flat))
        if "runs backwards" in flat:
            ignore_reverse |= set(re.findall(r"Meter (\w+) now sits", flat))

    def visit(n):
        day = today
        while n:
            day += timedelta(days=1)
            if not working_days or (day.weekday() < 5 and day not in holidays):
                n -= 1
        while day.weekday() >= 5:  # counting calendar days can end on a weekend
            day += timedelta(days=1)
        return day.isoformat()

    meters = read_all(tools.list_meters)
    open_tickets = {t["meter_id"]: t["id"] for t in read_all(tools.list_tickets, status="open")}
    series = {}
    for r in read_all(tools.list_readings):
        series.setdefault(r["meter_id"], []).append((r["read_date"], r["register_kwh"]))

    rows, noted = ["ticket_id,meter_id,fault,first_seen,visit_date"], 0
    for m in meters:
        if m["address"].split(" ", 1)[1] == excluded_street:
            continue
        points = sorted(series[m["meter_id"]])
        found = {}
        diffs = [(points[i][0], points[i][1] - points[i - 1][1]) for i in range(1, len(points))]
        for day, d in diffs:
            if d < 0 and "reverse" not in found:
                found["reverse"] = day
        streak = 1
        for i in range(1, len(points)):
            streak = streak + 1 if points[i][1] == points[i - 1][1] else 1
            if streak == run and "stuck" not in found:
                found["stuck"] = points[i - run + 1][0]
        middle = statistics.median(d for _, d in diffs)
        spikes = [day for day, d in diffs if d > factor * middle]
        if spikes:
            found["spike"] = spikes[0]
        if m["account_no"] in ignore_stuck_accounts:
            found.pop("stuck", None)
        if m["meter_id"] in ignore_reverse:
            found.pop("reverse", None)
        fault = next((k for k in ("reverse", "stuck", "spike") if k in found), None)
        if fault is None:
            continue
        if m["meter_id"] in open_tickets:
            tools.add_ticket_note(ticket_id=open_tickets[m["meter_id"]], note=f"Health check: {fault} first seen {found[fault]}.")
            noted += 1
            continue
        ticket = tools.open_ticket(meter_id=m["meter_id"], fault=fault, first_seen=found[fault])
        when = visit(max(visit_after[fault], booked_days + 1))
        tools.schedule_visit(ticket_id=ticket["ticket_id"], visit_date=when)
        rows.append(f"{ticket['ticket_id']},{m['meter_id']},{fault},{found[fault]},{when}")
    tools.write_file(path=report_name, content="\n".join(rows) + "\n")
    return f"I opened {len(rows) - 1} new fault tickets and added notes to {noted} existing ones."
