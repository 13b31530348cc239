"""A plausible wrong solution: breaks ties on expected recovery by claim number instead of loss date."""
import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all


def solve(tools, capacity, min_fault, report_name) -> str:
    memo = " ".join(tools.read_file(path="memos/recovery_memo_2026.md").split())
    legal = " ".join(tools.read_file(path="mail/2026-11-18_limitation.eml").split())
    numbers = [int(x) for x in re.findall(r"(\d+)%", memo)]
    business, insured, uninsured = numbers[:3]
    floor = float(re.search(r"below \$([\d,]+)", memo).group(1).replace(",", ""))
    counsel = float(re.search(r"above \$([\d,]+)", memo).group(1).replace(",", ""))
    years = int(re.search(r"within (\d+) years", legal).group(1))
    cutoff = dt.datetime.strptime(re.search(r"before (\d+ \w+ \d{4})", legal).group(1), "%d %B %Y").date()
    picks = []
    for c in read_all(tools.list_claims, status="paid"):
        if not c["third_party_id"] or c["third_party_fault_pct"] < min_fault:
            continue
        loss = dt.date.fromisoformat(c["loss_date"])
        if (loss.year + years, loss.month, loss.day) < (cutoff.year, cutoff.month, cutoff.day):
            continue
        p = tools.get_third_party(third_party_id=c["third_party_id"])
        kfk = re.search(r"agreement with (.+?):", " ".join(tools.read_file(path="mail/2026-11-20_knock_for_knock.eml").split()))
        if p["kind"] == "municipality" or p["insurer"] == kfk.group(1):
            continue
        rate = business if p["kind"] == "business" else (insured if p["insurer"] else uninsured)
        value = round(c["paid_amount"] * c["third_party_fault_pct"] / 100 * rate / 100, 2)
        if value >= floor:
            picks.append((-value, c["claim_no"], c["id"], p["name"], value))
    picks.sort()
    out = ["rank,claim_no,third_party,expected_recovery"]
    for i, (_, no, cid, name, value) in enumerate(picks[:capacity], 1):
        case = tools.open_recovery_case(claim_id=cid, expected_recovery=value)
        tools.assign_case(case_id=case["case_id"], handler="outside_counsel" if value > counsel else "recovery_desk")
        out.append(f'{i},{no},"{name}",{value:.2f}')
    tools.write_file(path=report_name, content="\n".join(out) + "\n")
    return f"Opened {len(out) - 1} cases worth {sum(p[4] for p in picks[:capacity]):.2f} in expected recoveries."
