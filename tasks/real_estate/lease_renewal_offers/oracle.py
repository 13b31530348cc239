import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all, read_files

NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4}


def solve(tools, max_raise, term_months, report_name, new_buildings_exempt=True) -> str:
    texts = read_files(tools)
    caps, sold = {}, None
    for text in texts.values():
        if "# Renewal round" in text:
            memo_day = dt.datetime.strptime(re.search(r"memo of (\d+ \w+ \d{4})", text).group(1), "%d %B %Y").date()
            lo, hi = map(int, re.search(r"between (\d+) and (\d+) days after", text).groups())
            threshold = NUMBER_WORDS[re.search(r"paid late (\w+) or more times", text).group(1)]
            since = dt.datetime.strptime(re.search(r"due from (\d+ \w+ \d{4}) onwards", text).group(1), "%d %B %Y").date()
            grace = int(re.search(r"more than (\d+) days after its due date", text).group(1))
        for district, pct in re.findall(r"In ([\w ]+?), the increase on renewal may not exceed ([\d.]+) percent", text):
            caps[district] = float(pct)
        m = re.search(r"Buildings completed in (\d{4}) or later are exempt", text)
        if m:
            exempt_from = int(m.group(1))
        m = re.search(r"Subject: (.+) - sale agreed", text)
        if m:
            sold = m.group(1).strip()

    start, end = (memo_day + dt.timedelta(days=lo)).isoformat(), (memo_day + dt.timedelta(days=hi)).isoformat()
    props = {p["id"]: p for p in read_all(tools.list_properties)}
    units = {}
    for p in props.values():
        for u in read_all(tools.list_units, property_id=p["id"]):
            units[u["id"]] = u
    rows, rise = [], 0
    for lease in read_all(tools.list_leases, status="active"):
        if not start <= lease["end_date"] <= end:
            continue
        unit = units[lease["unit_id"]]
        prop = props[unit["property_id"]]
        if prop["name"] == sold:
            tools.issue_non_renewal(lease_id=lease["id"], reason="property_sale")
            continue
        late = sum(1 for pay in read_all(tools.list_payments, lease_id=lease["id"])
                   if pay["due_date"] >= since.isoformat()
                   and (dt.date.fromisoformat(pay["paid_on"]) - dt.date.fromisoformat(pay["due_date"])).days > grace)
        if late >= threshold:
            tools.issue_non_renewal(lease_id=lease["id"], reason="late_payments")
            continue
        current = lease["monthly_rent"]
        if new_buildings_exempt and prop["year_built"] >= exempt_from:
            new = max(current, unit["market_rent"])
        else:
            new = max(current, min(unit["market_rent"], int(current * (100 + caps[prop["district"]]) // 100)))
        new = min(new, current + max_raise)
        tools.create_renewal_offer(lease_id=lease["id"], new_rent=new, term_months=term_months)
        rise += new - current
        rows.append(f"| {lease['id']} | {tools.get_tenant(tenant_id=lease['tenant_id'])['name']} | {current} | {new} |")
    columns = "lease_id | tenant | current_rent | new_rent".split(" | ")  # the columns the request names
    header = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    tools.write_file(path=report_name, content="\n".join(header + rows) + "\n")
    return f"I made {len(rows)} renewal offers. If all are accepted the monthly rent roll goes up by {rise} dollars."
