"""A plausible wrong solution: applies the batch's general price tolerance to every vendor, missing procurement's note."""
import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all


def solve(tools, price_tolerance_pct, cutoff_date, report_name) -> str:
    tools.read_file(path="ap_team/matching_memo.md")
    tolerance = price_tolerance_pct / 100
    alert = " ".join(tools.read_file(path="inbox/treasury_alert.eml").split())
    blocked = re.search(r"bank account of (.+?) that", alert).group(1)
    exceptions, total = ["invoice_no,reason"], 0.0
    until = str(dt.datetime.strptime(cutoff_date, "%d %B %Y").date())
    for inv in read_all(tools.list_invoices):
        if inv["invoice_date"] > until:
            continue
        full = tools.get_invoice(invoice_id=inv["invoice_id"])
        reason = "vendor_hold" if full["vendor"] == blocked else None
        if reason is None:
            try:
                po = tools.get_purchase_order(po_number=full["po_number"])
            except Exception:
                po = None
            if po is None or po["vendor_id"] != full["vendor_id"]:
                reason = "no_matching_po"
            else:
                got = {}
                for rec in read_all(tools.list_receipts, po_number=full["po_number"]):
                    got[rec["line_no"]] = got.get(rec["line_no"], 0) + rec["qty_received"]
                ordered = {l["line_no"]: l for l in po["lines"]}
                for line in full["lines"]:
                    if line["qty"] > got.get(line["line_no"], 0):
                        reason = "quantity_variance"
                        break
                    if line["unit_price"] > ordered[line["line_no"]]["unit_price"] * (1 + tolerance) + 1e-9:
                        reason = reason or "price_variance"
        if reason is None:
            tools.approve_invoice(invoice_id=full["invoice_id"])
            total += full["amount"]
            continue
        tools.hold_invoice(invoice_id=full["invoice_id"], reason=reason)
        exceptions.append(f"{full['invoice_no']},{reason}")
    tools.write_file(path=report_name, content="\n".join(exceptions) + "\n")
    return f"Approved total: {total:,.2f}"
