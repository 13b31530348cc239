import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, max_keep_pct, report_name, fee_from_clause_date=True) -> str:
    texts = read_files(tools)
    floor_share, fee, clause_date, waived = None, None, None, None
    for text in texts.values():
        m = re.search(r"tenant only pays (\d+)% of the repair cost", text)
        if m:
            floor_share = int(m.group(1)) / 100
        m = re.search(r"added to our standard lease on (\d{1,2} \w+ \d{4})", text)
        if m:
            clause_date = dt.datetime.strptime(m.group(1), "%d %B %Y").date().isoformat()
            fee = float(re.search(r"cleaning charge of\s+\$(\d+)", text).group(1))
        m = re.search(r"Subject: (.+?) - package room break-ins", text)
        if m and "missing items" in text:
            waived = m.group(1).strip()

    total_refund, rows = 0.0, []
    leases = read_all(tools.list_leases, move_out_month="2026-11")
    for lease in leases:
        unit = tools.get_unit(unit_id=lease["unit_id"])
        found = read_all(tools.list_inspection_items, lease_id=lease["id"])
        charge = 0.0
        for item in found:
            if item["category"] == "damage":
                share = floor_share if item["area"] == "floor" and not lease["pet_addendum"] else 1.0
                charge += item["repair_cost"] * share
            elif item["category"] == "missing" and unit["building_name"] != waived:
                charge += item["repair_cost"]
        if (lease["start_date"] >= clause_date or not fee_from_clause_date) and any(i["category"] == "cleaning" for i in found):
            charge += fee
        deduction = round(min(charge, lease["deposit"] * max_keep_pct / 100), 2)
        order = tools.create_work_order(unit_id=unit["id"], estimated_cost=round(sum(i["repair_cost"] for i in found), 2))
        settled = tools.settle_deposit(lease_id=lease["id"], deduction=deduction, work_order_id=order["work_order_id"])
        total_refund += settled["refund"]
        rows.append(f"{lease['id']},{unit['code']},{deduction:.2f},{settled['refund']:.2f}")
    tools.write_file(path=report_name, content="lease_id,unit,deduction,refund\n" + "\n".join(rows) + "\n")
    return (f"Settled {len(leases)} November move-outs and opened a make-ready work order for each unit. "
            f"Total deposit refunds: ${total_refund:,.2f}.")
