"""A plausible wrong solution: compares per-unit prices but forgets that expired quotes no longer count."""
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def per_unit(pack):
    m = re.search(r"(\d+) x ([\d.]+) (\w+)", pack)
    if m:
        size = float(m.group(2)) / (1000 if m.group(3) in ("g", "ml") else 1)
        return int(m.group(1)) * size
    m = re.match(r"([\d.]+) (kg|l)", pack)
    return float(m.group(1)) if m else float(pack.split()[-1])


def solve(tools, min_saving, report_name) -> str:
    notes = [" ".join(t.split()) for t in read_files(tools).values()]
    pct = min_saving
    names = {s["id"]: s["name"] for s in read_all(tools.list_suppliers)}
    bad = {i for i, n in names.items() for t in notes if f"{n} failed our hygiene audit" in t}
    lines, saved = [], 0.0
    for it in read_all(tools.list_items):
        offers = [(q["pack_price"] / per_unit(q["pack"]), q["supplier_id"]) for q in read_all(tools.list_quotes, item_id=it["id"])]
        now = next(p for p, s in offers if s == it["supplier_id"])
        p, s = min(o for o in offers if o[1] not in bad)
        if s != it["supplier_id"] and p <= now * (1 - pct / 100):
            tools.switch_supplier(item_id=it["id"], supplier_id=s)
            gain = round(it["weekly_usage"] * (now - p), 2)
            saved += gain
            lines.append(f"{it['code']},{names[it['supplier_id']]},{names[s]},{now:.4f},{p:.4f},{gain:.2f}")
    tools.write_file(path=report_name, content="item_code,old_supplier,new_supplier,old_unit_price,new_unit_price,weekly_saving\n" + "\n".join(lines))
    return f"Weekly saving: {saved:.2f}"
