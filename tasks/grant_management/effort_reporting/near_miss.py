"""A plausible wrong solution: applies the salary cap only to the award named in the letter, not to
every award of that sponsor."""
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, effort_limit, excluded_department) -> str:
    texts = read_files(tools)
    joined = " ".join(" ".join(texts.values()).split())
    teaching = float(re.search(r"keep (\d+)% of their effort", joined).group(1))
    m = re.search(r"faculty in (\w+) also reserve (\d+)%", joined)
    dept, clinical = m.group(1), float(m.group(2))
    cap = float(re.search(r"annual rate of \$([\d,]+)", joined).group(1).replace(",", ""))
    capped_code = next(re.search(r"Notice of award - (\S+)", t).group(1) for t in texts.values() if "Notice of award" in t)
    people = {p["id"]: p for p in read_all(tools.list_people)}
    grants = {g["id"]: g for g in read_all(tools.list_grants)}
    total, extra = {}, 0.0
    for line in read_all(tools.list_effort_lines):
        g = grants[line["grant_id"]]
        if g["end_date"] < "2026-07-01" or people[line["person_id"]]["department"] == excluded_department:
            continue
        pid = line["person_id"]
        total[pid] = total.get(pid, 0.0) + line["charged_pct"] + line["cost_shared_pct"]
        if g["code"] == capped_code and people[pid]["annual_salary"] > cap:
            extra += line["charged_pct"] / 100 * (people[pid]["annual_salary"] - cap) / 2
    for pid, pct in sorted(total.items()):
        if people[pid]["role"] == "faculty":
            pct += teaching + (clinical if people[pid]["department"] == dept else 0)
        cid = tools.certify_effort(person_id=pid, total_effort_pct=pct)["certification_id"]
        if pct > effort_limit:
            tools.flag_overcommitment(certification_id=cid, excess_pct=pct - effort_limit)
    return f"All effort certified; uncovered salary above the cap is {extra:.2f} dollars."
