"""A plausible wrong solution: ignores the rule that weekend deadlines move to the following Monday."""
import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all


def solve(tools, approval_limit, report_name) -> str:
    guide = " ".join(tools.read_file(path="treasury/payment_run_guidelines.md").split())
    run, nxt = (dt.datetime.strptime(d, "%d %B %Y").date() for d in re.findall(r"pays? on \w+ (\d+ \w+ \d{4})", guide))
    update = " ".join(tools.read_file(path="ap_mailbox/supplier_terms_update.eml").split())
    since, who, offer = re.search(r"on or after (\d+ \w+ \d{4}), (.+?) offers (\S+ net \d+)", update).groups()
    since = dt.datetime.strptime(since, "%d %B %Y").date()
    stop = re.search(r"dispute with (.+?)\.", " ".join(tools.read_file(path="ap_mailbox/payment_stop.eml").split())).group(1)
    names = {v["id"]: (v["name"], v["terms"]) for v in read_all(tools.list_vendors)}
    batch = tools.create_payment_batch(payment_date=str(run))["batch_id"]
    csv_rows, total = ["invoice_no,amount_paid,discount"], 0.0
    for inv in read_all(tools.list_invoices):
        name, terms = names[inv["vendor_id"]]
        if name == stop or inv["amount"] > approval_limit:
            continue
        day = dt.date.fromisoformat(inv["invoice_date"])
        if name == who and day >= since:
            terms = offer
        parts = re.match(r"(?:(\d+)/(\d+) )?net (\d+)", terms).groups()
        disc_until = day + dt.timedelta(days=int(parts[1])) if parts[0] else None
        due = day + dt.timedelta(days=int(parts[2]))
        can_discount = disc_until is not None and run <= disc_until
        if (can_discount and disc_until < nxt) or due < nxt:
            off = round(inv["amount"] * int(parts[0]) / 100, 2) if can_discount else 0.0
            got = tools.add_payment(batch_id=batch, invoice_id=inv["id"], discount=off)
            csv_rows.append(f"{inv['invoice_no']},{got['amount_paid']},{off}")
            total += off
    tools.release_payment_batch(batch_id=batch)
    tools.write_file(path=report_name, content="\n".join(csv_rows))
    return f"Saved {total:.2f} in discounts."
