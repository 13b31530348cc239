import json
import re
from datetime import date, datetime

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, commitment_pct, aging_days, report_name, halve_disputed=True) -> str:
    rates, parent_of = {"GBP": 1.0}, {}
    for text in read_files(tools).values():
        flat = " ".join(text.split())
        if "Counterparty credit policy" in flat:
            review = datetime.strptime(re.search(r"review of (\d+ \w+ \d{4})", flat).group(1), "%d %B %Y").date()
            red = float(re.search(r"red above ([\d,]+) pounds", flat).group(1).replace(",", ""))
            amber = float(re.search(r"amber above ([\d,]+) pounds", flat).group(1).replace(",", ""))
        fx = re.search(r"one euro is worth ([\d.]+) pounds and one US dollar is worth ([\d.]+) pounds", flat)
        if fx:
            rates["EUR"], rates["USD"] = float(fx.group(1)), float(fx.group(2))
        for sub, parent in re.findall(r"- (.+?) is a wholly owned subsidiary of (.+?)\.(?= -|$)", flat):
            parent_of[sub] = parent

    companies = read_all(tools.list_counterparties)
    by_name = {c["name"]: c for c in companies}
    contracts = {c["id"]: c for c in read_all(tools.list_contracts)}
    exposure, billed = {}, {}
    for inv in read_all(tools.list_invoices):
        k = contracts[inv["contract_id"]]
        billed[k["id"]] = billed.get(k["id"], 0) + inv["amount"]
        share = 1.0 if inv["status"] in ("open", "disputed") else 0.0
        if inv["status"] == "disputed" and halve_disputed:
            share /= 2  # a disputed invoice counts at half its amount
        if (review - date.fromisoformat(inv["issued_on"])).days > aging_days:
            share = 0.0  # with collections, already provisioned
        exposure[k["counterparty_id"]] = exposure.get(k["counterparty_id"], 0) + share * inv["amount"] * rates[k["currency"]]
    for k in contracts.values():
        if k["status"] == "active":
            exposure[k["counterparty_id"]] = exposure.get(k["counterparty_id"], 0) + (k["total_value"] - billed.get(k["id"], 0)) * commitment_pct / 100 * rates[k["currency"]]

    group_total = {}
    for c in companies:
        head = by_name[parent_of[c["name"]]] if c["name"] in parent_of else c
        group_total[head["id"]] = group_total.get(head["id"], 0) + exposure.get(c["id"], 0)
    report = {}
    for cid, total in group_total.items():
        rating = "red" if total > red else "amber" if total > amber else "green"
        tools.set_risk_rating(counterparty_id=cid, rating=rating)
        report[next(c["name"] for c in companies if c["id"] == cid)] = {"exposure_gbp": round(total, 2), "rating": rating}
    tools.write_file(path=report_name, content=json.dumps(report, indent=2))
    top = max(report, key=lambda k: report[k]["exposure_gbp"])
    return f"We are most exposed to the {top} group: {report[top]['exposure_gbp']:,.2f} pounds, rated {report[top]['rating']}."
