import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, excluded_pi, min_amount, report_name, honour_approvals=True) -> str:
    texts = read_files(tools)
    equipment_cap, needs_trip_approval, bans_equipment, approvals = {}, set(), set(), set()
    for text in texts.values():
        header = re.match(r"# (.+?): award terms", text)
        if header:
            sponsor = header.group(1)
            cap = re.search(r"equipment purchase costing more than ([\d,]+) dollars requires", text)
            if cap:
                equipment_cap[sponsor] = float(cap.group(1).replace(",", ""))
            if re.search(r"international travel\) may only be charged with our written prior approval", text):
                needs_trip_approval.add(sponsor)
            if "Equipment is not an allowable cost" in text:
                bans_equipment.add(sponsor)
        for po, award in re.findall(r"approves the .*? on (PO \d+) .*?under award (\S+?)\.", text, re.S):
            approvals.add((award, po))

    awards = {a["id"]: a for a in read_all(tools.list_awards)}
    moved, per_award = [], {}
    for e in read_all(tools.list_expenses):
        award = awards[e["award_id"]]
        if e["account"] != "grant" or award["pi"] == excluded_pi or e["amount"] < min_amount:
            continue
        sponsor, approved = award["sponsor"], honour_approvals and (award["award_number"], e["po_number"]) in approvals
        reason = None  # each reason quotes the rule it breaks
        if not award["start_date"] <= e["posted_on"] <= award["end_date"]:
            reason = "period of performance"
        elif e["category"] == "hospitality":
            reason = "never charged to a sponsored award"
        elif e["category"] == "equipment" and sponsor in bans_equipment:
            reason = "Equipment is not an allowable cost"
        elif e["category"] == "equipment" and sponsor in equipment_cap and e["amount"] > equipment_cap[sponsor] and not approved:
            reason = "written prior approval; without it the purchase is unallowable"
        elif e["category"] == "travel_international" and sponsor in needs_trip_approval and not approved:
            reason = "may only be charged with our written prior approval"
        if reason:
            tools.transfer_expense(expense_id=e["id"], reason=reason)
            moved.append(f"{e['id']},{award['award_number']},{e['amount']:.2f},{reason}")
            per_award[award["award_number"]] = per_award.get(award["award_number"], 0) + e["amount"]
    tools.write_file(path=report_name, content="expense_id,award_number,amount,reason\n" + "\n".join(moved) + "\n")
    top = max(per_award, key=per_award.get)
    return (f"I moved {len(moved)} charges totalling {sum(per_award.values()):.2f} dollars to the department account. "
            f"The award with the most moved off it is {top} ({per_award[top]:.2f}).")
