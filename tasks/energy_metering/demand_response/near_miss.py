"""A plausible wrong solution: applies the rules but goes by the meter type on record, missing the exchange."""
import re
from datetime import date, datetime

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, excluded_area, excluded_weekday, sheet_name) -> str:
    texts = [" ".join(t.split()) for t in read_files(tools).values()]
    rules = next(t for t in texts if "enrolment rules" in t)
    d0, d1 = (datetime.strptime(x, "%d %B %Y").date() for x in re.search(r"from (\d+ \w+ \d{4}) to (\d+ \w+ \d{4})", rules).groups())
    need, pct, cap, gold = (float(re.search(p, rules).group(1)) for p in
                            (r"at least ([\d.]+) kWh", r"(\d+) percent", r"take ([\d.]+) kWh", r"gold for a flexible load of ([\d.]+)"))
    off = {a for t in texts if "medical" in t or "do not want" in t for a in re.findall(r"DR-\d+", t)}
    hol = {datetime.strptime(x, "%d %B %Y").date() for t in texts for x in re.findall(r"(\d+ \w+ \d{4}) was a public holiday", t)}
    people = {c["id"]: c for c in read_all(tools.list_customers) if c["meter_type"] == "smart" and c["account_no"] not in off
              and re.match(r"[A-Z]+", c["postcode"]).group(0) != excluded_area}
    sums = {}
    for r in read_all(tools.list_peak_readings, date_from=str(d0), date_to=str(d1)):
        d = date.fromisoformat(r["reading_date"])
        if r["customer_id"] in people and d.weekday() < 5 and d.strftime("%A") != excluded_weekday and d not in hol:
            sums.setdefault(r["customer_id"], {}).setdefault(d, 0)
            sums[r["customer_id"]][d] += r["kwh"]
    pool = sorted(((round(sum(v.values()) / len(v) * pct / 100, 2), people[k]["account_no"], k, sum(v.values()) / len(v))
                   for k, v in sums.items() if sum(v.values()) / len(v) >= need), key=lambda x: (-x[0], x[1]))
    lines, total = [], 0.0
    for flex, acct, cid, avg in pool:
        if flex <= cap:
            cap -= flex
            tier = "gold" if flex >= gold else "silver"
            tools.send_welcome_pack(enrolment_id=tools.enrol_customer(customer_id=cid, tier=tier, flexible_kwh=flex)["enrolment_id"])
            total += flex
            lines.append(f"{acct},{avg:.2f},{flex:.2f},{tier}")
    tools.write_file(path=sheet_name, content="account_no,avg_peak_kwh,flexible_kwh,tier\n" + "\n".join(lines))
    return f"Total flexible load: {total:.2f} kWh"
