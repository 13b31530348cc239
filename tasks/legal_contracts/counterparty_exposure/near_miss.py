"""A plausible wrong solution: converts currencies and rolls up groups but counts disputed invoices in full."""
import json
import re
from datetime import date, datetime

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, commitment_pct, aging_days, report_name) -> str:
    docs = [" ".join(t.split()) for t in read_files(tools).values()]
    policy = next(d for d in docs if "credit policy" in d)
    review = datetime.strptime(re.search(r"review of (\d+ \w+ \d{4})", policy).group(1), "%d %B %Y").date()
    limits = [float(x.replace(",", "")) for x in re.findall(r"above ([\d,]+) pounds", policy)]
    fx = {"GBP": 1.0}
    for d in docs:
        m = re.search(r"euro is worth ([\d.]+) pounds and one US dollar is worth ([\d.]+)", d)
        if m:
            fx.update(EUR=float(m.group(1)), USD=float(m.group(2)))
    parent = {s: p for d in docs for s, p in re.findall(r"- (.+?) is a wholly owned subsidiary of (.+?)\.(?= -|$)", d)}
    firms = {c["id"]: c["name"] for c in read_all(tools.list_counterparties)}
    deals = {c["id"]: c for c in read_all(tools.list_contracts)}
    owed = {}
    spent = {}
    for i in read_all(tools.list_invoices):
        d = deals[i["contract_id"]]
        spent[d["id"]] = spent.get(d["id"], 0) + i["amount"]
        if i["status"] != "paid" and (review - date.fromisoformat(i["issued_on"])).days <= aging_days:
            owed[d["counterparty_id"]] = owed.get(d["counterparty_id"], 0) + i["amount"] * fx[d["currency"]]
    for d in deals.values():
        if d["status"] == "active":
            owed[d["counterparty_id"]] = owed.get(d["counterparty_id"], 0) + (d["total_value"] - spent.get(d["id"], 0)) * commitment_pct / 100 * fx[d["currency"]]
    totals = {}
    for cid, name in firms.items():
        head = parent.get(name, name)
        totals[head] = totals.get(head, 0) + owed.get(cid, 0)
    ids = {n: i for i, n in firms.items()}
    out = {}
    for name, value in totals.items():
        rating = "red" if value > limits[0] else "amber" if value > limits[1] else "green"
        tools.set_risk_rating(counterparty_id=ids[name], rating=rating)
        out[name] = {"exposure_gbp": round(value, 2), "rating": rating}
    tools.write_file(path=report_name, content=json.dumps(out))
    return f"Largest exposure: {max(out, key=lambda k: out[k]['exposure_gbp'])}"
