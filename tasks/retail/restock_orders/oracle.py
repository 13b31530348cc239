import math
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, excluded_category, target_pct, report_name, honour_hold=True) -> str:
    texts = read_files(tools)
    suspended_name, delisted = None, set()
    for path, text in texts.items():
        hold = re.search(r"Subject: Hold on (.+)", text)
        if hold:
            suspended_name = hold.group(1).strip()
        if "must not be reordered" in text:
            delisted |= set(re.findall(r"SKU-\d+", text))

    products = read_all(tools.list_products)
    suppliers = {}

    def supplier(sid):
        if sid not in suppliers:
            suppliers[sid] = tools.get_supplier(supplier_id=sid)
        return suppliers[sid]

    rows, total = [], 0.0
    for p in products:
        if p["on_hand"] >= p["reorder_point"] or p["sku"] in delisted or p["category"] == excluded_category:
            continue
        chosen = supplier(p["preferred_supplier_id"])
        if honour_hold and chosen["name"] == suspended_name:
            chosen = supplier(p["backup_supplier_id"])
        need = math.ceil(p["target_stock"] * target_pct / 100) - p["on_hand"]
        quantity = math.ceil(need / chosen["case_pack"]) * chosen["case_pack"]
        tools.create_purchase_order(product_id=p["id"], supplier_id=chosen["id"], quantity=quantity)
        cost = round(quantity * p["unit_cost"], 2)
        total += cost
        rows.append(f"{p['sku']},{chosen['name']},{quantity},{cost:.2f}")
    tools.write_file(path=report_name, content="sku,supplier,quantity,cost\n" + "\n".join(rows) + "\n")
    return f"I placed {len(rows)} purchase orders. The total cost of all the orders is {total:.2f}."
