"""A plausible wrong solution: applies every rule except the HR rate corrections sitting in the inbox."""
import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all

NUMBERS = {"eight": 8, "nine": 9, "ten": 10}


def solve(tools, excluded_department, overtime_cap) -> str:
    calendar = tools.read_file(path="payroll/payroll_calendar.md")
    found = re.findall(r"(\w+day \d+ \w+ \d{4})", calendar)
    start, end = (dt.datetime.strptime(x, "%A %d %B %Y").date() for x in found[:2])
    notice = tools.read_file(path="payroll/holiday_notice.txt")
    holiday = dt.datetime.strptime(re.findall(r"(\w+day \d+ \w+ \d{4})", notice)[0], "%A %d %B %Y").date()
    union_limits = {}
    for f in read_all(tools.list_files, pattern="contracts/*"):
        text = " ".join(tools.read_file(path=f["path"]).split())
        m = re.search(r"members of (Local \d+)\. Instead, any time worked beyond (\w+) hours", text)
        if m:
            union_limits[m.group(1)] = NUMBERS[m.group(2)]

    run_id = tools.create_pay_run(period_start=str(start), period_end=str(end))["run_id"]
    for emp in read_all(tools.list_employees):
        if emp["employment_type"] == "contractor" or emp["department"] == excluded_department:
            continue
        entries = read_all(tools.list_timesheet_entries, employee_id=emp["id"])
        entries = [(dt.date.fromisoformat(e["work_date"]), e["hours"]) for e in entries]
        entries = [(d, h) for d, h in entries if start <= d <= end]
        if not entries:
            continue
        hol = sum(h for d, h in entries if d == holiday)
        reg = ot = 0.0
        if emp["union_local"] in union_limits:
            cap = union_limits[emp["union_local"]]
            for d, h in entries:
                if d != holiday:
                    reg, ot = reg + min(h, cap), ot + max(0.0, h - cap)
        else:
            for week_start in (start, start + dt.timedelta(days=7)):
                week = sum(h for d, h in entries if d != holiday and week_start <= d < week_start + dt.timedelta(days=7))
                reg, ot = reg + min(week, 40.0), ot + max(0.0, week - 40.0)
        ot = min(ot, overtime_cap)
        gross = round(emp["hourly_rate"] * (reg + 1.5 * ot + 2 * hol), 2)
        tools.add_pay_line(run_id=run_id, employee_id=emp["id"], regular_hours=reg, overtime_hours=ot,
                           holiday_hours=hol, gross_pay=gross)
    total = tools.submit_pay_run(run_id=run_id)["total_gross"]
    return f"Submitted. Total gross pay is {total:.2f}."
