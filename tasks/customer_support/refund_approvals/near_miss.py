"""A plausible wrong solution: approves the amount the customer asked for without subtracting refunds
already issued on the order, and misses the gold-member limit."""
import re
from datetime import date

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, grace_days, restocking_fee, report_name) -> str:
    texts = read_files(tools)
    policy = next(t for t in texts.values() if "Refund policy" in t)
    nums = {k: float(re.search(p, policy).group(1)) for k, p in [
        ("window", r"up to (\d+) days after"), ("warranty", r"gives them (\d+) days"),
        ("auto", r"(\d+) dollars themselves"), ("sup", r"up to (\d+) dollars go to a supervisor")]}
    people = read_all(tools.list_customers)
    held = set()
    for path, text in sorted(texts.items()):
        if "Refund holds" in text:
            for c in people:
                if c["name"] in text and f"cleared {c['name']}" not in text:
                    held.add(c["id"])
                elif f"cleared {c['name']}" in text:
                    held.discard(c["id"])
    lines, total = [], 0.0
    for req in read_all(tools.list_refund_requests):
        order = tools.get_order(order_id=req["order_id"])
        late = (date.fromisoformat(req["requested_on"]) - date.fromisoformat(order["delivered_on"])).days
        amount = min(req["amount"], order["total"]) - (restocking_fee if req["reason"] == "changed_mind" else 0)
        if order["customer_id"] in held:
            code = "hold"
        elif late > (nums["warranty"] if req["reason"] == "defective" else nums["window"] + grace_days) or amount <= 0:
            code = "decline"
        else:
            code = "approve" if amount <= nums["auto"] else ("supervisor" if amount <= nums["sup"] else "finance")
        value = round(amount, 2) if code == "approve" else 0.0
        tools.decide_refund(request_id=req["id"], decision=code, amount=value)
        total += value
        lines.append(f"{req['id']},{code},{value:.2f}")
    tools.write_file(path=report_name, content="request_id,decision,amount\n" + "\n".join(lines))
    return f"Approved {total:.2f} dollars of refunds."
