import re
from datetime import datetime

from progagent_lib.task.oracle_kit import read_all, read_files

SMALL = {"g": 0.001, "ml": 0.001, "kg": 1.0, "l": 1.0}


def contents(pack):
    """Base units (kg, l or pieces) in a pack description."""
    multi = re.search(r"(\d+) x ([\d.]+) (g|ml|kg|l)\b", pack)
    if multi:
        return int(multi.group(1)) * float(multi.group(2)) * SMALL[multi.group(3)]
    single = re.search(r"([\d.]+) (kg|l) ", pack + " ")
    if single:
        return float(single.group(1))
    return float(re.search(r"of (\d+)", pack).group(1))


def solve(tools, min_saving, report_name, honour_expiry=True) -> str:
    banned = set()
    for text in read_files(tools).values():
        flat = " ".join(text.split())
        if "Purchasing guidelines" in flat:
            review = datetime.strptime(re.search(r"price review of (\d+ \w+ \d{4})", flat).group(1), "%d %B %Y").date().isoformat()
        failed = re.search(r"Audit result - (.+?) \1 failed our hygiene audit", flat)
        if failed:
            banned.add(failed.group(1))
    suppliers = {s["id"]: s["name"] for s in read_all(tools.list_suppliers)}
    banned_ids = {sid for sid, name in suppliers.items() if name in banned}
    offers = {}
    for q in read_all(tools.list_quotes):
        offers.setdefault(q["item_id"], []).append((q["pack_price"] / contents(q["pack"]), q["supplier_id"], q["valid_until"]))

    rows, total = ["item_code,old_supplier,new_supplier,old_unit_price,new_unit_price,weekly_saving"], 0.0
    for item in read_all(tools.list_items):
        quotes = offers[item["id"]]
        old = next(p for p, s, _ in quotes if s == item["supplier_id"])
        price, best = min((p, s) for p, s, until in quotes if (until >= review or not honour_expiry) and s not in banned_ids)
        if best == item["supplier_id"] or price > old * (1 - min_saving / 100):
            continue
        tools.switch_supplier(item_id=item["id"], supplier_id=best)
        saving = round(item["weekly_usage"] * (old - price), 2)
        total += saving
        rows.append(f"{item['code']},{suppliers[item['supplier_id']]},{suppliers[best]},{old:.4f},{price:.4f},{saving:.2f}")
    tools.write_file(path=report_name, content="\n".join(rows) + "\n")
    return f"I moved {len(rows) - 1} items; the total weekly saving is {total:.2f} pounds."
