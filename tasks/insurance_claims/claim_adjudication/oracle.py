import datetime as dt
import json
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, grace_days, report_name, apply_sublimits=True) -> str:
    texts = read_files(tools)
    products, holds = {}, set()
    for text in texts.values():
        head = re.match(r"# (.+?) - policy wording", text)
        if head:
            excluded = re.search(r"caused by (.+?)\.\n", text).group(1).split(" or ")
            limits = {cat: float(v.replace(",", "")) for cat, v in re.findall(r"claim for ([\w ]+?) is limited to ([\d,]+) pounds", text)}
            days = int(re.search(r"within (\d+) days of the date", text).group(1))
            products[head.group(1)] = (set(excluded), limits, days)
        holds |= set(re.findall(r"(CLM-\d+): referred to the special investigations unit", text))

    report, total = [], 0.0
    for claim in read_all(tools.list_claims, status="open"):
        if claim["claim_no"] in holds:
            continue
        policy = tools.get_policy(policy_id=claim["policy_id"])
        excluded, limits, days = products[policy["product"]]
        late = (dt.date.fromisoformat(claim["reported_date"]) - dt.date.fromisoformat(claim["loss_date"])).days > days + grace_days
        if not policy["start_date"] <= claim["loss_date"] <= policy["end_date"]:
            outcome = ("deny", "not_in_force", 0.0)
        elif late:
            outcome = ("deny", "late_notification", 0.0)
        elif claim["peril"] in excluded:
            outcome = ("deny", "excluded_peril", 0.0)
        else:
            assessed = sum(min(i["amount"], limits.get(i["category"], i["amount"]) if apply_sublimits else i["amount"])
                           for i in read_all(tools.list_claim_items, claim_id=claim["id"]))
            outcome = ("approve", "", round(min(policy["sum_insured"], max(0.0, assessed - policy["excess"])), 2))
        decision = tools.record_decision(claim_id=claim["id"], decision=outcome[0], reason=outcome[1], payout=outcome[2])
        if outcome[0] == "approve":
            tools.issue_payment(decision_id=decision["decision_id"], payee=policy["holder"])
            total += outcome[2]
        report.append({"claim_no": claim["claim_no"], "decision": outcome[0], "reason": outcome[1], "payout": outcome[2]})
    tools.write_file(path=report_name, content=json.dumps(report, indent=2))
    return f"I decided {len(report)} claims. The total payout is {total:.2f} pounds."
