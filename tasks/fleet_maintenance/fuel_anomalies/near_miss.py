"""A plausible wrong solution: applies the rules but ignores the ops inbox (no tank upgrade, no night-shift
roster), though it does block the stolen card."""
import re
from datetime import datetime, timedelta

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, night_start, skipped_rule, report_name) -> str:
    texts = read_files(tools)
    rulebook = next(t for t in texts.values() if "audit rules" in t)
    hours = int(re.search(r"less than (\d+) hours", rulebook).group(1))
    lost = next(re.search(r"ending (\d{4})\).*?at (\d\d:\d\d) on (\d+) November", t, re.S) for t in texts.values() if "ending" in t)
    card = next(d["card_number"] for d in read_all(tools.list_drivers) if d["card_number"].endswith(lost.group(1)))
    since = f"2026-11-{int(lost.group(3)):02d} {lost.group(2)}"
    fleet = {v["unit_number"]: v for v in read_all(tools.list_vehicles)}
    odo, seen, out, spent = {}, {}, [], 0.0
    for t in read_all(tools.list_transactions):
        at = datetime.strptime(t["txn_time"], "%Y-%m-%d %H:%M")
        v = fleet.get(t["unit_number"])
        checks = [("stolen_card", t["card_number"] == card and t["txn_time"] >= since),
                  ("wrong_fuel", bool(v) and t["fuel_type"] != v["fuel_type"]),
                  ("over_capacity", bool(v) and t["litres"] > v["tank_litres"]),
                  ("odometer_rollback", bool(v) and t["unit_number"] in odo and t["odometer_km"] < odo[t["unit_number"]]),
                  ("rapid_refill", t["card_number"] in seen and at - seen[t["card_number"]] < timedelta(hours=hours)),
                  ("off_hours", at.weekday() >= 5 or not 5 <= at.hour < night_start)]
        hit = next((name for name, bad in checks if bad and name != skipped_rule), None)
        if v and t["odometer_km"] is not None:
            odo[t["unit_number"]] = t["odometer_km"]
        seen[t["card_number"]] = at
        if hit:
            tools.flag_transaction(transaction_id=t["id"], rule=hit)
            out.append(f"{t['id']},{t['card_number']},{hit}")
            spent += t["amount"]
    tools.block_card(card_number=card)
    tools.write_file(path=report_name, content="transaction_id,card_number,rule\n" + "\n".join(out))
    return f"Flagged {len(out)} transactions worth {spent:.2f} euros."
