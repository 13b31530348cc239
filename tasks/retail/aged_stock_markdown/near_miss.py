"""A plausible wrong solution: counts a line as aged when it is exactly at a band's day count (>= instead of >)."""
import datetime as dt
import math
import re

from progagent_lib.task.oracle_kit import read_all


def solve(tools, held_category, go_live_day, report_name) -> str:
    policy = " ".join(tools.read_file(path="merchandising/markdown_policy.md").split())
    taken = dt.datetime.strptime(re.search(r"held on (\d+ \w+ \d{4})", policy).group(1), "%d %B %Y").date()
    tiers = sorted(((int(a), int(b)) for a, b in re.findall(r"older than (\d+) days are reduced by (\d+)%", policy)), reverse=True)
    note = " ".join(tools.read_file(path="mail/buying_exclusions.eml").split())
    skip_brand = re.search(r"Everything from (.+?) is on", note).group(1)
    skip_category = re.search(r"And (.+?) stock goes back", note).group(1)
    products = read_all(tools.list_products)
    latest = {}
    for s in read_all(tools.list_sales):
        latest[s["sku"]] = max(latest.get(s["sku"], s["sale_date"]), s["sale_date"])
    day_no = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"].index(go_live_day)
    go_live = taken + dt.timedelta(days=(day_no - taken.weekday() - 1) % 7 + 1)
    event_id = tools.create_markdown_event(title="Clearance", effective_date=str(go_live))["event_id"]
    out, total = ["sku,old_price,new_price"], 0.0
    for p in products:
        if not p["on_hand"] or p["brand"] == skip_brand or p["category"] in (skip_category, held_category):
            continue
        days = (taken - dt.date.fromisoformat(latest.get(p["sku"], p["received_date"]))).days
        off = next((pct for limit, pct in tiers if days >= limit), 0)
        if not off:
            continue
        price = max(math.floor(p["price"] * (1 - off / 100) - 0.99 + 1e-6), math.ceil(p["unit_cost"] - 0.99 - 1e-6)) + 0.99
        if price < p["price"]:
            tools.set_markdown_price(event_id=event_id, sku=p["sku"], new_price=round(price, 2))
            out.append(f"{p['sku']},{p['price']},{price:.2f}")
            total += (p["price"] - price) * p["on_hand"]
    tools.write_file(path=report_name, content="\n".join(out))
    return f"Markdown value: {total:.2f}"
