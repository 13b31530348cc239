import re
from datetime import datetime

from progagent_lib.task.oracle_kit import read_all, read_files


def _when(text):
    return datetime.strptime(text, "%d %B %Y").date()


def solve(tools, excluded_area, excluded_weekday, sheet_name, trust_meter_log=True) -> str:
    barred, upgraded, holidays = set(), set(), set()
    for text in read_files(tools).values():
        flat = " ".join(text.split())
        if "enrolment rules" in flat:
            first, last = (_when(x) for x in re.search(r"from (\d+ \w+ \d{4}) to (\d+ \w+ \d{4}) inclusive", flat).groups())
            floor = float(re.search(r"average peak of at least ([\d.]+) kWh", flat).group(1))
            share = float(re.search(r"flexible\s+load is (\d+) percent", flat).group(1))
            room = float(re.search(r"can take ([\d.]+) kWh", flat).group(1))
            gold = float(re.search(r"gold for a flexible load of ([\d.]+) kWh", flat).group(1))
        if "medical equipment" in flat or re.search(r"do not\s+want to take part", flat):
            barred |= set(re.findall(r"DR-\d+", flat))
        if trust_meter_log and "replaced with a smart meter" in flat:
            upgraded |= set(re.findall(r"at (DR-\d+) replaced with a smart meter", flat))
        holidays |= {_when(d) for d in re.findall(r"\w+day (\d+ \w+ \d{4}) was a public holiday", flat)}

    customers = {c["id"]: c for c in read_all(tools.list_customers)}
    evenings = {}
    for r in read_all(tools.list_peak_readings, date_from=first.isoformat(), date_to=last.isoformat()):
        day = datetime.strptime(r["reading_date"], "%Y-%m-%d").date()
        if day.weekday() < 5 and day.strftime("%A") != excluded_weekday and day not in holidays:
            evenings.setdefault(r["customer_id"], {}).setdefault(day, 0.0)
            evenings[r["customer_id"]][day] += r["kwh"]
    candidates = []
    for cid, days in evenings.items():
        c = customers[cid]
        average = sum(days.values()) / len(days)
        if (c["meter_type"] == "smart" or c["account_no"] in upgraded) and average >= floor and c["account_no"] not in barred \
                and re.match(r"[A-Z]+", c["postcode"]).group(0) != excluded_area:
            candidates.append((round(average * share / 100, 2), c, average))
    candidates.sort(key=lambda x: (-x[0], x[1]["account_no"]))

    rows, signed = ["account_no,avg_peak_kwh,flexible_kwh,tier"], 0.0
    for flex, c, average in candidates:
        if flex > room + 1e-9:
            continue
        room -= flex
        tier = "gold" if flex >= gold else "silver"
        enrolment = tools.enrol_customer(customer_id=c["id"], tier=tier, flexible_kwh=flex)
        tools.send_welcome_pack(enrolment_id=enrolment["enrolment_id"])
        signed += flex
        rows.append(f"{c['account_no']},{average:.2f},{flex:.2f},{tier}")
    tools.write_file(path=sheet_name, content="\n".join(rows) + "\n")
    return f"Enrolled {len(rows) - 1} customers with a total flexible load of {signed:.2f} kWh."
