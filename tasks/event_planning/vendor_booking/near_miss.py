"""A plausible wrong solution: ignores the client's later budget e-mail and breaks rating ties by
quote id instead of price; otherwise follows the memo."""
import re
from datetime import date, timedelta

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, skipped_service, insurance_margin_days, report_name) -> str:
    docs = read_files(tools, "docs/*")
    memo = next(t for t in docs.values() if "Planning memo" in t)
    policy = next(t for t in docs.values() if "deposit" in t)
    banned = set()
    for text in read_files(tools, "inbox/*").values():
        banned |= set(re.findall(r"we do not work with (.+?) any more", text))
    caps = {c: float(v.replace(",", "")) for c, v in re.findall(r"- ([\w-]+): no more than ([\d,]+) euros", memo)
            if c != skipped_service}
    limit = float(re.search(r"more than ([\d,]+) euros", policy).group(1).replace(",", ""))
    share = float(re.search(r"(\d+)%", policy).group(1)) / 100
    name = memo.splitlines()[0].split(": ", 1)[1]
    event = [e for e in read_all(tools.list_events) if e["name"] == name][0]
    vendors = {v["id"]: v for v in read_all(tools.list_vendors)}
    cover = str(date.fromisoformat(event["event_date"]) + timedelta(days=insurance_margin_days))
    lines, paid = [], 0.0
    for cat, cap in caps.items():
        fits = [q for q in read_all(tools.list_quotes, event_id=event["id"])
                if vendors[q["vendor_id"]]["category"] == cat and q["amount"] <= cap and q["valid_until"] >= "2026-11-30"
                and vendors[q["vendor_id"]]["insurance_expiry"] >= cover and vendors[q["vendor_id"]]["name"] not in banned]
        pick = sorted(fits, key=lambda q: (-vendors[q["vendor_id"]]["rating"], q["id"]))[0]
        booking_id = tools.create_booking(quote_id=pick["id"])["booking_id"]
        now = round(pick["amount"] * share, 2) if pick["amount"] > limit else pick["amount"]
        tools.record_payment(booking_id=booking_id, amount=now)
        paid += now
        lines.append(f"| {cat} | {vendors[pick['vendor_id']]['name']} | {pick['amount']:.2f} | {now:.2f} |")
    tools.write_file(path=report_name, content="| category | vendor | quote | paid_now |\n|---|---|---|---|\n" + "\n".join(lines))
    return f"All booked; today's payments come to {paid:.2f} euros."
