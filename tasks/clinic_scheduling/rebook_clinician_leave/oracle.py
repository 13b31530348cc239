import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all, read_files

MONTHS = {m: i for i, m in enumerate(["January", "February", "March", "April", "May", "June", "July", "August",
                                       "September", "October", "November", "December"], 1)}


def parse_day(text):
    day, month, year = re.match(r"\w+ (\d{1,2}) (\w+) (\d{4})", text).groups()
    return dt.date(int(year), MONTHS[month], int(day))


def parse_wish(sentence, clinicians_by_name):
    """Turn a front-desk sentence into (kind, value)."""
    low = sentence.lower()
    for name, cid in clinicians_by_name.items():
        if name in sentence and ("not" in low):
            return ("avoid", cid)
    site = re.search(r"(?:our|at) ([A-Z][\w ]*?) (?:site|only)", sentence)
    if site:
        return ("site", site.group(1))
    if "morning" in low:
        return ("morning", None)
    if "afternoon" in low or "12:00 onwards" in low:
        return ("afternoon", None)
    return None


def solve(tools, extension_days, report_name, use_preferences=True) -> str:
    texts = read_files(tools)
    clinicians = read_all(tools.list_clinicians)
    by_name = {c["name"]: c["id"] for c in clinicians}
    leave = None
    wishes = {}
    for path, text in texts.items():
        m = re.search(r"Subject: Short-notice leave - (.+)", text)
        if m:
            first = re.search(r"first day away is (\w+ \d+ \w+ \d{4})", text).group(1)
            last = re.search(r"last day away is (\w+ \d+ \w+ \d{4})", text).group(1)
            leave = (by_name[m.group(1).strip()], parse_day(first), parse_day(last))
        for mrn, sentence in re.findall(r"^- .*?\((MRN\d+)\) (.+?)\.$", text, flags=re.M):
            wish = parse_wish(sentence, by_name)
            if wish and use_preferences:
                wishes[mrn] = wish
    doc_id, first, last = leave
    for _ in range(extension_days):  # the extension, in working days (Monday to Friday)
        last += dt.timedelta(days=1)
        while last.weekday() >= 5:
            last += dt.timedelta(days=1)
    doc = next(c for c in clinicians if c["id"] == doc_id)
    clin = {c["id"]: c for c in clinicians}

    affected = [a for a in read_all(tools.list_appointments, clinician_id=doc_id, date_from=first.isoformat(),
                                    date_to=last.isoformat()) if a["status"] == "booked"]
    affected.sort(key=lambda a: (a["start"], a["id"]))
    slots = read_all(tools.list_open_slots, specialty=doc["specialty"], date_from=first.isoformat())
    taken = set()
    rows, delay = [], 0
    for a in affected:
        patient = tools.get_patient(patient_id=a["patient_id"])
        wish = wishes.get(patient["mrn"])
        best = None
        for s in slots:
            if s["slot_id"] in taken or s["clinician_id"] == doc_id or s["start"] < a["start"]:
                continue
            hour = dt.datetime.fromisoformat(s["start"]).hour
            if wish and not {"morning": hour < 12, "afternoon": hour >= 12,
                             "site": s["site"] == wish[1], "avoid": s["clinician_id"] != wish[1]}[wish[0]]:
                continue
            key = (s["start"], s["clinician_id"])
            if best is None or key < (best["start"], best["clinician_id"]):
                best = s
        taken.add(best["slot_id"])
        moved = tools.rebook_appointment(appointment_id=a["id"], slot_id=best["slot_id"])
        tools.notify_patient(appointment_id=moved["new_appointment_id"])
        delay += (dt.datetime.fromisoformat(best["start"]).date() - dt.datetime.fromisoformat(a["start"]).date()).days
        rows.append(f"{a['id']},{patient['mrn']},{moved['new_appointment_id']},{clin[best['clinician_id']]['name']},{best['start']}")
    tools.write_file(path=report_name,
                     content="old_appointment_id,patient_mrn,new_appointment_id,new_clinician,new_start\n" + "\n".join(rows) + "\n")
    return f"I moved {len(rows)} appointments. In total patients wait {delay} extra days."
