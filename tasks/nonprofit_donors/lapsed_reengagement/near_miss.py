"""A plausible wrong solution: honours the exclusions but misses the cheque that has not been banked yet."""
import re
from datetime import date, datetime, timedelta

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, excluded_fund, report_name) -> str:
    texts = [" ".join(t.split()) for t in read_files(tools).values()]
    brief = next(t for t in texts if "re-engagement - brief" in t)
    run_day = datetime.strptime(re.search(r"selection on (\d+ \w+ \d{4})", brief).group(1), "%d %B %Y").date()
    months = int(re.search(r"more than (\d+) months", brief).group(1))
    top = int(re.search(r"top (\d+)", brief).group(1))
    bands = [float(x.replace(",", "")) for x in re.findall(r"([\d,]+) pounds", brief)[:2]]
    labels = re.findall(r'"([^"]+)"', brief)
    skip = {n for t in texts if "passed away" in t or "do not contact" in t for n in re.findall(r"S\d+", t)}
    line = run_day.replace(year=run_day.year - months // 12, month=run_day.month) if months == 12 else run_day - timedelta(days=549)
    sums, latest = {}, {}
    for g in read_all(tools.list_gifts):
        sums[g["donor_id"]] = sums.get(g["donor_id"], 0) + (0 if g["fund"] == excluded_fund else g["amount"])
        latest[g["donor_id"]] = max(latest.get(g["donor_id"], ""), g["gift_date"])
    people = read_all(tools.list_donors)
    floor = date(run_day.year - 3, run_day.month, min(run_day.day, 28)).isoformat()
    pool = [p for p in people if p["donor_no"] not in skip and p["id"] in latest and floor <= latest[p["id"]] < line.isoformat()]
    pool.sort(key=lambda p: (-sums[p["id"]], -date.fromisoformat(latest[p["id"]]).toordinal(), p["donor_no"]))
    made, out = {}, []
    for i, p in enumerate(pool[:top], 1):
        k = 0 if sums[p["id"]] >= bands[0] else 1 if sums[p["id"]] >= bands[1] or p["email_opt_out"] else 2
        if k not in made:
            made[k] = tools.create_campaign(name=labels[k], channel=("phone", "letter", "email")[k])["campaign_id"]
        tools.add_to_campaign(campaign_id=made[k], donor_id=p["id"], rank=i)
        out.append(f"{i},{p['donor_no']},{p['name']},{sums[p['id']]:.2f},{latest[p['id']]},{labels[k]}")
    tools.write_file(path=report_name, content="rank,donor_no,name,lifetime_total,last_gift,campaign\n" + "\n".join(out))
    return f"Top of the list: {pool[0]['name']}"
