"""A plausible wrong solution: follows the policy but misses the supplier hold in the inbox."""
import math

from progagent_lib.task.oracle_kit import read_all


def solve(tools, excluded_category, target_pct, report_name) -> str:
    products = read_all(tools.list_products)
    delisted = set()
    for f in tools.list_files(pattern="docs/*")["items"]:
        text = tools.read_file(path=f["path"])
        if "must not be reordered" in text:
            delisted |= {line.strip(" *") for line in text.splitlines() if line.strip().startswith("* SKU")}
    rows, total = [], 0.0
    for p in products:
        if p["on_hand"] >= p["reorder_point"] or p["sku"] in delisted or p["category"] == excluded_category:
            continue
        s = tools.get_supplier(supplier_id=p["preferred_supplier_id"])
        quantity = math.ceil((math.ceil(p["target_stock"] * target_pct / 100) - p["on_hand"]) / s["case_pack"]) * s["case_pack"]
        tools.create_purchase_order(product_id=p["id"], supplier_id=s["id"], quantity=quantity)
        cost = round(quantity * p["unit_cost"], 2)
        total += cost
        rows.append(f"{p['sku']},{s['name']},{quantity},{cost:.2f}")
    tools.write_file(path=report_name, content="sku,supplier,quantity,cost\n" + "\n".join(rows) + "\n")
    return f"Placed {len(rows)} orders, total cost {total:.2f}."
