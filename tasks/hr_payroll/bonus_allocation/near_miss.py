"""A plausible wrong solution: ranks ties densely (1, 2, 2, 3) instead of skipping ranks after a tie."""
import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all


def solve(tools, min_score, held_department, report_name) -> str:
    minutes = " ".join(tools.read_file(path="committee/minutes_bonus_pools.md").split())
    listed = re.search(r"approved as follows: (.+?)\.", minutes).group(1)
    pools = {d: int(a.replace(",", "")) for d, a in re.findall(r"(\w+) ([\d,]+)", listed)}
    joined_by = dt.datetime.strptime(re.search(r"after (\d+ \w+ \d{4})", minutes).group(1), "%d %B %Y").date()
    rules = " ".join(tools.read_file(path="hr/bonus_scheme_rules.md").split())
    top, mid = (int(x) for x in re.search(r"Rank (\d+) or better earns 3 units, rank (\d+)", rules).groups())
    plan = set(re.findall(r"\((B\d+)\)", tools.read_file(path="hr/performance_plans.eml")))
    score = {r["employee_id"]: r["score"] for r in read_all(tools.list_review_scores, cycle=2026)}
    rid = tools.create_bonus_round(name="Bonus 2026")["round_id"]
    lines, paid = ["department,emp_no,rank,units,bonus"], 0
    for dept, pool in pools.items():
        if dept == held_department:
            continue
        team = [e for e in read_all(tools.list_employees, department=dept)
                if e["emp_no"] not in plan and dt.date.fromisoformat(e["hire_date"]) <= joined_by and score[e["id"]] >= min_score]
        distinct = sorted({score[e["id"]] for e in team}, reverse=True)
        rank = {e["id"]: distinct.index(score[e["id"]]) + 1 for e in team}
        units = {k: (3 if r <= top else 2 if r <= mid else 1) for k, r in rank.items()}
        for e in team:
            amount = pool * units[e["id"]] // sum(units.values())
            tools.record_award(round_id=rid, employee_id=e["id"], amount=amount)
            lines.append(f"{dept},{e['emp_no']},{rank[e['id']]},{units[e['id']]},{amount}")
            paid += amount
    tools.write_file(path=report_name, content="\n".join(lines))
    return f"Total awarded: {paid}"
