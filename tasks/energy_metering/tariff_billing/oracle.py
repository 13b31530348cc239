import re
from datetime import datetime, timedelta

from progagent_lib.task.oracle_kit import read_all, read_files


def _day(text):
    return datetime.strptime(text, "%d %B %Y").date()


def solve(tools, discount_pct, skipped_tariff, bills_name, bill_replaced_meter=True) -> str:
    period, waived, exchanges, changes = None, set(), [], []
    for text in read_files(tools).values():
        m = re.search(r"from (\d+) (\w+) to (\d+) (\w+) (\d{4}) inclusive", text)
        if m:
            first_day, first_month, last_day, last_month, year = m.groups()
            period = (_day(f"{first_day} {first_month} {year}"), _day(f"{last_day} {last_month} {year}") + timedelta(days=1))
        for name, rate, when in re.findall(r"the (.+?) tariff changes from [\d.]+p to ([\d.]+)p per kWh with effect"
                                           r"\s+from (\d+ \w+ \d{4})", text):
            changes.append((name, float(rate), _day(when)))
        if re.search(r"standing\s+charge is waived", text):
            waived |= set(re.findall(r"AC-\d+", text))
        exchanges += re.findall(r"Account (AC-\d+): faulty meter (MTR-\d+) removed and replaced by (MTR-\d+)", text)
    start, end = period
    days = (end - start).days
    tariffs = {t["code"]: t for t in read_all(tools.list_tariffs)}
    reprice = {}  # tariff code -> (new rate, effective day) for changes inside this period
    for name, rate, when in changes:
        if start < when < end:
            code = next(c for c, t in tariffs.items() if t["name"] == name)
            reprice[code] = (rate, when)

    cut_days = sorted({start, end} | {when for _, when in reprice.values()})
    registers = {}
    for day in cut_days:
        for r in read_all(tools.list_readings, read_date=day.isoformat()):
            registers.setdefault(r["meter_id"], {})[r["read_date"]] = r["register_kwh"]
    extra_meters = {}
    for account, old, new in exchanges:
        if bill_replaced_meter:
            extra_meters[account] = old
        for meter in (old, new):
            registers[meter] = {r["read_date"]: r["register_kwh"] for r in read_all(tools.list_readings, meter_id=meter)}

    def used(meter, a, b):
        series = registers[meter]
        lo, hi = max(a.isoformat(), min(series)), min(b.isoformat(), max(series))
        return series[hi] - series[lo] if lo < hi else 0

    lines, grand = ["account_no,kwh,energy_charge,standing_charge,total"], 0.0
    for c in read_all(tools.list_customers, status="live"):
        t = tariffs[c["tariff_code"]]
        if t["name"] == skipped_tariff:
            continue
        meters = [c["meter_id"]] + ([extra_meters[c["account_no"]]] if c["account_no"] in extra_meters else [])
        segments = [(start, end, t["unit_rate_pence"])]
        if c["tariff_code"] in reprice:
            rate, when = reprice[c["tariff_code"]]
            segments = [(start, when, t["unit_rate_pence"]), (when, end, rate)]
        kwh, pence = 0, 0.0
        for a, b, rate in segments:
            part = sum(used(m, a, b) for m in meters)
            kwh += part
            pence += part * rate
        energy = round(pence / 100 * (100 - discount_pct) / 100, 2)
        standing = 0.0 if c["account_no"] in waived else round(days * t["standing_pence_per_day"] / 100, 2)
        tools.create_bill(customer_id=c["id"], kwh=kwh, energy_charge=energy, standing_charge=standing)
        grand += energy + standing
        lines.append(f"{c['account_no']},{kwh},{energy:.2f},{standing:.2f},{energy + standing:.2f}")
    tools.write_file(path=bills_name, content="\n".join(lines) + "\n")
    return f"Raised {len(lines) - 1} bills; the total billed is {grand:.2f} pounds."
