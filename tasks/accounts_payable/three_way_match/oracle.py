import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all, read_files

NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
           "eleven": 11}


def solve(tools, price_tolerance_pct, cutoff_date, report_name, framework_terms=True) -> str:
    general, special, held = price_tolerance_pct, {}, set()
    for text in read_files(tools).values():
        flat = " ".join(text.split())
        m = re.search(r"agreement with (.+?) lets them .*? by as much as (\w+) percent", flat)
        if m and framework_terms:
            special[m.group(1)] = NUMBERS[m.group(2)]
        m = re.search(r"change the bank account of (.+?) that we could not verify", flat)
        if m:
            held.add(m.group(1))

    last_day = dt.datetime.strptime(cutoff_date, "%d %B %Y").date().isoformat()
    holds, approved_total, orders = [], 0.0, {}
    for header in read_all(tools.list_invoices, status="pending"):
        if header["invoice_date"] > last_day:  # the next batch
            continue
        invoice = tools.get_invoice(invoice_id=header["invoice_id"])
        reason = None
        if invoice["vendor"] in held:
            reason = "vendor_hold"
        else:
            if invoice["po_number"] not in orders:
                try:
                    order = tools.get_purchase_order(po_number=invoice["po_number"])
                    received = {}
                    for r in read_all(tools.list_receipts, po_number=invoice["po_number"]):
                        received[r["line_no"]] = received.get(r["line_no"], 0) + r["qty_received"]
                    orders[invoice["po_number"]] = (order, received)
                except Exception:  # ToolError: the PO does not exist
                    orders[invoice["po_number"]] = None
            found = orders[invoice["po_number"]]
            if found is None or found[0]["vendor_id"] != invoice["vendor_id"]:
                reason = "no_matching_po"
            else:
                order, received = found
                prices = {l["line_no"]: l["unit_price"] for l in order["lines"]}
                pct = special.get(invoice["vendor"], general)
                if any(l["qty"] > received.get(l["line_no"], 0) for l in invoice["lines"]):
                    reason = "quantity_variance"
                elif any(l["unit_price"] > prices[l["line_no"]] * (1 + pct / 100) + 1e-9 for l in invoice["lines"]):
                    reason = "price_variance"
        if reason:
            tools.hold_invoice(invoice_id=invoice["invoice_id"], reason=reason)
            holds.append(f"{invoice['invoice_no']},{reason}")
        else:
            tools.approve_invoice(invoice_id=invoice["invoice_id"])
            approved_total += invoice["amount"]
    tools.write_file(path=report_name, content="invoice_no,reason\n" + "\n".join(holds) + "\n")
    return f"{len(holds)} invoices are on hold. The approved invoices total {approved_total:.2f}."
