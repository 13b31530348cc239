"""A plausible wrong solution: treats every declaration as covering the whole year and ignores cancellations."""
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, excluded_campaign, threshold, report_name) -> str:
    files = read_files(tools)
    policy = " ".join(next(t for p, t in files.items() if p.startswith("finance/") and "Gift Aid is" in t).split())
    y0, y1 = re.search(r"6 April (\d{4}) to 5 April (\d{4})", policy).groups()
    minimum = threshold
    private = {n for t in files.values() if "anonymous" in t for n in re.findall(r"D\d{4,}", t)}
    declared = {d["donor_id"] for d in read_all(tools.list_declarations)}
    people = {p["id"]: p for p in read_all(tools.list_donors)}
    sums = {}
    for g in read_all(tools.list_gifts, date_from=f"{y0}-04-06", date_to=f"{y1}-04-05"):
        if g["status"] == "refunded" or g["method"] in ("raffle ticket", "auction purchase") or g["campaign"] == excluded_campaign:
            continue
        total, eligible = sums.get(g["donor_id"], (0.0, 0.0))
        ok = g["donor_id"] in declared and people[g["donor_id"]]["country"] == "United Kingdom"
        sums[g["donor_id"]] = (total + g["amount"], eligible + (g["amount"] if ok else 0))
    lines, claim = [], 0.0
    for pid, (total, eligible) in sums.items():
        if total >= minimum:
            r = tools.issue_receipt(donor_id=pid, qualifying_total=total, gift_aid=round(eligible / 4, 2))
            who = "Anonymous" if people[pid]["donor_no"] in private else people[pid]["first_name"] + " " + people[pid]["last_name"]
            lines.append(f"{r['receipt_no']},{who},{total:.2f},{eligible / 4:.2f}")
            claim += round(eligible / 4, 2)
    tools.write_file(path=report_name, content="receipt_no,donor,qualifying_total,gift_aid\n" + "\n".join(lines))
    return f"Gift Aid to claim: {claim:.2f}"
