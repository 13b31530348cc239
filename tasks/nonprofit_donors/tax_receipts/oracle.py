import re
from datetime import datetime

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, excluded_campaign, threshold, report_name, read_declarations=True) -> str:
    cancelled, anonymous = {}, set()
    for text in read_files(tools).values():
        flat = " ".join(text.split())
        policy = re.search(r"from 6 April (\d{4}) to 5 April (\d{4})", flat)
        if policy:
            start, end = f"{policy.group(1)}-04-06", f"{policy.group(2)}-04-05"
            # the payment methods that are not donations, as the policy names them ("Raffle tickets and ...")
            named = re.search(r"Only genuine donations count towards a receipt\. (.+?) are payments", flat)
            not_donations = named.group(1).lower()
            aid_rate = int(re.search(r"Gift Aid is (\d+) percent", flat).group(1)) / 100
        stop = re.search(r"cancel my Gift Aid declaration from today \((\d+ \w+ \d{4})\)", flat)
        if stop:
            number = re.search(r"supporter number is (D\d+)", flat).group(1)
            cancelled[number] = datetime.strptime(stop.group(1), "%d %B %Y").date().isoformat()
        if "remain anonymous" in flat:
            anonymous |= set(re.findall(r"Supporter number (D\d+)", flat))

    donors = {d["id"]: d for d in read_all(tools.list_donors)}
    declarations = {d["donor_id"]: d for d in read_all(tools.list_declarations)}
    totals, aided = {}, {}
    for g in read_all(tools.list_gifts):
        if not start <= g["gift_date"] <= end:
            continue
        if g["status"] != "received" or g["method"] in not_donations or g["campaign"] == excluded_campaign:
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
        aid = round(aided.get(did, 0) * aid_rate, 2)
        receipt = tools.issue_receipt(donor_id=did, qualifying_total=round(totals[did], 2), gift_aid=aid)
        d = donors[did]
        label = "Anonymous" if d["donor_no"] in anonymous else f"{d['first_name']} {d['last_name']}"
        rows.append(f"{receipt['receipt_no']},{label},{totals[did]:.2f},{aid:.2f}")
        claim += aid
    tools.write_file(path=report_name, content="\n".join(rows) + "\n")
    return f"We issued {len(rows) - 1} receipts and will claim {claim:.2f} pounds of Gift Aid in total."
