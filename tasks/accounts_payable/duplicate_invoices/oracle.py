import datetime as dt
import json
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, window_days, min_recovery, report_name, normalise_numbers=True) -> str:
    def canonical(number):
        """The number without case, spaces, hyphens, slashes or leading zeros (as the procedure compares them)."""
        return re.sub(r"(?<!\d)0+(?=\d)", "", re.sub(r"[\s\-/]", "", number.upper())) if normalise_numbers else number

    window, fixed_billers = window_days, set()
    for text in read_files(tools).values():
        flat = " ".join(text.split())
        m = re.search(r"Reminder: (.+?) bills us the same fixed charge every single week", flat)
        if m:
            fixed_billers.add(m.group(1))
    vendors = {v["id"]: v["name"] for v in read_all(tools.list_vendors)}

    pairs, by_vendor = [], {}
    for inv in read_all(tools.list_invoices):
        earlier = by_vendor.setdefault(inv["vendor_id"], [])
        day = dt.date.fromisoformat(inv["invoice_date"])
        for other in earlier:
            if canonical(other["invoice_no"]) == canonical(inv["invoice_no"]):
                pairs.append((inv, other, "number"))
                break
            if (vendors[inv["vendor_id"]] not in fixed_billers and other["amount"] == inv["amount"]
                    and abs((dt.date.fromisoformat(other["invoice_date"]) - day).days) <= window):
                pairs.append((inv, other, "amount_date"))
                break
        earlier.append(inv)

    cases, to_recover = {}, 0.0
    for dup, original, _ in pairs:
        if dup["status"] == "posted":
            tools.void_invoice(invoice_id=dup["id"], duplicate_of=original["id"])
        elif dup["status"] == "paid" and dup["amount"] >= min_recovery:
            if dup["vendor_id"] not in cases:
                cases[dup["vendor_id"]] = tools.open_recovery_case(vendor_id=dup["vendor_id"])["case_id"]
            tools.add_to_recovery_case(case_id=cases[dup["vendor_id"]], invoice_id=dup["id"])
            to_recover += dup["amount"]
    report = [{"duplicate": d["id"], "original": o["id"], "rule": rule} for d, o, rule in pairs]
    tools.write_file(path=report_name, content=json.dumps(report, indent=2))
    return f"Found {len(pairs)} duplicates. We need to recover {to_recover:.2f} from suppliers."
