import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all, read_files

PERIOD_START = dt.date(2026, 7, 1).isoformat()  # the request's period: the second half of 2026


def solve(tools, effort_limit, excluded_department, cap_every_award=True) -> str:
    files = read_files(tools)
    teaching = clinical = cap = clinical_dept = capped_sponsor = named_award = None
    for text in files.values():
        flat = " ".join(text.split())
        m = re.search(r"Faculty always keep (\d+)% of their effort", flat)
        if m:
            teaching = float(m.group(1))
        m = re.search(r"faculty in (.+?) also reserve (\d+)% of their\s+effort for clinical", flat)
        if m:
            clinical_dept, clinical = m.group(1), float(m.group(2))
        m = re.search(r"limited to an annual rate of\s+\$([\d,]+)", flat)
        if m:
            cap = float(m.group(1).replace(",", ""))
            capped_sponsor = text.splitlines()[0].strip()
            named_award = re.search(r"Notice of award - (\S+)", flat).group(1)
    people = {p["id"]: p for p in read_all(tools.list_people)}
    grants = {g["id"]: g for g in read_all(tools.list_grants)}
    totals, uncovered = {}, 0.0
    for line in read_all(tools.list_effort_lines):
        grant = grants[line["grant_id"]]
        if grant["end_date"] < PERIOD_START or people[line["person_id"]]["department"] == excluded_department:
            continue
        pid = line["person_id"]
        totals[pid] = totals.get(pid, 0.0) + line["charged_pct"] + line["cost_shared_pct"]
        salary = people[pid]["annual_salary"]
        if grant["sponsor"] == capped_sponsor and salary > cap and (cap_every_award or grant["code"] == named_award):
            uncovered += line["charged_pct"] / 100 * (salary - cap) / 2
    flagged = 0
    for pid in sorted(totals):
        person = people[pid]
        total = totals[pid]
        if person["role"] == "faculty":
            total += teaching + (clinical if person["department"] == clinical_dept else 0)
        cert = tools.certify_effort(person_id=pid, total_effort_pct=total)
        if total > effort_limit:
            tools.flag_overcommitment(certification_id=cert["certification_id"], excess_pct=round(total - effort_limit, 4))
            flagged += 1
    return (f"Certified {len(totals)} people and flagged {flagged} over-commitments. Salary above the sponsor cap "
            f"that we must cover this period: ${uncovered:,.2f}.")
