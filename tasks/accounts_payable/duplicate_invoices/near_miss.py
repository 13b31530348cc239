"""A plausible wrong solution: compares invoice numbers literally, so re-keyed numbers slip through."""
import datetime as dt
import json
import re

from progagent_lib.task.oracle_kit import read_all


def solve(tools, window_days, min_recovery, report_name) -> str:
    tools.read_file(path="ap_procedures/duplicate_check.md")
    days = window_days
    note = " ".join(tools.read_file(path="ap_inbox/weekly_supplier.eml").split())
    weekly_name = re.search(r"Reminder: (.+?) bills", note).group(1)
    weekly = {v["id"] for v in read_all(tools.list_vendors) if v["name"] == weekly_name}
    history, found = {}, []
    for inv in read_all(tools.list_invoices):
        when = dt.date.fromisoformat(inv["invoice_date"])
        for old in history.get(inv["vendor_id"], []):
            if old["invoice_no"] == inv["invoice_no"]:
                found.append((inv, old, "number"))
                break
            gap = abs((when - dt.date.fromisoformat(old["invoice_date"])).days)
            if inv["vendor_id"] not in weekly and old["amount"] == inv["amount"] and gap <= days:
                found.append((inv, old, "amount_date"))
                break
        history.setdefault(inv["vendor_id"], []).append(inv)
    case_of, owed = {}, 0.0
    for dup, orig, _ in found:
        if dup["status"] == "paid":
            if dup["amount"] < min_recovery:
                continue
            case_of.setdefault(dup["vendor_id"], tools.open_recovery_case(vendor_id=dup["vendor_id"])["case_id"])
            tools.add_to_recovery_case(case_id=case_of[dup["vendor_id"]], invoice_id=dup["id"])
            owed += dup["amount"]
        else:
            tools.void_invoice(invoice_id=dup["id"], duplicate_of=orig["id"])
    tools.write_file(path=report_name, content=json.dumps([{"duplicate": d["id"], "original": o["id"], "rule": r} for d, o, r in found]))
    return f"To recover: {owed:.2f}"
