import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, excluded_product, report_name, supplier_first=True) -> str:
    texts = read_files(tools)
    alerts, withdrawn = [], set()
    for text in texts.values():
        m = re.search(r"Every lot of (.+?) you received from us from (\d+ \w+ \d{4}) to (\d+ \w+ \d{4}) inclusive", text)
        if m:
            sender = text.strip().splitlines()[-1].replace(" quality team", "").strip()
            day = lambda s: dt.datetime.strptime(s, "%d %B %Y").date().isoformat()
            alerts.append((sender, m.group(1), day(m.group(2)), day(m.group(3))))
        m = re.search(r"earlier alert about (.+?) is withdrawn", text)
        if m:
            withdrawn.add((text.strip().splitlines()[-1].strip(), m.group(1)))
        m = re.search(r"critical-defect rate exceeds ([\d.]+)%", text)
        if m:
            threshold = float(m.group(1))
        if "# Defect code catalogue" in text:
            critical_prefix = "C"
    alerts = [a for a in alerts if (a[0], a[1]) not in withdrawn]

    suppliers = {s["name"]: s for s in read_all(tools.list_suppliers)}
    batches = {b["id"]: b for b in read_all(tools.list_batches)}
    cause = {}
    for name, part, lo, hi in alerts:
        for lot in read_all(tools.list_material_lots, supplier_id=suppliers[name]["id"]):
            if lot["part"] == part and lo <= lot["received"] <= hi:
                for use in read_all(tools.list_lot_usage, lot_id=lot["id"]):
                    cause[use["batch_id"]] = name
    totals = {}
    for rec in read_all(tools.list_inspections):
        t = totals.setdefault(rec["batch_id"], [0, 0])
        t[0] += rec["units"]
        t[1] += rec["defects"] if rec["defect_code"].startswith(critical_prefix) else 0
    for bid, (units, defects) in totals.items():
        if defects * 100 > threshold * units and (bid not in cause or not supplier_first):
            cause[bid] = "defect rate"
    cause = {bid: c for bid, c in cause.items() if batches[bid]["product"] != excluded_product}

    holds = {}
    for name in sorted(set(cause.values())):
        kind = "defect_rate" if name == "defect rate" else "supplier_notice"
        holds[name] = tools.open_hold(cause_type=kind, reference=name)["hold_id"]
    rows, quarantined = [], 0
    for bid in sorted(cause):
        b = batches[bid]
        if b["status"] == "shipped":
            tools.notify_customer(hold_id=holds[cause[bid]], batch_id=bid)
            action = "customer notified"
        else:
            tools.quarantine_batch(hold_id=holds[cause[bid]], batch_id=bid)
            action, quarantined = "quarantined", quarantined + 1
        rows.append(f"{b['batch_no']},{cause[bid]},{action}")
    tools.write_file(path=report_name, content="batch_no,cause,action\n" + "\n".join(rows) + "\n")
    return f"Contained {len(rows)} batches: {quarantined} quarantined, {len(rows) - quarantined} customer notifications."
