"""A plausible wrong solution: skips weekends but forgets the public holidays when counting business days."""
import datetime as dt
import json
import re

from progagent_lib.task.oracle_kit import read_all


def solve(tools, excluded_region, min_fee, report_name) -> str:
    terms = " ".join(tools.read_file(path="contracts/service_level_terms.md").split())
    cut = dt.datetime.strptime(re.search(r"cut-off \((.+?)\)", terms).group(1), "%d %B %Y %H:%M")
    rate = int(re.search(r"credit of (\d+)%", terms).group(1)) / 100
    fm = " ".join(tools.read_file(path="operations/force_majeure.md").split())
    region, start, end = re.search(r"Deliveries to (\w+) picked up between \w+ (.+?) and \w+ (.+?) \(", fm).groups()
    start, end = (dt.datetime.strptime(x, "%d %B %Y").date() for x in (start, end))
    addendum = " ".join(tools.read_file(path="contracts/premium_contract.md").split())
    vip = re.search(r"addendum (.+?) has bought", addendum).group(1)
    people = {c["id"]: c for c in read_all(tools.list_customers)}
    per_service, total = {"express": 0, "standard": 0, "economy": 0}, 0.0
    for d in read_all(tools.list_deliveries):
        t0 = dt.datetime.fromisoformat(d["picked_up_at"])
        if (d["region"] == region and start <= t0.date() <= end) or d["region"] == excluded_region:
            continue
        if d["service"] == "express":
            limit = t0 + dt.timedelta(days=1)
        else:
            need = {"standard": 3, "economy": 5}[d["service"]]
            if d["service"] == "standard" and people[d["customer_id"]]["name"] == vip:
                need = 2
            day = t0.date()
            while need:
                day += dt.timedelta(days=1)
                need -= day.weekday() < 5
            limit = dt.datetime.combine(day, dt.time(23, 59))
        done = dt.datetime.fromisoformat(d["delivered_at"]) if d["delivered_at"] else cut
        if done > limit:
            per_service[d["service"]] += 1
            bid = tools.log_breach(delivery_id=d["id"])["breach_id"]
            if people[d["customer_id"]]["tier"] == "Gold" and d["fee"] >= min_fee:
                tools.issue_credit(breach_id=bid, amount=round(d["fee"] * rate, 2))
                total += round(d["fee"] * rate, 2)
    tools.write_file(path=report_name, content=json.dumps(per_service))
    return f"Credits: {total:.2f}"
