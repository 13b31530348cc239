"""A plausible wrong solution: checks defect rates first, so batches hit by both causes land under the wrong hold."""
import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, excluded_product, report_name) -> str:
    mail = read_files(tools, "mail/supplier_notice_?.eml")
    procedure = tools.read_file(path="quality/containment_procedure.md")
    limit = float(re.search(r"exceeds ([\d.]+)%", procedure).group(1))
    suppliers = {s["name"]: s["id"] for s in read_all(tools.list_suppliers)}
    suspects = []
    for text in mail.values():
        sender = re.sub(r" quality team$", "", text.strip().splitlines()[-1])
        m = re.search(r"Every lot of (.+?) you received from us from (\d+ \w+ \d{4}) to (\d+ \w+ \d{4})", text)
        if m:
            lo, hi = (dt.datetime.strptime(x, "%d %B %Y").date().isoformat() for x in m.groups()[1:])
            suspects.append((sender, m.group(1), lo, hi))
    cause = {}
    sums = {}
    for r in read_all(tools.list_inspections):
        s = sums.setdefault(r["batch_id"], [0, 0])
        s[0] += r["units"]
        s[1] += r["defects"] if r["defect_code"][0] == "C" else 0
    for bid, (u, d) in sums.items():
        if 100 * d > limit * u:
            cause.setdefault(bid, "defect rate")
    for sender, part, lo, hi in suspects:
        for lot in read_all(tools.list_material_lots, supplier_id=suppliers[sender]):
            if lot["part"] == part and lo <= lot["received"] <= hi:
                for b in read_all(tools.list_lot_usage, lot_id=lot["id"]):
                    cause.setdefault(b["batch_id"], sender)
    batches = {b["id"]: b for b in read_all(tools.list_batches)}
    cause = {bid: c for bid, c in cause.items() if batches[bid]["product"] != excluded_product}
    holds = {c: tools.open_hold(cause_type="defect_rate" if c == "defect rate" else "supplier_notice", reference=c)["hold_id"]
             for c in set(cause.values())}
    lines, q = [], 0
    for bid, c in cause.items():
        if batches[bid]["status"] == "shipped":
            tools.notify_customer(hold_id=holds[c], batch_id=bid)
            lines.append(f"{batches[bid]['batch_no']},{c},customer notified")
        else:
            tools.quarantine_batch(hold_id=holds[c], batch_id=bid)
            q += 1
            lines.append(f"{batches[bid]['batch_no']},{c},quarantined")
    tools.write_file(path=report_name, content="batch_no,cause,action\n" + "\n".join(lines) + "\n")
    return f"{q} batches quarantined."
