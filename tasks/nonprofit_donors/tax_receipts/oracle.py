import re
from datetime import datetime

from progagent_lib.task.oracle_kit import read_all, read_files

NOT_DONATIONS = ("raffle ticket", "auction purchase")


def solve(tools, excluded_campaign, threshold, report_name, read_declarations=True) -> str:
    cancelled, anonymous = {}, set()
    for text in read_files(tools).values():
        flat = " ".join(text.split())
        policy = re.search(r"from 6 April (\d{4}) to 5 April (\d{4})", flat)
        if policy:
            start, end = f"{policy.group(1)}-04-06", f"{policy.group(2)}-04-05"
        stop = re.search(r"cancel my Gift Aid declaration from today \((\d+ \w+ \d{4})\)", flat)
        if stop:
            number = re.search(r"supporter number is (D\d+)", flat).group(1)
            cancelled[number] = datetime.strptime(stop.group(1), "%d %B %Y").date().isoformat()
        if "remain anonymous" in flat:
            anonymous |= set(re.findall(r"Supporter number (D\d+)", flat))

    donors = {d["id"]: d for d in read_all(tools.list_donors)}
    declarations = {d["donor_id"]: d for d in read_all(tools.list_declarations)}
    totals, aided = {}, {}
    for g in read_all(tools.list_gifts, date_from=start, date_to=end):
        if g["status"] != "received" or g["method"] in NOT_DONATIONS or g["campaign"] == excluded_campaign:
            continue
        donor = donors[g["donor_id"]]
        totals[donor["id"]] = totals.get(donor["id"], 0) + g["amount"]
        dec = declarations.get(donor["id"])
        if dec is None or donor["country"] != "United Kingdom":
            continue
        if read_declarations and dec["covers"] == "future gifts only" and g["gift_date"] < dec["signed_on"]:
            continue
        if read_declarations and donor["donor_no"] in cancelled and g["gift_date"] >= cancelled[donor["donor_no"]]:
            continue
        aided[donor["id"]] = aided.get(donor["id"], 0) + g["amount"]

    rows, claim = ["receipt_no,donor,qualifying_total,gift_aid"], 0.0
    for did in sorted(totals):
        if totals[did] < threshold:
            continue
        aid = round(aided.get(did, 0) * 0.25, 2)
        receipt = tools.issue_receipt(donor_id=did, qualifying_total=round(totals[did], 2), gift_aid=aid)
        d = donors[did]
        label = "Anonymous" if d["donor_no"] in anonymous else f"{d['first_name']} {d['last_name']}"
        rows.append(f"{receipt['receipt_no']},{label},{totals[did]:.2f},{aid:.2f}")
        claim += aid
    tools.write_file(path=report_name, content="\n".join(rows) + "\n")
    return f"We issued {len(rows) - 1} receipts and will claim {claim:.2f} pounds of Gift Aid in total."
