"""A plausible wrong solution: finds the faults but books visits counting calendar days, not working days."""
import re
import statistics
from datetime import datetime, timedelta

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, excluded_street, booked_days, report_name) -> str:
    flat = [" ".join(t.split()) for t in read_files(tools).values()]
    guide = next(t for t in flat if "Meter health check" in t)
    run = int(re.search(r"on (\d+) or more consecutive", guide).group(1))
    factor = int(re.search(r"more than (\d+) times", guide).group(1))
    today = datetime.strptime(re.search(r"Today is (\d+ \w+ \d{4})", guide).group(1), "%d %B %Y").date()
    vacant = {a for t in flat if "empty all month" in t for a in re.findall(r"AC-\d+", t)}
    solar = {m for t in flat if "rooftop panels" in t for m in re.findall(r"Meter (\w+)", t)}
    existing = {t["meter_id"]: t["id"] for t in read_all(tools.list_tickets, status="open")}
    lines = []
    for m in read_all(tools.list_meters):
        if m["address"].endswith(excluded_street):
            continue
        pts = [(r["read_date"], r["register_kwh"]) for r in read_all(tools.list_readings, meter_id=m["meter_id"])]
        use = [(pts[i][0], pts[i][1] - pts[i - 1][1]) for i in range(1, len(pts))]
        faults = {}
        back = [d for d, u in use if u < 0]
        if back and m["meter_id"] not in solar:
            faults["reverse"] = back[0]
        for i in range(len(pts) - run + 1):
            if len({v for _, v in pts[i:i + run]}) == 1 and m["account_no"] not in vacant:
                faults.setdefault("stuck", pts[i][0])
        med = statistics.median(u for _, u in use)
        big = [d for d, u in use if u > factor * med]
        if big:
            faults["spike"] = big[0]
        kind = next((k for k in ("reverse", "stuck", "spike") if k in faults), None)
        if not kind:
            continue
        if m["meter_id"] in existing:
            tools.add_ticket_note(ticket_id=existing[m["meter_id"]], note=kind)
            continue
        tid = tools.open_ticket(meter_id=m["meter_id"], fault=kind, first_seen=faults[kind])["ticket_id"]
        day = today + timedelta(days=max({"reverse": 1, "stuck": 3, "spike": 5}[kind], booked_days + 1))
        while day.weekday() >= 5:
            day += timedelta(days=1)
        tools.schedule_visit(ticket_id=tid, visit_date=str(day))
        lines.append(f"{tid},{m['meter_id']},{kind},{faults[kind]},{day}")
    tools.write_file(path=report_name, content="ticket_id,meter_id,fault,first_seen,visit_date\n" + "\n".join(lines))
    return f"New tickets: {len(lines)}"
