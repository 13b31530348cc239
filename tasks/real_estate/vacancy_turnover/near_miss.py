"""A plausible wrong solution: applies the flat cleaning fee to every lease, ignoring when the clause began."""
import re

from progagent_lib.task.oracle_kit import read_all


def solve(tools, max_keep_pct, report_name) -> str:
    policy = tools.read_file(path="policies/deposit_deductions.md")
    share = int(re.search(r"(\d+)% of the repair cost", policy).group(1)) / 100
    clause = tools.read_file(path="policies/lease_clause_history.txt")
    fee = float(re.search(r"\$(\d+)", clause).group(1))
    waiver = [f["path"] for f in read_all(tools.list_files, pattern="mail/*waiver*")]
    waived = re.search(r"Subject: (.+?) - ", tools.read_file(path=waiver[0])).group(1) if waiver else ""
    refunds, lines = 0.0, []
    for lease in read_all(tools.list_leases, move_out_month="2026-11"):
        unit = tools.get_unit(unit_id=lease["unit_id"])
        found = read_all(tools.list_inspection_items, lease_id=lease["id"])
        charge = fee if any(i["category"] == "cleaning" for i in found) else 0.0
        for i in found:
            if i["category"] == "damage":
                charge += i["repair_cost"] * (share if i["area"] == "floor" and not lease["pet_addendum"] else 1)
            elif i["category"] == "missing" and unit["building_name"] != waived:
                charge += i["repair_cost"]
        wo = tools.create_work_order(unit_id=unit["id"], estimated_cost=sum(i["repair_cost"] for i in found))
        kept = round(min(charge, lease["deposit"] * max_keep_pct / 100), 2)
        back = tools.settle_deposit(lease_id=lease["id"], deduction=kept, work_order_id=wo["work_order_id"])["refund"]
        refunds += back
        lines.append(f"{lease['id']},{unit['code']},{kept:.2f},{back:.2f}")
    tools.write_file(path=report_name, content="lease_id,unit,deduction,refund\n" + "\n".join(lines) + "\n")
    return f"All November move-outs are settled; we refund {refunds:.2f} in total."
