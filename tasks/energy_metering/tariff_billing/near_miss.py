"""A plausible wrong solution: handles prices and waivers but bills only the account's current meter."""
import re
from datetime import date, datetime

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, discount_pct, skipped_tariff, bills_name) -> str:
    docs = read_files(tools)
    proc = next(t for t in docs.values() if "billing procedure" in t)
    m = re.search(r"from (\d+) (\w+) to (\d+) \w+ (\d{4})", proc)
    first = datetime.strptime(f"{m.group(1)} {m.group(2)} {m.group(4)}", "%d %B %Y").date()
    closing = date(first.year, first.month + 1, 1)
    notice = next(t for t in docs.values() if "with effect" in t)
    name, new_rate, when = re.search(r"the (.+?) tariff changes from [\d.]+p to ([\d.]+)p per kWh with effect\s+from (\d+ \w+ \d{4})", notice).groups()
    when = datetime.strptime(when, "%d %B %Y").date()
    waived = set(re.findall(r"AC-\d+", next(t for t in docs.values() if "hardship" in t)))
    tariffs = {t["code"]: t for t in read_all(tools.list_tariffs)}
    reg = {}
    for d in (first, when, closing):
        for r in read_all(tools.list_readings, read_date=d.isoformat()):
            reg[(r["meter_id"], d)] = r["register_kwh"]
    out, total = [], 0.0
    for c in read_all(tools.list_customers, status="live"):
        t = tariffs[c["tariff_code"]]
        if t["name"] == skipped_tariff:
            continue
        meter = c["meter_id"]
        opening = reg.get((meter, first), 0)
        if t["name"] == name:
            mid = reg.get((meter, when), opening)
            pence = (mid - opening) * t["unit_rate_pence"] + (reg[(meter, closing)] - mid) * float(new_rate)
        else:
            pence = (reg[(meter, closing)] - opening) * t["unit_rate_pence"]
        pence *= (100 - discount_pct) / 100
        kwh = reg[(meter, closing)] - opening
        sc = 0.0 if c["account_no"] in waived else round((closing - first).days * t["standing_pence_per_day"] / 100, 2)
        tools.create_bill(customer_id=c["id"], kwh=kwh, energy_charge=round(pence / 100, 2), standing_charge=sc)
        total += round(pence / 100, 2) + sc
        out.append(f"{c['account_no']},{kwh},{pence / 100:.2f},{sc:.2f},{pence / 100 + sc:.2f}")
    tools.write_file(path=bills_name, content="account_no,kwh,energy_charge,standing_charge,total\n" + "\n".join(out))
    return f"Total billed: {total:.2f}"
