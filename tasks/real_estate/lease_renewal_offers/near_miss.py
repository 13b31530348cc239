"""A plausible wrong solution: applies the district cap everywhere, missing the ordinance's exemption for newer buildings."""
import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, max_raise, term_months, report_name) -> str:
    memo = tools.read_file(path="memos/renewal_round.md")
    law = tools.read_file(path="legal/rent_stabilisation_ordinance.txt")
    sale = [t for t in read_files(tools, "mail/*").values() if "sale agreed" in t][0]
    sold = re.search(r"Subject: (.+) - sale agreed", sale).group(1)
    today = dt.date(2026, 11, 30)
    lo, hi = (int(x) for x in re.search(r"between (\d+) and (\d+) days", memo).groups())
    grace = int(re.search(r"more than (\d+) days", memo).group(1))
    limit = {"two": 2, "three": 3}[re.search(r"paid late (\w+) or more", memo).group(1)]
    caps = {d: float(p) for d, p in re.findall(r"In ([\w ]+?), the increase on renewal may not exceed ([\d.]+)", law)}
    props = {p["id"]: p for p in read_all(tools.list_properties)}
    units = {u["id"]: u for p in props for u in read_all(tools.list_units, property_id=p)}
    table, rise = [], 0
    for lease in read_all(tools.list_leases):
        days = (dt.date.fromisoformat(lease["end_date"]) - today).days
        if days < lo or days > hi:
            continue
        unit = units[lease["unit_id"]]
        prop = props[unit["property_id"]]
        being_sold = prop["name"] == sold
        if being_sold:
            tools.issue_non_renewal(lease_id=lease["id"], reason="property_sale")
            continue
        pays = [p for p in read_all(tools.list_payments, lease_id=lease["id"]) if p["due_date"] >= "2025-12-01"]
        if sum((dt.date.fromisoformat(p["paid_on"]) - dt.date.fromisoformat(p["due_date"])).days > grace for p in pays) >= limit:
            tools.issue_non_renewal(lease_id=lease["id"], reason="late_payments")
            continue
        rent = lease["monthly_rent"]
        new = min(max(rent, min(unit["market_rent"], int(rent * (100 + caps[prop["district"]]) // 100))), rent + max_raise)
        tools.create_renewal_offer(lease_id=lease["id"], new_rent=new, term_months=term_months)
        rise += new - rent
        table.append(f"| {lease['id']} | {tools.get_tenant(tenant_id=lease['tenant_id'])['name']} | {rent} | {new} |")
    tools.write_file(path=report_name, content="| lease_id | tenant | current_rent | new_rent |\n|---|---|---|---|\n" + "\n".join(table) + "\n")
    return f"Offers made; rent roll up by {rise} per month."
