import datetime as dt
import json
import re

from progagent_lib.task.oracle_kit import read_all, read_files

AUDIT = dt.date(2026, 11, 30)


def solve(tools, excluded_location, urgent_over, report_name, skip_failed=True) -> str:
    text = " ".join("\n".join(read_files(tools).values()).split())
    torque = int(re.search(r"torque wrench is on a (\d+)-day interval", text).group(1))
    external = re.search(r"everything else goes to (.+?)\.\s+Bookings", text).group(1)
    dimensional = ("caliper", "micrometer", "gauge block", "height gauge")
    extension = re.search(r"approved a (\d+)-day extension .*?\s+instruments while the lab clears its backlog: (.+?)\.\s+Add", text)
    ext_days, ext_tags = int(extension.group(1)), {t.strip() for t in extension.group(2).split(",")}

    report = []
    for inst in read_all(tools.list_instruments):
        if inst["status"] == "retired" or inst["location"] in ("Stores", excluded_location):
            continue
        history = read_all(tools.list_calibrations, instrument_id=inst["id"])
        good = [h["performed_on"] for h in history if h["result"] in ("pass", "adjusted") or not skip_failed]
        interval = torque if inst["type"] == "torque wrench" else inst["interval_days"]
        due = dt.date.fromisoformat(max(good)) + dt.timedelta(days=interval) if good else dt.date.fromisoformat(inst["commissioned_on"])
        if inst["tag"] in ext_tags:
            due += dt.timedelta(days=ext_days)
        late = (AUDIT - due).days
        if late <= 0:
            continue
        lock = tools.lock_instrument(instrument_id=inst["id"], reason=f"calibration overdue by {late} days")
        tools.book_calibration(lock_id=lock["lock_id"], lab="In-house lab" if inst["type"] in dimensional else external,
                               priority="urgent" if late > urgent_over else "routine")
        report.append({"tag": inst["tag"], "due_date": due.isoformat(), "days_overdue": late})
    tools.write_file(path=report_name, content=json.dumps(report, indent=2))
    worst = max(report, key=lambda r: r["days_overdue"])
    return (f"{len(report)} instruments were overdue and are now locked with calibrations booked. The most overdue "
            f"is {worst['tag']} ({worst['days_overdue']} days past its due date).")
