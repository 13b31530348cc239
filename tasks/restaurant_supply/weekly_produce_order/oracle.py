import re
from collections import defaultdict
from datetime import datetime, timedelta

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, buffer_pct, report_name, retire_dish=True) -> str:
    docs = read_files(tools)
    week_start = allowance = swap_from = swap_to = retired_name = retire_from = None
    for text in docs.values():
        head = re.search(r"week of Monday (\d+ \w+ \d{4})\s*\n", text)
        if head and "(done)" not in text.splitlines()[0]:
            week_start = datetime.strptime(head.group(1), "%d %B %Y").date()
            allowance = buffer_pct
        swap = re.search(r"uses (.+?) switches to (.+?)\s+at exactly", text, re.S)
        if swap:
            swap_from, swap_to = swap.group(1).strip(), swap.group(2).strip()
        off = re.search(r"the (.+?) comes off the menu from \w+ (\d+ \w+)", text, re.S)
        if off:
            retired_name, retire_from = off.group(1), off.group(2)
    retire_day = datetime.strptime(f"{retire_from} {week_start.year}", "%d %B %Y").date()
    week_end = week_start + timedelta(days=6)

    ingredients = {i["id"]: i for i in read_all(tools.list_ingredients)}
    by_name = {i["name"]: i["id"] for i in ingredients.values()}
    dishes = read_all(tools.list_dishes)
    retired_id = next(d["id"] for d in dishes if d["name"] == retired_name)
    recipes = {d["id"]: tools.get_recipe(dish_id=d["id"])["lines"] for d in dishes}

    usage = defaultdict(int)
    for row in read_all(tools.list_forecast):
        if not week_start.isoformat() <= row["service_date"] <= week_end.isoformat():
            continue  # the table also holds last week's actuals
        if retire_dish and row["dish_id"] == retired_id and row["service_date"] >= retire_day.isoformat():
            continue
        for line in recipes[row["dish_id"]]:
            iid = line["ingredient_id"]
            if iid == by_name[swap_from]:
                iid = by_name[swap_to]
            usage[iid] += line["grams_per_cover"] * row["covers"]

    per_supplier = defaultdict(list)
    for iid, grams in sorted(usage.items()):
        ing = ingredients[iid]
        shortfall = grams * (100 + allowance) - ing["on_hand_grams"] * 100
        if ing["category"] == "produce" and shortfall > 0:
            per_supplier[ing["supplier"]].append((ing, -(-shortfall // (ing["pack_grams"] * 100))))

    rows, total = ["code,ingredient,supplier,packs,cost"], 0.0
    for supplier, items in sorted(per_supplier.items()):
        order_id = tools.create_order(supplier=supplier)["order_id"]
        for ing, packs in items:
            tools.add_order_line(order_id=order_id, ingredient_id=ing["id"], packs=packs)
            cost = round(packs * ing["pack_price"], 2)
            total += cost
            rows.append(f"{ing['code']},{ing['name']},{supplier},{packs},{cost:.2f}")
    tools.write_file(path=report_name, content="\n".join(rows) + "\n")
    return f"The produce order comes to {total:.2f} in total across {len(per_supplier)} suppliers."
