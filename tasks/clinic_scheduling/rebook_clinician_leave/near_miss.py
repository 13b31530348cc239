"""A plausible wrong solution: rebooks and notifies correctly but never reads the front-desk preference notes."""
import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all


def solve(tools, extension_days, report_name) -> str:
    clinicians = {c["id"]: c for c in read_all(tools.list_clinicians)}
    notice = tools.read_file(path="inbox/leave_notice.eml")
    name = re.search(r"Subject: Short-notice leave - (.+)", notice).group(1).strip()
    doc = next(c for c in clinicians.values() if c["name"] == name)
    days = [dt.datetime.strptime(d, "%d %B %Y").date() for d in re.findall(r"day away is \w+ (\d+ \w+ \d{4})", notice)]
    for _ in range(extension_days):
        days[1] += dt.timedelta(days=3 if days[1].weekday() == 4 else 1)
    appts = read_all(tools.list_appointments, clinician_id=doc["id"], date_from=days[0].isoformat(), date_to=days[1].isoformat())
    slots = [s for s in read_all(tools.list_open_slots, specialty=doc["specialty"], date_from=days[0].isoformat())
             if s["clinician_id"] != doc["id"]]
    rows, delay = [], 0
    for a in sorted((a for a in appts if a["status"] == "booked"), key=lambda a: (a["start"], a["id"])):
        s = min((s for s in slots if s["start"] >= a["start"]), key=lambda s: (s["start"], s["clinician_id"]))
        slots.remove(s)
        moved = tools.rebook_appointment(appointment_id=a["id"], slot_id=s["slot_id"])
        tools.notify_patient(appointment_id=moved["new_appointment_id"])
        mrn = tools.get_patient(patient_id=a["patient_id"])["mrn"]
        delay += (dt.date.fromisoformat(s["start"][:10]) - dt.date.fromisoformat(a["start"][:10])).days
        rows.append(f"{a['id']},{mrn},{moved['new_appointment_id']},{s['clinician']},{s['start']}")
    tools.write_file(path=report_name,
                     content="old_appointment_id,patient_mrn,new_appointment_id,new_clinician,new_start\n" + "\n".join(rows) + "\n")
    return f"Moved {len(rows)} appointments; {delay} extra days of waiting in total."
