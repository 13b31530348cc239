import re
from datetime import datetime, timedelta

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, night_start, skipped_rule, report_name, read_ops_news=True) -> str:
    texts = read_files(tools)
    rules = next(t for t in texts.values() if "Fuel card audit rules" in t)
    window = timedelta(hours=int(re.search(r"less than (\d+) hours after", rules).group(1)))
    drivers = read_all(tools.list_drivers)
    tank_override, night_names, stolen = {}, set(), None
    for text in texts.values():
        aux = re.search(r"(V-\d+) came out of the workshop.*?now holds (\d+) litres", text, re.S)
        if aux and read_ops_news:
            tank_override[aux.group(1)] = int(aux.group(2))
        roster = re.search(r"Night-shift drivers for November are (.+?) and (.+?)\. They", text)
        if roster and read_ops_news:
            night_names |= {roster.group(1), roster.group(2)}
        lost = re.search(r"card ending (\d{4})\).*?at (\d\d:\d\d) on (\d+) November", text, re.S)
        if lost:
            card = next(d["card_number"] for d in drivers if d["card_number"].endswith(lost.group(1)))
            stolen = (card, f"2026-11-{int(lost.group(3)):02d} {lost.group(2)}")
    night_cards = {d["card_number"] for d in drivers if d["name"] in night_names}
    vehicles = {v["unit_number"]: v for v in read_all(tools.list_vehicles)}

    last_odo, last_card, flagged = {}, {}, []
    for t in read_all(tools.list_transactions):
        when = datetime.strptime(t["txn_time"], "%Y-%m-%d %H:%M")
        v = vehicles.get(t["unit_number"])
        rule = None
        if stolen and t["card_number"] == stolen[0] and t["txn_time"] >= stolen[1]:
            rule = "stolen_card"
        elif skipped_rule != "wrong_fuel" and v and t["fuel_type"] != v["fuel_type"]:
            rule = "wrong_fuel"
        elif skipped_rule != "over_capacity" and v and t["litres"] > tank_override.get(v["unit_number"], v["tank_litres"]):
            rule = "over_capacity"
        elif skipped_rule != "odometer_rollback" and v and t["unit_number"] in last_odo and t["odometer_km"] < last_odo[t["unit_number"]]:
            rule = "odometer_rollback"
        elif skipped_rule != "rapid_refill" and t["card_number"] in last_card and when - last_card[t["card_number"]] < window:
            rule = "rapid_refill"
        elif (when.weekday() >= 5 or when.hour >= night_start or when.hour < 5) and t["card_number"] not in night_cards:
            rule = "off_hours"
        if v and t["odometer_km"] is not None:
            last_odo[t["unit_number"]] = t["odometer_km"]
        last_card[t["card_number"]] = when
        if rule:
            tools.flag_transaction(transaction_id=t["id"], rule=rule)
            flagged.append((t["id"], t["card_number"], rule, t["amount"]))
    if stolen:
        tools.block_card(card_number=stolen[0])
    lines = ["transaction_id,card_number,rule"] + [f"{i},{card},{rule}" for i, card, rule, _ in flagged]
    tools.write_file(path=report_name, content="\n".join(lines) + "\n")
    total = sum(a for *_, a in flagged)
    return f"I flagged {len(flagged)} transactions; together they come to {total:.2f} euros."
