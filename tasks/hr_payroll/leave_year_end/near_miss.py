"""A plausible wrong solution: a 2026 hire accrues for their hiring month too, even when they joined mid-month."""
import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all


def solve(tools, shutdown_days, extra_carry_days) -> str:
    book = " ".join(tools.read_file(path="handbook/annual_leave.md").split())
    rate = float(re.search(r"earn ([\d.]+) days", book).group(1))
    years, extra = (int(x) for x in re.search(r"completed (\d+) years .*? receives (\d+) extra", book).groups())
    cap = float(re.search(r"at most (\d+) days", book).group(1)) + extra_carry_days
    fix = " ".join(tools.read_file(path="hr_notes/leave_record_correction.eml").split())
    fix_emp, fix_day = re.search(r"\((P\d+)\) was booked .*? from (\d+ \w+ \d{4})", fix).groups()
    fix_day = dt.datetime.strptime(fix_day, "%d %B %Y").date()
    lost = 0.0
    for person in read_all(tools.list_employees):
        if person["status"] != "active":
            continue
        hired = dt.date.fromisoformat(person["hire_date"])
        months = 12 if hired.year < 2026 else 13 - hired.month
        earned = round(rate * months * person["fte"] * 2 + 1e-9) / 2
        anniversary_year = hired.year + years
        if anniversary_year < 2026 or (anniversary_year == 2026):
            earned += extra
        used = float(shutdown_days)
        for rec in read_all(tools.list_leave_records, employee_id=person["id"]):
            day = dt.date.fromisoformat(rec["start_date"])
            if rec["kind"] == "annual" and day.year == 2026 and not (person["emp_no"] == fix_emp and day == fix_day):
                used += rec["days"]
        left = person["opening_balance"] + earned - used
        lost += max(0.0, left - cap)
        tools.post_year_end_balance(employee_id=person["id"], accrued=earned, taken=used,
                                    carried_forward=min(left, cap), forfeited=max(0.0, left - cap))
    return f"Forfeited in total: {lost:g} days"
