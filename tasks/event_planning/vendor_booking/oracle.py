import re
from datetime import date, datetime, timedelta

from progagent_lib.task.oracle_kit import read_all, read_files


def euros(text):
    return float(text.replace(",", ""))


def solve(tools, skipped_service, insurance_margin_days, report_name, budget_raise=True, cheaper_wins_ties=True) -> str:
    texts = read_files(tools)
    memo = next(t for t in texts.values() if t.startswith("# Planning memo:"))
    policy = next(t for t in texts.values() if "deposit" in t and "paid in full" in t)
    event_name = re.search(r"# Planning memo: (.+)", memo).group(1).strip()
    booked_on = re.search(r"on the day we book \((\d+ \w+ \d{4})\)", " ".join(memo.split())).group(1)
    booking_day = datetime.strptime(booked_on, "%d %B %Y").date().isoformat()
    caps = {m.group(1): euros(m.group(2)) for m in re.finditer(r"^- ([\w-]+): no more than ([\d,]+) euros", memo, re.M)
            if m.group(1) != skipped_service}
    avoid = set()
    for text in texts.values():
        raise_ = re.search(r"more for the ([\w-]+) at the summit.*?go up to ([\d,]+) euros", text, re.S)
        if budget_raise and raise_ and raise_.group(1) in caps:
            caps[raise_.group(1)] = euros(raise_.group(2))
        banned = re.search(r"we do not work with (.+?) any more", text)
        if banned:
            avoid.add(banned.group(1).strip())
    threshold = euros(re.search(r"worth more than ([\d,]+) euros", policy).group(1))
    pct = float(re.search(r"deposit of (\d+)%", policy).group(1))

    event = next(e for e in read_all(tools.list_events) if e["name"] == event_name)
    quotes = read_all(tools.list_quotes, event_id=event["id"])
    insured_until = (date.fromisoformat(event["event_date"]) + timedelta(days=insurance_margin_days)).isoformat()
    rows, total = [], 0.0
    for category, cap in caps.items():
        vendors = {v["id"]: v for v in read_all(tools.list_vendors, category=category)}
        options = []
        for q in quotes:
            v = vendors.get(q["vendor_id"])
            if (v and q["amount"] <= cap and q["valid_until"] >= booking_day and v["insurance_expiry"] >= insured_until
                    and v["name"] not in avoid):
                options.append((-v["rating"], q["amount"] if cheaper_wins_ties else 0, q["id"], q["amount"], v["name"]))
        *_, quote_id, amount, vendor_name = min(options)
        booking = tools.create_booking(quote_id=quote_id)
        due = round(amount * pct / 100, 2) if amount > threshold else amount
        tools.record_payment(booking_id=booking["booking_id"], amount=due, note="deposit" if due < amount else "paid in full")
        total += due
        rows.append(f"| {category} | {vendor_name} | {amount:.2f} | {due:.2f} |")
    columns = "category | vendor | quote | paid_now".split(" | ")  # the columns the request names
    table = "| " + " | ".join(columns) + " |\n" + "|---" * len(columns) + "|\n" + "\n".join(rows) + "\n"
    tools.write_file(path=report_name, content=table)
    return f"Booked {len(rows)} vendors for {event_name}. We pay {total:.2f} euros today."
