"""A plausible wrong solution: records the staff meals but takes the delivery and waste records at face value."""
import re
from datetime import datetime, timedelta

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, threshold, report_name) -> str:
    docs = read_files(tools)
    proc = " ".join(next(t for t in docs.values() if "reconciliation covers" in t).split())
    start = datetime.strptime(re.search(r"Monday (\d+ \w+ \d{4})", proc).group(1), "%d %B %Y").date()
    limit = threshold
    stock = {i["code"]: i for i in read_all(tools.list_items)}
    book = next(t for t in docs.values() if "Staff meal notebook" in t)
    used_by_staff = {}
    for line in book.splitlines():
        m = re.search(r"used ([\d.]+) (\w+) .*\((ITM-\d+)\)", line)
        if m:
            q = float(m.group(1)) / (1000 if m.group(2) in ("g", "ml") else 1)
            item = stock[m.group(3)]
            tools.record_staff_meal(item_id=item["id"], quantity=q)
            used_by_staff[item["id"]] = used_by_staff.get(item["id"], 0) + q
    a, b = str(start), str(start + timedelta(days=6))
    net = {i["id"]: -used_by_staff.get(i["id"], 0) for i in stock.values()}
    for c in read_all(tools.list_stock_counts, count_date=str(start - timedelta(days=1))):
        net[c["item_id"]] += c["quantity"]
    for c in read_all(tools.list_stock_counts, count_date=b):
        net[c["item_id"]] -= c["quantity"]
    for d in read_all(tools.list_deliveries, date_from=a, date_to=b):
        net[d["item_id"]] += d["quantity"]
    lines = {}
    for r in read_all(tools.list_recipe_lines):
        lines.setdefault(r["dish_id"], []).append(r)
    for s in read_all(tools.list_sales, date_from=a, date_to=b):
        for r in lines.get(s["dish_id"], []):
            net[r["item_id"]] -= r["quantity"] * s["portions"]
    for w in read_all(tools.list_waste, date_from=a, date_to=b):
        net[w["item_id"]] -= w["quantity"]
    out, top = [], ("", 0)
    for item in stock.values():
        value = net[item["id"]] * item["unit_cost"]
        if value > limit:
            cid = tools.open_case(item_id=item["id"], unexplained_qty=net[item["id"]], value=value)["case_id"]
            out.append(f"{cid},{item['code']},{net[item['id']]:.3f},{value:.2f}")
            top = max(top, (item["name"], value), key=lambda t: t[1])
    tools.write_file(path=report_name, content="case_id,item_code,unexplained_qty,value\n" + "\n".join(out))
    return f"Biggest unexplained loss: {top[0]}"
