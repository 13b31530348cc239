import re
from collections import defaultdict
from datetime import datetime, timedelta

from progagent_lib.task.oracle_kit import read_all, read_files

TO_BASE = {"g": 0.001, "ml": 0.001, "kg": 1.0, "l": 1.0}


def solve(tools, threshold, report_name, check_records=True) -> str:
    meals, skip_invoices, skip_entries = [], set(), set()
    for text in read_files(tools).values():
        flat = " ".join(text.split())
        proc = re.search(r"covers Monday\s+(\d+ \w+ \d{4})", flat)
        if proc:
            monday = datetime.strptime(proc.group(1), "%d %B %Y").date()
        for amount, unit, code in re.findall(r"staff meal used ([\d.]+) (g|ml|kg|l) of .+? \((ITM-\d+)\)", text):
            meals.append((code, float(amount) * TO_BASE[unit]))
        for count, code in re.findall(r"staff meal used (\d+) (?!(?:g|ml|kg|l) of )(?:.+) \((ITM-\d+)\)\.", text):
            meals.append((code, float(count)))
        if "went straight back" in flat:
            skip_invoices |= set(re.findall(r"INV-\d+", flat))
        dup = re.search(r"waste entry (W-\d+) is a duplicate", flat)
        if dup:
            skip_entries.add(dup.group(1))

    items = {i["id"]: i for i in read_all(tools.list_items)}
    by_code = {i["code"]: i for i in items.values()}
    for code, quantity in meals:
        tools.record_staff_meal(item_id=by_code[code]["id"], quantity=round(quantity, 3), note="Staff meal notebook")

    first, last = monday.isoformat(), (monday + timedelta(days=6)).isoformat()
    left = defaultdict(float)
    for c in read_all(tools.list_stock_counts, count_date=(monday - timedelta(days=1)).isoformat()):
        left[c["item_id"]] += c["quantity"]
    for c in read_all(tools.list_stock_counts, count_date=last):
        left[c["item_id"]] -= c["quantity"]
    for d in read_all(tools.list_deliveries, date_from=first, date_to=last):
        if d["invoice_no"] not in skip_invoices or not check_records:
            left[d["item_id"]] += d["quantity"]
    recipe = defaultdict(list)
    for line in read_all(tools.list_recipe_lines):
        recipe[line["dish_id"]].append(line)
    for s in read_all(tools.list_sales, date_from=first, date_to=last):
        for line in recipe[s["dish_id"]]:
            left[line["item_id"]] -= line["quantity"] * s["portions"]
    for w in read_all(tools.list_waste, date_from=first, date_to=last):
        if w["entry_no"] not in skip_entries or not check_records:
            left[w["item_id"]] -= w["quantity"]
    for code, quantity in meals:
        left[by_code[code]["id"]] -= quantity

    rows, worst = ["case_id,item_code,unexplained_qty,value"], None
    for iid in sorted(left):
        value = left[iid] * items[iid]["unit_cost"]
        if value > threshold:
            case = tools.open_case(item_id=iid, unexplained_qty=round(left[iid], 3), value=round(value, 2))
            rows.append(f"{case['case_id']},{items[iid]['code']},{left[iid]:.3f},{value:.2f}")
            if worst is None or value > worst[0]:
                worst = (value, items[iid])
    tools.write_file(path=report_name, content="\n".join(rows) + "\n")
    return (f"The most valuable unexplained loss is {worst[1]['name']} ({worst[1]['code']}), worth {worst[0]:.2f} pounds; "
            f"I opened {len(rows) - 1} investigation cases.")
