"""A plausible wrong solution: breaks ROI ties by campaign id instead of conversions, so the wrong
campaign of the tied pair is cut."""
import math
import re
from datetime import date, timedelta

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, cut_pct, top_count, report_name) -> str:
    texts = read_files(tools)
    memo = next(t for t in texts.values() if "lowest-ranked" in t)
    n_weeks, n_cut = (float(re.search(p, memo).group(1)) for p in (r"last (\d+) complete", r"The (\d+) lowest"))
    pct, n_top = cut_pct, top_count
    start = (date(2026, 11, 23) - timedelta(weeks=n_weeks - 1)).isoformat()
    skip = set(re.findall(r"Heads-up: (.+?) will be paused", "\n".join(texts.values())))
    perf = {}
    for m in read_all(tools.list_weekly_metrics, week_from=start):
        s, r = perf.get(m["campaign_id"], (0.0, 0.0))
        perf[m["campaign_id"]] = (s + m["spend"], r + m["revenue"])
    pool_from = [c for c in read_all(tools.list_campaigns)
                 if c["status"] == "active" and c["channel"] != "brand" and c["name"] not in skip]
    pool_from.sort(key=lambda c: (-round((perf[c["id"]][1] - perf[c["id"]][0]) / perf[c["id"]][0] * 100), c["id"]))
    moved, out = 0.0, ["campaign,old_budget,new_budget"]
    for c in pool_from[-int(n_cut):]:
        cut = round(c["monthly_budget"] * pct / 100, 2)
        moved += cut
        tools.set_campaign_budget(campaign_id=c["id"], new_budget=round(c["monthly_budget"] - cut, 2))
        out.append(f"\"{c['name']}\",{c['monthly_budget']:.2f},{c['monthly_budget'] - cut:.2f}")
    share = math.floor(round(moved, 2) / n_top * 100) / 100
    for i, c in enumerate(pool_from[:int(n_top)]):
        extra = share + (round(moved - share * n_top, 2) if i == 0 else 0)
        tools.set_campaign_budget(campaign_id=c["id"], new_budget=round(c["monthly_budget"] + extra, 2))
        out.append(f"\"{c['name']}\",{c['monthly_budget']:.2f},{c['monthly_budget'] + extra:.2f}")
    tools.write_file(path=report_name, content="\n".join(out))
    return f"Moved {moved:.2f} euros of budget."
