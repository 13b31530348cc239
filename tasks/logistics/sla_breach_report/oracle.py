import datetime as dt
import json
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, excluded_region, min_fee, report_name, skip_holidays=True) -> str:
    texts = {p: " ".join(t.split()) for p, t in read_files(tools).items()}
    holidays, storm, premium = set(), None, set()
    for text in texts.values():
        m = re.search(r"reporting cut-off \((\d+ \w+ \d{4} \d+:\d+)\)", text)
        if m:
            cutoff = dt.datetime.strptime(m.group(1), "%d %B %Y %H:%M")
            pct = int(re.search(r"service credit of (\d+)%", text).group(1))
        if text.startswith("# Public holidays"):
            holidays |= {dt.datetime.strptime(d, "%d %B %Y").date() for d in re.findall(r"- \w+ (\d+ \w+ \d{4})", text)}
        m = re.search(r"Deliveries to (\w+) picked up between\s\w+ (\d+ \w+ \d{4}) and \w+ (\d+ \w+ \d{4})", text)
        if m:
            storm = (m.group(1),) + tuple(dt.datetime.strptime(x, "%d %B %Y").date() for x in m.groups()[1:])
        m = re.search(r"# Contract addendum\s(.+?) has bought our premium standard service", text)
        if m:
            premium.add(m.group(1))

    customers = {c["id"]: c for c in read_all(tools.list_customers)}
    counts = {"express": 0, "standard": 0, "economy": 0}
    credited = 0.0
    for d in read_all(tools.list_deliveries):
        picked = dt.datetime.fromisoformat(d["picked_up_at"])
        if d["region"] == storm[0] and storm[1] <= picked.date() <= storm[2]:
            continue
        if d["region"] == excluded_region:
            continue
        if d["service"] == "express":
            promise = picked + dt.timedelta(hours=24)
        else:
            days = 5 if d["service"] == "economy" else (2 if customers[d["customer_id"]]["name"] in premium else 3)
            day = picked.date()
            while days:
                day += dt.timedelta(days=1)
                if day.weekday() < 5 and not (skip_holidays and day in holidays):
                    days -= 1
            promise = dt.datetime.combine(day, dt.time(23, 59, 59))
        arrived = dt.datetime.fromisoformat(d["delivered_at"]) if d["delivered_at"] else None
        if (arrived or cutoff) <= promise:
            continue
        counts[d["service"]] += 1
        breach = tools.log_breach(delivery_id=d["id"], note=f"{d['service']} promise {promise:%Y-%m-%d %H:%M} missed")
        if customers[d["customer_id"]]["tier"] == "Gold" and d["fee"] >= min_fee:
            amount = round(d["fee"] * pct / 100, 2)
            tools.issue_credit(breach_id=breach["breach_id"], amount=amount)
            credited += amount
    tools.write_file(path=report_name, content=json.dumps(counts, indent=2))
    return f"Logged {sum(counts.values())} breaches. Credits issued to Gold customers total {credited:.2f}."
