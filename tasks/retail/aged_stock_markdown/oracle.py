import datetime as dt
import math
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, held_category, go_live_day, report_name, strictly_older=True) -> str:
    texts = {p: " ".join(t.split()) for p, t in read_files(tools).items()}
    stocktake, bands, brands, categories, ending = None, [], set(), set(), None
    for text in texts.values():
        m = re.search(r"stocktake, which this time was held on (\d+ \w+ \d{4})", text)
        if m:
            stocktake = dt.datetime.strptime(m.group(1), "%d %B %Y").date()
            bands = [(int(d), int(p)) for d, p in re.findall(r"older than (\d+) days are reduced by (\d+)%", text)]
            ending = float(re.search(r"rounded down to the nearest price ending in (\.\d+)", text).group(1))  # .99
        m = re.search(r"Everything from (.+?) is on sale-or-return", text)
        if m:
            brands.add(m.group(1))
        m = re.search(r"And (.+?) stock goes back into the\s+warehouse", text)
        if m:
            categories.add(m.group(1))
    bands.sort(reverse=True)  # oldest band first
    categories.add(held_category)

    last = {}
    for sale in read_all(tools.list_sales):
        last[sale["sku"]] = max(last.get(sale["sku"], ""), sale["sale_date"])
    weekday = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"].index(go_live_day)
    go_live = stocktake + dt.timedelta(days=(weekday - stocktake.weekday() - 1) % 7 + 1)  # first one after the stocktake
    event = tools.create_markdown_event(title="Markdown policy - aged stock", effective_date=go_live.isoformat())
    rows, value = [], 0.0
    for p in read_all(tools.list_products):
        if p["on_hand"] <= 0 or p["brand"] in brands or p["category"] in categories:
            continue
        age = (stocktake - dt.date.fromisoformat(last.get(p["sku"], p["received_date"]))).days
        pct = next((pct for days, pct in bands if age > days or (age == days and not strictly_older)), None)
        if pct is None:
            continue
        reduced = math.floor(p["price"] * (100 - pct) / 100 - ending + 1e-6) + ending
        cost_floor = math.ceil(p["unit_cost"] - ending - 1e-6) + ending
        new = round(max(reduced, cost_floor), 2)
        if new >= p["price"]:
            continue
        tools.set_markdown_price(event_id=event["event_id"], sku=p["sku"], new_price=new)
        rows.append(f"{p['sku']},{p['price']:.2f},{new:.2f}")
        value += (p["price"] - new) * p["on_hand"]
    tools.write_file(path=report_name, content="sku,old_price,new_price\n" + "\n".join(rows) + "\n")
    return (f"I scheduled {len(rows)} markdowns going live on {go_live.isoformat()}. "
            f"The total markdown value across stock on hand is {value:.2f}.")
