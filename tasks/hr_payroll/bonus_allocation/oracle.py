import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, min_score, held_department, report_name, shared_ranks=True) -> str:
    pools, pip = {}, set()
    for text in read_files(tools).values():
        flat = " ".join(text.split())
        m = re.search(r"approved as follows: (.+?)\.", flat)
        if m:
            pools = {name: int(amount.replace(",", "")) for name, amount in re.findall(r"([A-Za-z]+) ([\d,]+)", m.group(1))}
            cycle = int(re.search(r"scores from the (\d{4}) review cycle", flat).group(1))
            cutoff = dt.datetime.strptime(re.search(r"joined after (\d+ \w+ \d{4})", flat).group(1), "%d %B %Y").date()
        m = re.search(r"Rank (\d+) or better earns 3 units, rank (\d+) or better earns 2 units", flat)
        if m:
            three, two = int(m.group(1)), int(m.group(2))
        if "performance improvement plan" in flat:
            pip |= set(re.findall(r"\((B\d+)\)", flat))

    scores = {r["employee_id"]: r["score"] for r in read_all(tools.list_review_scores, cycle=cycle)}
    round_id = tools.create_bonus_round(name=f"{cycle} annual bonus")["round_id"]
    rows, total = [], 0
    for department, pool in pools.items():
        if department == held_department:
            continue
        people = [e for e in read_all(tools.list_employees, department=department)
                  if dt.date.fromisoformat(e["hire_date"]) <= cutoff and e["emp_no"] not in pip and scores[e["id"]] >= min_score]
        # shared (competition) ranks count everyone above; dense ranks count only distinct scores above
        above = [scores[e["id"]] for e in people] if shared_ranks else list({scores[e["id"]] for e in people})
        ranked = {e["id"]: 1 + sum(1 for s in above if s > scores[e["id"]]) for e in people}
        units = {i: 3 if r <= three else 2 if r <= two else 1 for i, r in ranked.items()}
        share = sum(units.values())
        for e in sorted(people, key=lambda e: ranked[e["id"]]):
            bonus = pool * units[e["id"]] // share
            tools.record_award(round_id=round_id, employee_id=e["id"], amount=bonus)
            rows.append(f"{department},{e['emp_no']},{ranked[e['id']]},{units[e['id']]},{bonus}")
            total += bonus
    tools.write_file(path=report_name, content="department,emp_no,rank,units,bonus\n" + "\n".join(rows) + "\n")
    return f"Recorded {len(rows)} awards. Total awarded across the company: {total}."
