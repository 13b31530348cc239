import datetime as dt
import re
import statistics

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, excluded_peril, siu_capacity, report_name, tie_break_by_amount=True) -> str:
    capacity = siu_capacity
    texts = read_files(tools)
    cleared, watch = set(), set()
    for text in texts.values():
        if "# SIU fraud indicator card" in text:
            new_days, p_new = map(int, re.search(r"within (\d+) days of the policy's inception date: (\d+) points", text).groups())
            repeat_n, as_of, p_rep = re.search(r"at least (\d+) other claims with a loss date in the 365 days before (\d+ \w+ \d{4}).*?: (\d+) points", text).groups()
            repeat_n, p_rep = int(repeat_n), int(p_rep)
            as_of = dt.datetime.strptime(as_of, "%d %B %Y").date()
            p_bank = int(re.search(r"also held by another claimant: (\d+) points", text).group(1))
            p_watch = int(re.search(r"watch list: (\d+) points", text).group(1))
            late_days, p_late = map(int, re.search(r"more than (\d+) days after the loss: (\d+) points", text).groups())
            times, p_infl = map(int, re.search(r"more than \w+(?: times)? \((\d+) times\) the median.*?: (\d+) points", text).groups())
            threshold = int(re.search(r"Flag every claim scoring (\d+) points", text).group(1))
        m = re.search(r"current watch list is: (.+?)\. Treat", text)
        if m:
            watch = {s.strip() for s in m.group(1).split(",")}
        if "Cleared: do not flag" in text:
            cleared |= set(re.findall(r"(MC\d+): senior handler", text))

    claims = read_all(tools.list_claims, status="all")
    shops = {s["id"]: s["name"] for s in read_all(tools.list_repair_shops)}
    people = read_all(tools.list_claimants)
    holders = {}
    for p in people:
        holders[p["bank_account"]] = holders.get(p["bank_account"], 0) + 1
    bank = {p["id"]: p["bank_account"] for p in people}
    by_peril = {}
    for c in claims:
        by_peril.setdefault(c["peril"], []).append(c["amount"])
    median = {k: statistics.median(v) for k, v in by_peril.items()}
    since = (as_of - dt.timedelta(days=365)).isoformat()
    recent = {}
    for c in claims:
        if c["loss_date"] >= since:
            recent.setdefault(c["claimant_id"], set()).add(c["id"])

    flagged = []
    for c in claims:
        if c["status"] != "open" or c["claim_no"] in cleared or c["peril"] == excluded_peril:
            continue
        loss = dt.date.fromisoformat(c["loss_date"])
        inception = dt.date.fromisoformat(tools.get_policy(policy_id=c["policy_id"])["inception"])
        others = len(recent.get(c["claimant_id"], set()) - {c["id"]})
        score = (p_new * ((loss - inception).days <= new_days) + p_rep * (others >= repeat_n)
                 + p_bank * (holders[bank[c["claimant_id"]]] > 1) + p_watch * (shops[c["shop_id"]] in watch)
                 + p_late * ((dt.date.fromisoformat(c["reported_date"]) - loss).days > late_days)
                 + p_infl * (c["amount"] > times * median[c["peril"]]))
        if score >= threshold:
            flagged.append((score, c))
    flagged.sort(key=lambda sc: (-sc[0], -sc[1]["amount"] if tie_break_by_amount else 0, sc[1]["claim_no"]))
    columns = "rank | claim_no | score | referred".split(" | ")  # the columns the request names
    header = "| " + " | ".join(columns) + " |\n" + "|---" * len(columns) + "|\n"
    lines = []
    for rank, (score, c) in enumerate(flagged, 1):
        flag = tools.flag_claim(claim_id=c["id"], score=score)
        if rank <= capacity:
            tools.refer_to_siu(flag_id=flag["flag_id"], note=f"rank {rank}, score {score}")
        lines.append(f"| {rank} | {c['claim_no']} | {score} | {'yes' if rank <= capacity else 'no'} |")
    tools.write_file(path=report_name, content=header + "\n".join(lines) + "\n")
    return (f"{len(flagged)} claims were flagged. The top-ranked claim is {flagged[0][1]['claim_no']} "
            f"(score {flagged[0][0]}). I referred {min(capacity, len(flagged))} claims to SIU.")
