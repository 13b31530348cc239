"""A plausible wrong solution: applies the normal return window to holiday-season orders too."""
import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all


def solve(tools, restocking_fee_pct, tolerance, report_name) -> str:
    policy = " ".join(tools.read_file(path="policies/returns_policy.md").split())
    days = int(re.search(r"within (\d+) days", policy).group(1))
    fee = restocking_fee_pct / 100
    out, net = ["return_id,issued,correct"], 0.0
    for r in read_all(tools.list_returns):
        order = tools.get_order(order_no=r["order_no"])
        item = tools.get_product(sku=r["sku"])
        price = [l["unit_price"] for l in order["lines"] if l["sku"] == r["sku"]][0]
        value = r["qty"] * price * (1 - order["coupon_pct"] / 100)
        late = (dt.date.fromisoformat(r["return_date"]) - dt.date.fromisoformat(order["order_date"])).days > days
        if r["reason"] != "defective":
            if late or item["final_sale"]:
                value = 0
            elif item["category"] == "electronics" and r["item_condition"] == "opened":
                value = value * (1 - fee)
        value = round(value + 1e-9, 2)
        if abs(value - r["refund_issued"]) >= tolerance:
            tools.flag_refund(return_id=r["return_id"], correct_amount=value, note="policy")
            out.append(f"{r['return_id']},{r['refund_issued']},{value}")
            net += r["refund_issued"] - value
    tools.write_file(path=report_name, content="\n".join(out))
    return f"Net over-refund: {net:.2f}"
