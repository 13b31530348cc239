import datetime as dt
import math
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, shutdown_days, extra_carry_days, count_hiring_month=False) -> str:
    rules, corrections = {}, set()
    for text in read_files(tools).values():
        flat = " ".join(text.split())
        m = re.search(r"staff earn ([\d.]+) days of annual leave for every calendar month", flat)
        if m:
            rules["monthly"] = float(m.group(1))
            rules["years"], rules["bonus"] = map(int, re.search(r"completed (\d+) years of service .*?receives (\d+) extra days", flat).groups())
            rules["cap"] = float(re.search(r"at most (\d+) days may be carried forward", flat).group(1))
        m = re.search(r"\((P\d+)\) was booked on annual leave for three days from (\d+ \w+ \d{4})", flat)
        if m:
            corrections.add((m.group(1), dt.datetime.strptime(m.group(2), "%d %B %Y").date().isoformat()))

    forfeited_total = 0.0
    for e in read_all(tools.list_employees, status="active"):
        hire = dt.date.fromisoformat(e["hire_date"])
        # a month counts when employed on its 1st; counting the hiring month too is the mistake to avoid
        first = hire.replace(day=1) if count_hiring_month else hire
        months = sum(1 for m in range(1, 13) if first <= dt.date(2026, m, 1))
        accrued = math.floor(rules["monthly"] * months * e["fte"] * 2 + 0.5 + 1e-9) / 2
        if (hire.year + rules["years"], hire.month, hire.day) <= (2026, 12, 31):
            accrued += rules["bonus"]
        taken = sum(r["days"] for r in read_all(tools.list_leave_records, employee_id=e["id"])
                    if r["kind"] == "annual" and r["start_date"].startswith("2026-")
                    and (e["emp_no"], r["start_date"]) not in corrections) + shutdown_days
        balance = e["opening_balance"] + accrued - taken
        cap = rules["cap"] + extra_carry_days
        carried, forfeited = min(balance, cap), max(0.0, balance - cap)
        forfeited_total += forfeited
        tools.post_year_end_balance(employee_id=e["id"], accrued=accrued, taken=taken, carried_forward=carried,
                                    forfeited=forfeited)
    return f"Year-end balances are posted. In total {forfeited_total:g} days of leave are forfeited."
