"""A plausible wrong solution: scores correctly but breaks score ties by claim number instead of the amount claimed."""
import datetime as dt
import re
import statistics

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, excluded_peril, siu_capacity, report_name) -> str:
    card = tools.read_file(path="siu/indicator_card.md")
    mail = read_files(tools, "siu/*.eml")
    pts = [int(x) for x in re.findall(r": (\d+) points", card)]
    new_days = int(re.search(r"within (\d+) days of the policy", card).group(1))
    repeat_n = int(re.search(r"at least (\d+) other claims", card).group(1))
    late = int(re.search(r"more than (\d+) days after", card).group(1))
    factor = 2 if "more than twice" in card else 3
    limit = int(re.search(r"scoring (\d+) points", card).group(1))
    joined = "\n".join(mail.values())
    watch = {x.strip() for x in re.search(r"watch list is: (.+?)\. Treat", joined).group(1).split(",")}
    cap = siu_capacity
    every = read_all(tools.list_claims, status="all")
    open_ = [c for c in every if c["status"] == "open" and c["peril"] != excluded_peril]
    med = {p: statistics.median([c["amount"] for c in every if c["peril"] == p]) for p in {c["peril"] for c in every}}
    cleared = set()
    for t in read_files(tools, "notes/*").values():
        if "Cleared: do not flag" in t:
            cleared |= set(re.findall(r"(MC\d+): senior", t))
    accounts = {p["id"]: p["bank_account"] for p in read_all(tools.list_claimants)}
    shared = {a for a in accounts.values() if list(accounts.values()).count(a) > 1}
    shop = {s["id"]: s["name"] for s in read_all(tools.list_repair_shops)}
    hits = []
    for c in open_:
        if c["claim_no"] in cleared:
            continue
        loss = dt.date.fromisoformat(c["loss_date"])
        inc = dt.date.fromisoformat(tools.get_policy(policy_id=c["policy_id"])["inception"])
        prior = [o for o in every if o["claimant_id"] == c["claimant_id"] and o["id"] != c["id"] and o["loss_date"] >= "2025-11-30"]
        s = sum(p for p, hit in zip(pts, [(loss - inc).days <= new_days, len(prior) >= repeat_n, accounts[c["claimant_id"]] in shared,
                                          shop[c["shop_id"]] in watch, (dt.date.fromisoformat(c["reported_date"]) - loss).days > late,
                                          c["amount"] > factor * med[c["peril"]]]) if hit)
        if s >= limit:
            hits.append((s, c))
    hits.sort(key=lambda h: (-h[0], h[1]["claim_no"]))
    rows = []
    for i, (s, c) in enumerate(hits, 1):
        fid = tools.flag_claim(claim_id=c["id"], score=s)["flag_id"]
        if i <= cap:
            tools.refer_to_siu(flag_id=fid)
        rows.append(f"| {i} | {c['claim_no']} | {s} | {'yes' if i <= cap else 'no'} |")
    tools.write_file(path=report_name, content="| rank | claim_no | score | referred |\n|---|---|---|---|\n" + "\n".join(rows) + "\n")
    return f"Top claim {hits[0][1]['claim_no']}; referred {min(cap, len(hits))}."
