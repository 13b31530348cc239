import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, receipt_limit, report_name, check_card=True) -> str:
    texts = read_files(tools)
    excused = set()
    for text in texts.values():
        if "# Travel expense policy" in text:
            allowance = {c: float(v) for c, v in re.findall(r"^\| (\w+) \| (\d+) \|$", text, flags=re.M)}
        m = re.search(r"lost the receipt for the (.+?) hotel bill of (\d{4}-\d\d-\d\d) on claim (\d+)", text)
        if m:
            excused.add((int(m.group(3)), m.group(2), m.group(1)))

    rates = {}

    def rate(currency, day):
        if currency not in rates:
            rates[currency] = {r["day"]: r["eur_per_unit"] for r in read_all(tools.list_fx_rates, currency=currency)}
        return rates[currency][day]

    rows, total = [], 0.0
    for claim in read_all(tools.list_claims):
        trip = tools.get_trip(trip_id=claim["trip_id"])
        card = {(t["posted_on"], t["merchant"], t["amount"], t["currency"]) for t in read_all(tools.list_card_transactions, employee_id=claim["employee_id"])}
        left, claim_total = {}, 0.0
        for line in read_all(tools.list_expense_lines, claim_id=claim["id"]):
            eur = round(line["amount"] * rate(line["currency"], line["spent_on"]), 2)
            if not trip["start_date"] <= line["spent_on"] <= trip["end_date"]:
                outcome = ("rejected", 0.0, "outside_trip")
            elif check_card and (line["spent_on"], line["merchant"], line["amount"], line["currency"]) in card:
                outcome = ("rejected", 0.0, "card_paid")
            elif not line["has_receipt"] and eur > receipt_limit and (claim["id"], line["spent_on"], line["merchant"]) not in excused:
                outcome = ("rejected", 0.0, "no_receipt")
            elif line["category"] == "meal":
                budget = left.setdefault(line["spent_on"], allowance[trip["city"]])
                pay = round(min(eur, budget), 2)
                left[line["spent_on"]] = round(budget - pay, 2)
                outcome = ("approved", eur, "") if pay == eur else ("partial" if pay > 0 else "rejected", pay, "meal_allowance")
            else:
                outcome = ("approved", eur, "")
            tools.decide_line(line_id=line["id"], decision=outcome[0], approved_eur=outcome[1], reason=outcome[2])
            rows.append(f"{line['id']},{outcome[0]},{outcome[1]:.2f},{outcome[2]}")
            claim_total += outcome[1]
        tools.release_claim(claim_id=claim["id"])
        total += round(claim_total, 2)
    tools.write_file(path=report_name, content="line_id,decision,approved_eur,reason\n" + "\n".join(rows) + "\n")
    return f"All claims are decided and released. We will reimburse {total:.2f} EUR in total."
