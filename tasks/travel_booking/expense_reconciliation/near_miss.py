"""A plausible wrong solution: never checks the corporate card feed, so company-paid hotel bills are reimbursed twice."""
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, receipt_limit, report_name) -> str:
    policy = tools.read_file(path="policy/travel_expense_policy.md")
    limit = receipt_limit
    daily = {c: float(v) for c, v in re.findall(r"\| (\w+) \| (\d+) \|", policy)}
    waived = set()
    for t in read_files(tools, "approvals/*").values():
        m = re.search(r"receipt for the (.+?) hotel bill of (\S+) on claim (\d+)", t)
        if m:
            waived.add((int(m.group(3)), m.group(2), m.group(1)))
    fx = {}
    out, grand = [], 0.0
    for c in read_all(tools.list_claims):
        trip = tools.get_trip(trip_id=c["trip_id"])
        spent = {}
        for ln in read_all(tools.list_expense_lines, claim_id=c["id"]):
            if ln["currency"] not in fx:
                fx[ln["currency"]] = {r["day"]: r["eur_per_unit"] for r in read_all(tools.list_fx_rates, currency=ln["currency"])}
            eur = round(ln["amount"] * fx[ln["currency"]][ln["spent_on"]], 2)
            if ln["spent_on"] < trip["start_date"] or ln["spent_on"] > trip["end_date"]:
                d = ("rejected", 0.0, "outside_trip")
            elif not ln["has_receipt"] and eur > limit and (c["id"], ln["spent_on"], ln["merchant"]) not in waived:
                d = ("rejected", 0.0, "no_receipt")
            elif ln["category"] == "meal":
                room = daily[trip["city"]] - spent.get(ln["spent_on"], 0.0)
                pay = round(max(0.0, min(eur, room)), 2)
                spent[ln["spent_on"]] = spent.get(ln["spent_on"], 0.0) + pay
                d = ("approved", eur, "") if pay == eur else (("partial" if pay else "rejected"), pay, "meal_allowance")
            else:
                d = ("approved", eur, "")
            decision, amount, why = d
            tools.decide_line(line_id=ln["id"], decision=decision, approved_eur=amount, reason=why)
            out.append([ln["id"], decision, f"{amount:.2f}", why])
        grand += tools.release_claim(claim_id=c["id"])["amount_eur"]
    body = "\n".join(",".join(map(str, row)) for row in out)
    tools.write_file(path=report_name, content=f"line_id,decision,approved_eur,reason\n{body}\n")
    return "Total reimbursement: %.2f EUR." % grand
