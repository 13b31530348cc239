import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all, read_files

WORDS = {"six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}


def to_iso(text):
    return dt.datetime.strptime(text, "%A %d %B %Y").date()


def solve(tools, excluded_department, overtime_cap, apply_rate_corrections=True) -> str:
    start = end = holiday = None
    daily_rules, rates, multiplier = {}, {}, None
    for path, text in read_files(tools).items():
        period = re.search(r"period starting (\w+ \d+ \w+ \d{4}) and ending (\w+ \d+ \w+ \d{4})", text)
        if period:
            start, end = to_iso(period.group(1)), to_iso(period.group(2))
        notice = re.search(r"Subject: Public holiday - (\w+ \d+ \w+ \d{4})", text)
        if notice:
            holiday = to_iso(notice.group(1))
        daily = re.search(r"members of (Local \d+)\. Instead, any time worked beyond (\w+) hours in a single day", text.replace("\n", " "))
        if daily:
            daily_rules[daily.group(1)] = WORDS[daily.group(2)]
        paid_at = re.search(r"paid at ([\d.]+) times", text)
        if paid_at:
            multiplier = float(paid_at.group(1))
        for emp_no, rate in re.findall(r"(E\d+): the system still shows the old rate; pay ([\d.]+) per hour", text):
            rates[emp_no] = float(rate)

    lines, total_gross = 0, 0.0
    run = tools.create_pay_run(period_start=start.isoformat(), period_end=end.isoformat())
    for emp in read_all(tools.list_employees):
        if emp["employment_type"] != "employee" or emp["department"] == excluded_department:
            continue
        days = [d for d in read_all(tools.list_timesheet_entries, employee_id=emp["id"])
                if start <= dt.date.fromisoformat(d["work_date"]) <= end]
        if not days:
            continue
        holiday_hours = sum(d["hours"] for d in days if dt.date.fromisoformat(d["work_date"]) == holiday)
        others = [d for d in days if dt.date.fromisoformat(d["work_date"]) != holiday]
        limit = daily_rules.get(emp["union_local"])
        if limit is not None:
            regular = sum(min(d["hours"], limit) for d in others)
            overtime = sum(max(0.0, d["hours"] - limit) for d in others)
        else:
            per_week = {}
            for d in others:
                key = dt.date.fromisoformat(d["work_date"]).isocalendar()[:2]
                per_week[key] = per_week.get(key, 0.0) + d["hours"]
            regular = sum(min(h, 40.0) for h in per_week.values())
            overtime = sum(max(0.0, h - 40.0) for h in per_week.values())
        overtime = min(overtime, overtime_cap)  # anything beyond the cap is banked as time off
        rate = rates.get(emp["emp_no"], emp["hourly_rate"]) if apply_rate_corrections else emp["hourly_rate"]
        gross = round(rate * (regular + multiplier * overtime + 2 * holiday_hours), 2)
        tools.add_pay_line(run_id=run["run_id"], employee_id=emp["id"], regular_hours=regular,
                           overtime_hours=overtime, holiday_hours=holiday_hours, gross_pay=gross)
        lines += 1
        total_gross += gross
    tools.submit_pay_run(run_id=run["run_id"])
    return (f"The pay run for {start} to {end} is submitted with {lines} lines. "
            f"Total gross pay: {total_gross:.2f}.")
