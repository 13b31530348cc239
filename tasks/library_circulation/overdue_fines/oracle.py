import calendar
import re
from datetime import date, datetime, timedelta

from progagent_lib.task.oracle_kit import read_all, read_files

FORMAT_WORDS = {"books": "book", "DVDs": "dvd", "audiobooks": "audiobook", "magazines": "magazine"}


def dates_in(text):
    return [datetime.strptime(f"{d} {m} 2026", "%d %B %Y").date()
            for d, m in re.findall(r"(\d{1,2}) ([A-Z][a-z]+)", text) if m in calendar.month_name]


def solve(tools, fine_free_format, min_fine, report_name, skip_closed_days=True) -> str:
    texts = read_files(tools)
    policy = next(t for t in texts.values() if "Overdue fines policy" in t)
    rates = {FORMAT_WORDS[w]: float(v) for w, v in re.findall(r"(books|DVDs|audiobooks|magazines) (\d+\.\d+) a day", policy)}
    grace = int(re.search(r"The first (\d+) late day", policy).group(1))
    cap = float(re.search(r"more than (\d+\.\d+) dollars", policy).group(1))
    block_at = float(re.search(r"add up to (\d+\.\d+) dollars", policy).group(1))
    closed = set(dates_in(next(t for t in texts.values() if "closed to the public" in t)))
    closed = closed if skip_closed_days else set()
    amnesty = dates_in(next(t for t in texts.values() if "Food for Fines week runs" in t))

    patrons = {p["id"]: p for p in read_all(tools.list_patrons)}
    formats = {i["id"]: i["format"] for i in read_all(tools.list_items)}
    owed = {}
    for fine in read_all(tools.list_fines):
        if fine["status"] == "unpaid":
            owed[fine["patron_id"]] = owed.get(fine["patron_id"], 0) + fine["amount"]

    rows, total = [], 0.0
    for loan in read_all(tools.list_loans, returned_from="2026-11-01", returned_to="2026-11-30"):
        patron = patrons[loan["patron_id"]]
        due, back = date.fromisoformat(loan["due_date"]), date.fromisoformat(loan["returned_on"])
        fmt = formats[loan["item_id"]]
        if patron["card_type"] == "child" or amnesty[0] <= back <= amnesty[1] or fmt == FORMAT_WORDS[fine_free_format]:
            continue
        late = [due + timedelta(days=k) for k in range(1, (back - due).days + 1)]
        days = sum(1 for d in late if d not in closed) - grace
        if days <= 0:
            continue
        amount = round(min(cap, days * rates[fmt]), 2)
        if amount < min_fine - 1e-9:
            continue  # written off
        tools.assess_fine(loan_id=loan["id"], amount=amount)
        owed[patron["id"]] = owed.get(patron["id"], 0) + amount
        total += amount
        rows.append(f"{loan['id']},{patron['card_number']},{days},{amount:.2f}")
    blocked = 0
    for pid, amount in owed.items():
        if amount >= block_at - 1e-9:
            tools.block_patron(card_number=patrons[pid]["card_number"], reason=f"unpaid fines {amount:.2f}")
            blocked += 1
    tools.write_file(path=report_name, content="loan_id,card_number,days_charged,amount\n" + "\n".join(rows) + "\n")
    return f"I entered {len(rows)} fines totalling {total:.2f} dollars and blocked {blocked} cards."
