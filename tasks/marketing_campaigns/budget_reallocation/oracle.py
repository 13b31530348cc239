import math
import re
from datetime import date, datetime, timedelta

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, cut_pct, top_count, report_name, conversions_break_ties=True) -> str:
    texts = read_files(tools)
    memo = next(t for t in texts.values() if "budget shuffle" in t.lower() and "lowest-ranked" in t)
    weeks = int(re.search(r"last (\d+) complete weeks", memo).group(1))
    cut_count = int(re.search(r"The (\d+) lowest-ranked", memo).group(1))
    # the memo gives the last week's start without its year; the metrics' dates carry the year
    last_start = re.search(r"the most recent of which started on \w+ (\d+ \w+)", " ".join(memo.split())).group(1)
    year = date.fromisoformat(tools.list_weekly_metrics(page=1)["items"][0]["week_start"]).year
    last_week = datetime.strptime(f"{last_start} {year}", "%d %B %Y").date()
    window_start = (last_week - timedelta(weeks=weeks - 1)).isoformat()
    paused = {m.group(1).strip() for t in texts.values() for m in [re.search(r"Heads-up: (.+?) will be paused", t)] if m}
    brand_exempt = any("brand campaigns" in t and "cannot be cut" in t for t in texts.values())

    campaigns = {c["id"]: c for c in read_all(tools.list_campaigns)}
    totals = {}
    for m in read_all(tools.list_weekly_metrics, week_from=window_start):
        t = totals.setdefault(m["campaign_id"], [0.0, 0.0, 0])
        t[0], t[1], t[2] = t[0] + m["spend"], t[1] + m["revenue"], t[2] + m["conversions"]
    eligible = [c for c in campaigns.values() if c["status"] == "active" and c["name"] not in paused
                and not (brand_exempt and c["channel"] == "brand")]

    def rank_key(c):
        spend, revenue, conversions = totals[c["id"]]
        return (-round((revenue - spend) / spend * 100), -conversions if conversions_break_ties else c["id"])

    order = sorted(eligible, key=rank_key)
    new_budget, pool = {}, 0.0
    for c in order[-cut_count:]:
        cut = round(c["monthly_budget"] * cut_pct / 100, 2)
        pool = round(pool + cut, 2)
        new_budget[c["id"]] = round(c["monthly_budget"] - cut, 2)
    share = math.floor(pool / top_count * 100 + 1e-6) / 100
    leftover = round(pool - share * top_count, 2)
    for rank, c in enumerate(order[:top_count]):
        new_budget[c["id"]] = round(c["monthly_budget"] + share + (leftover if rank == 0 else 0), 2)

    lines = ["campaign,old_budget,new_budget"]
    for cid, budget in new_budget.items():
        tools.set_campaign_budget(campaign_id=cid, new_budget=budget, note="December budget shuffle")
        name = campaigns[cid]["name"]
        lines.append(f"\"{name}\",{campaigns[cid]['monthly_budget']:.2f},{budget:.2f}")
    tools.write_file(path=report_name, content="\n".join(lines) + "\n")
    return f"I changed {len(new_budget)} budgets and moved {pool:.2f} euros in total."
