import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, approval_limit, report_name, roll_weekends=True) -> str:
    def deadline(dated, days):
        """`days` after `dated`; a Saturday or Sunday moves to the Monday after."""
        day = dated + dt.timedelta(days=int(days))
        while roll_weekends and day.weekday() >= 5:
            day += dt.timedelta(days=1)
        return day

    run = nxt = None
    stopped, new_terms = set(), {}
    for text in read_files(tools).values():
        flat = " ".join(text.split())
        m = re.search(r"This run pays on \w+ (\d+ \w+ \d{4}); the next run will pay on \w+ (\d+ \w+ \d{4})", flat)
        if m:
            run, nxt = (dt.datetime.strptime(x, "%d %B %Y").date() for x in m.groups())
        m = re.search(r"invoices dated on or after (\d+ \w+ \d{4}), (.+?) offers\s(\d+/\d+ net \d+)", flat)
        if m:
            new_terms[m.group(2)] = (dt.datetime.strptime(m.group(1), "%d %B %Y").date(), m.group(3))
        m = re.search(r"quality dispute with (.+?)\. Do not pay", flat)
        if m:
            stopped.add(m.group(1))

    vendors = {v["id"]: v for v in read_all(tools.list_vendors)}
    batch = tools.create_payment_batch(payment_date=run.isoformat())["batch_id"]
    lines, saved = [], 0.0
    for inv in read_all(tools.list_invoices, status="approved"):
        vendor = vendors[inv["vendor_id"]]
        if vendor["name"] in stopped or inv["amount"] > approval_limit:
            continue
        dated = dt.date.fromisoformat(inv["invoice_date"])
        terms = vendor["terms"]
        if vendor["name"] in new_terms and dated >= new_terms[vendor["name"]][0]:
            terms = new_terms[vendor["name"]][1]
        pct, window, net = re.fullmatch(r"(?:(\d+)/(\d+) )?net (\d+)", terms).groups()
        due = deadline(dated, net)
        window_end = deadline(dated, window) if pct else None
        live = window_end is not None and window_end >= run
        if (live and window_end < nxt) or due < nxt:
            discount = round(inv["amount"] * int(pct) / 100, 2) if live else 0.0
            payment = tools.add_payment(batch_id=batch, invoice_id=inv["id"], discount=discount)
            lines.append(f"{inv['invoice_no']},{payment['amount_paid']:.2f},{discount:.2f}")
            saved += discount
    tools.release_payment_batch(batch_id=batch)
    tools.write_file(path=report_name, content="invoice_no,amount_paid,discount\n" + "\n".join(lines) + "\n")
    return (f"The payment run for {run.isoformat()} is released with {len(lines)} payments. "
            f"Discounts saved us {saved:.2f}.")
