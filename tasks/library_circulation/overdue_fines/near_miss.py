"""A plausible wrong solution: counts the days the branch was closed as late days; the rest follows
the policy."""
import re
from datetime import date

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, fine_free_format, min_fine, report_name) -> str:
    staff = read_files(tools, "staff/*")
    policy = next(t for t in staff.values() if "fines policy" in t)
    rate = {w.lower().rstrip("s"): float(v) for w, v in re.findall(r"(books|DVDs|audiobooks|magazines) (\d+\.\d+) a day", policy)}
    grace = int(re.search(r"first (\d+) late", policy).group(1))
    cap = float(re.search(r"more than (\d+\.\d+)", policy).group(1))
    limit = float(re.search(r"add up to (\d+\.\d+)", policy).group(1))
    week = next(t for t in staff.values() if "Food for Fines week" in t)
    start, end = [date(2026, 11, int(d)) for d in re.findall(r"(\d{1,2}) November", week)]
    cards = {p["id"]: p for p in read_all(tools.list_patrons)}
    fmt = {i["id"]: i["format"] for i in read_all(tools.list_items)}
    owed = {}
    for f in read_all(tools.list_fines):
        if f["status"] == "unpaid":
            owed[f["patron_id"]] = owed.get(f["patron_id"], 0) + f["amount"]
    lines, total = [], 0.0
    for loan in read_all(tools.list_loans, returned_from="2026-11-01", returned_to="2026-11-30"):
        back = date.fromisoformat(loan["returned_on"])
        if cards[loan["patron_id"]]["card_type"] == "child" or start <= back <= end:
            continue
        if fmt[loan["item_id"]] == fine_free_format.lower().rstrip("s"):
            continue
        days = (back - date.fromisoformat(loan["due_date"])).days - grace
        amount = round(min(cap, days * rate[fmt[loan["item_id"]]]), 2)
        if days > 0 and amount >= min_fine:
            tools.assess_fine(loan_id=loan["id"], amount=amount)
            owed[loan["patron_id"]] = owed.get(loan["patron_id"], 0) + amount
            total += amount
            lines.append(f"{loan['id']},{cards[loan['patron_id']]['card_number']},{days},{amount:.2f}")
    n = 0
    for pid, amount in owed.items():
        if amount >= limit:
            tools.block_patron(card_number=cards[pid]["card_number"], reason="fines over the limit")
            n += 1
    tools.write_file(path=report_name, content="loan_id,card_number,days_charged,amount\n" + "\n".join(lines))
    return f"Fines entered: {total:.2f} dollars in total; {n} cards blocked."
