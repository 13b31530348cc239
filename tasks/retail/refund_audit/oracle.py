import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all


def solve(tools, restocking_fee_pct, tolerance, report_name, holiday_extension=True) -> str:
    paths = [f["path"] for f in read_all(tools.list_files) if f["path"].startswith("policies/")]
    docs = " ".join(" ".join(tools.read_file(path=path).split()) for path in paths)
    window = int(re.search(r"within (\d+) days of the order date", docs).group(1))
    fee = restocking_fee_pct
    m = re.search(r"between (\d+ \w+) and (\d+ \w+) (\d{4}) \(both included\) can be returned until\s+(\d+ \w+ \d{4})", docs)
    first, last, year, until = m.groups()
    season = tuple(dt.datetime.strptime(day, "%d %B %Y").date() for day in (f"{first} {year}", f"{last} {year}", until))

    orders, products, rows, net = {}, {}, [], 0.0
    for r in read_all(tools.list_returns):
        if r["order_no"] not in orders:
            orders[r["order_no"]] = tools.get_order(order_no=r["order_no"])
        if r["sku"] not in products:
            products[r["sku"]] = tools.get_product(sku=r["sku"])
        order, product = orders[r["order_no"]], products[r["sku"]]
        line = next(l for l in order["lines"] if l["sku"] == r["sku"])
        placed = dt.date.fromisoformat(order["order_date"])
        deadline = placed + dt.timedelta(days=window)
        if holiday_extension and season[0] <= placed <= season[1]:
            deadline = max(deadline, season[2])
        amount = r["qty"] * line["unit_price"] * (100 - order["coupon_pct"]) / 100
        if r["reason"] != "defective":
            if dt.date.fromisoformat(r["return_date"]) > deadline or product["final_sale"]:
                amount = 0.0
            elif product["category"] == "electronics" and r["item_condition"] == "opened":
                amount *= (100 - fee) / 100
        correct = round(amount + 1e-9, 2)
        if abs(correct - r["refund_issued"]) >= tolerance - 1e-9:
            tools.flag_refund(return_id=r["return_id"], correct_amount=correct)
            rows.append(f"{r['return_id']},{r['refund_issued']:.2f},{correct:.2f}")
            net += r["refund_issued"] - correct
    tools.write_file(path=report_name, content="return_id,issued,correct\n" + "\n".join(rows) + "\n")
    return f"I flagged {len(rows)} returns. Net over-refund across them: {net:.2f}."
