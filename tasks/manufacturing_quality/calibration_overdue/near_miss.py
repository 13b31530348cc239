"""A plausible wrong solution: takes the latest calibration whatever its result, so a recent failed
calibration hides an overdue instrument."""
import datetime as dt
import json
import re

from progagent_lib.task.oracle_kit import read_all


def solve(tools, excluded_location, urgent_over, report_name) -> str:
    memo = " ".join(tools.read_file(path="quality/metrology_memo.md").split())
    mail = " ".join(tools.read_file(path="mail/2026-11-12_qa_deviation.eml").split())
    torque = int(re.search(r"on a (\d+)-day interval", memo).group(1))
    urgent = urgent_over
    external = re.search(r"everything else goes to (.+?)\.", memo).group(1)
    days = int(re.search(r"a (\d+)-day extension", mail).group(1))
    tags = set(re.findall(r"[A-Z]{2}-\d+", mail))
    audit, rows = dt.date(2026, 11, 30), []
    for inst in read_all(tools.list_instruments):
        if inst["status"] != "in service" or inst["location"] in ("Stores", excluded_location):
            continue
        hist = read_all(tools.list_calibrations, instrument_id=inst["id"])
        last = hist[-1]["performed_on"] if hist else None
        step = torque if inst["type"] == "torque wrench" else inst["interval_days"]
        due = dt.date.fromisoformat(last) + dt.timedelta(days=step) if last else dt.date.fromisoformat(inst["commissioned_on"])
        due += dt.timedelta(days=days if inst["tag"] in tags else 0)
        if due < audit:
            late = (audit - due).days
            lock = tools.lock_instrument(instrument_id=inst["id"], reason="overdue")
            lab = "In-house lab" if inst["type"] in ("caliper", "micrometer", "gauge block", "height gauge") else external
            tools.book_calibration(lock_id=lock["lock_id"], lab=lab, priority="urgent" if late > urgent else "routine")
            rows.append({"tag": inst["tag"], "due_date": due.isoformat(), "days_overdue": late})
    tools.write_file(path=report_name, content=json.dumps(rows))
    top = max(rows, key=lambda r: r["days_overdue"])["tag"] if rows else "none"
    return f"Locked {len(rows)} overdue instruments; the most overdue is {top}."
