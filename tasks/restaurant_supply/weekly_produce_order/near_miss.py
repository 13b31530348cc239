"""A plausible wrong solution: applies the allergen swap and allowance but misses the dish coming off the menu."""
import math
import re
from datetime import datetime, timedelta

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, buffer_pct, report_name) -> str:
    texts = list(read_files(tools).values())
    notes = next(t for t in texts if "seven services" in t)
    monday = datetime.strptime(re.search(r"Monday (\d+ \w+ \d{4})", notes).group(1), "%d %B %Y").date()
    extra = 1 + buffer_pct / 100
    audit = next(t for t in texts if "Allergen audit" in t)
    old, new = (s.strip() for s in re.search(r"uses (.+?) switches to (.+?)\s+at", audit, re.S).groups())
    stock = read_all(tools.list_ingredients, category="produce")
    ids = {s["name"]: s["id"] for s in stock}
    grams = {}
    days = read_all(tools.list_forecast, date_from=str(monday), date_to=str(monday + timedelta(days=6)))
    recipe_cache = {}
    for row in days:
        if row["dish_id"] not in recipe_cache:
            recipe_cache[row["dish_id"]] = tools.get_recipe(dish_id=row["dish_id"])["lines"]
        for line in recipe_cache[row["dish_id"]]:
            key = ids[new] if line["ingredient_id"] == ids[old] else line["ingredient_id"]
            grams[key] = grams.get(key, 0) + line["grams_per_cover"] * row["covers"]
    orders, out, total = {}, [], 0.0
    for s in stock:
        need = grams.get(s["id"], 0) * extra - s["on_hand_grams"]
        if need <= 0:
            continue
        packs = math.ceil(need / s["pack_grams"])
        if s["supplier"] not in orders:
            orders[s["supplier"]] = tools.create_order(supplier=s["supplier"])["order_id"]
        tools.add_order_line(order_id=orders[s["supplier"]], ingredient_id=s["id"], packs=packs)
        total += round(packs * s["pack_price"], 2)
        out.append(f"{s['code']},{s['name']},{s['supplier']},{packs},{packs * s['pack_price']:.2f}")
    tools.write_file(path=report_name, content="code,ingredient,supplier,packs,cost\n" + "\n".join(out))
    return f"Order total: {total:.2f}"
