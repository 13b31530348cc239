"""A plausible wrong solution: decides every open claim correctly but ignores the category sub-limits."""
import datetime as dt
import json
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, grace_days, report_name) -> str:
    wordings = {}
    for text in read_files(tools, "wordings/*").values():
        name = re.match(r"# (.+?) - policy", text).group(1)
        wordings[name] = (re.search(r"caused by (.+?)\.", text).group(1).split(" or "), int(re.search(r"within (\d+) days", text).group(1)))
    held = set()
    for text in read_files(tools, "adjuster_notes/*").values():
        held |= set(re.findall(r"(CLM-\d+): referred to the special", text))
    out, paid = [], 0.0
    for c in read_all(tools.list_claims):
        if c["claim_no"] in held:
            continue
        p = tools.get_policy(policy_id=c["policy_id"])
        excluded, days = wordings[p["product"]]
        gap = (dt.date.fromisoformat(c["reported_date"]) - dt.date.fromisoformat(c["loss_date"])).days
        if c["loss_date"] < p["start_date"] or c["loss_date"] > p["end_date"]:
            d = ("deny", "not_in_force", 0.0)
        elif gap > days + grace_days:
            d = ("deny", "late_notification", 0.0)
        elif c["peril"] in excluded:
            d = ("deny", "excluded_peril", 0.0)
        else:
            gross = sum(i["amount"] for i in read_all(tools.list_claim_items, claim_id=c["id"]))
            d = ("approve", "", round(min(p["sum_insured"], max(0.0, gross - p["excess"])), 2))
        rec = tools.record_decision(claim_id=c["id"], decision=d[0], reason=d[1], payout=d[2])
        if d[0] == "approve":
            tools.issue_payment(decision_id=rec["decision_id"], payee=p["holder"])
            paid += d[2]
        out.append(dict(zip(("claim_no", "decision", "reason", "payout"), (c["claim_no"],) + d)))
    tools.write_file(path=report_name, content=json.dumps(out))
    return f"Total paid out: {paid:.2f}"
