import re
from datetime import date

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, grace_days, restocking_fee, report_name, cap_at_what_is_left=True) -> str:
    texts = read_files(tools)
    policy = next(t for t in texts.values() if "Refund policy" in t)
    window = int(re.search(r"up to (\d+) days after", policy).group(1))
    warranty = int(re.search(r"which gives them (\d+) days", policy).group(1))
    auto = float(re.search(r"up to (\d+) dollars themselves", policy).group(1))
    supervisor = float(re.search(r"up to (\d+) dollars go to a supervisor", policy).group(1))

    customers = {c["id"]: c for c in read_all(tools.list_customers)}
    held = set()
    for path in sorted(p for p in texts if p.startswith("mail/")):  # file names start with the date
        named = {c["id"] for c in customers.values() if c["name"] in texts[path]}
        if "we have cleared" in texts[path]:
            held -= named
        elif "on hold" in texts[path]:
            held |= named

    rows, approved_total = [], 0.0
    for req in read_all(tools.list_refund_requests, status="pending"):
        order = tools.get_order(order_id=req["order_id"])
        customer = customers[order["customer_id"]]
        days = (date.fromisoformat(req["requested_on"]) - date.fromisoformat(order["delivered_on"])).days
        left = round(order["total"] - sum(r["amount"] for r in order["refunds_issued"]), 2)
        amount = round(min(req["amount"], left if cap_at_what_is_left else order["total"]), 2)
        if req["reason"] == "changed_mind":
            amount = round(amount - restocking_fee, 2)
        limit = auto * (2 if customer["loyalty_tier"] == "gold" else 1)
        if customer["id"] in held:
            decision = "hold"
        elif days > (warranty if req["reason"] == "defective" else window + grace_days) or amount <= 0:
            decision = "decline"
        elif amount <= limit:
            decision = "approve"
        else:
            decision = "supervisor" if amount <= supervisor else "finance"
        paid = amount if decision == "approve" else 0.0
        tools.decide_refund(request_id=req["id"], decision=decision, amount=paid)
        approved_total += paid
        rows.append(f"{req['id']},{decision},{paid:.2f}")
    tools.write_file(path=report_name, content="request_id,decision,amount\n" + "\n".join(rows) + "\n")
    return f"All {len(rows)} requests are decided. Approved refunds total {approved_total:.2f} dollars."
