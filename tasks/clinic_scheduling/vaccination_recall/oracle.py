import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def plus_years(day, n):
    return day.replace(year=day.year + n)


def plus_months(day, n):
    m = day.month - 1 + n
    for d in (day.day, 30, 29, 28):
        try:
            return dt.date(day.year + m // 12, m % 12 + 1, d)
        except ValueError:
            pass


def age(birth, on):
    return on.year - birth.year - ((on.month, on.day) < (birth.month, birth.day))


def solve(tools, lookahead_days, skipped_vaccine, report_name, no_reminders_in_the_past=True) -> str:
    texts = read_files(tools)
    names, skip = {}, set()
    for text in texts.values():
        for full, code in re.findall(r"- ([\w -]+?) \((\w+)\):", text):
            names[full.lower()] = code
        m = re.search(r"run is dated \w+ (\d+ \w+ \d{4})", text)
        if m:
            run = dt.datetime.strptime(m.group(1), "%d %B %Y").date()
            lead = int(re.search(r"sent (\d+) days before", text).group(1))
        m = re.search(r"start of the season on (\d+ \w+ \d{4})", text)
        if m:
            season = dt.datetime.strptime(m.group(1), "%d %B %Y").date()
    for text in texts.values():
        who = re.search(r"Re: .+ \((MRN\d+)\)", text)
        if who and ("do not wish to receive" in text or "contraindicated" in text):
            skip |= {(who.group(1), code) for full, code in names.items() if full in text.lower()}

    skipped = names[skipped_vaccine.lower()]  # the schedule gives each vaccine's code
    doses = {}
    for rec in read_all(tools.list_immunizations):
        doses.setdefault(rec["patient_id"], []).append((rec["vaccine"], dt.date.fromisoformat(rec["given_on"])))
    horizon = run + dt.timedelta(days=lookahead_days)
    rows, patients_hit = [], set()
    for p in read_all(tools.list_patients):
        if p["status"] != "active":
            continue
        birth, mine = dt.date.fromisoformat(p["birth_date"]), doses.get(p["id"], [])
        years = age(birth, run)
        given = lambda code, since=dt.date.min: [d for v, d in mine if v == code and d >= since]
        shingles = sorted(given("RZV"))
        candidates = [
            ("Td", True, plus_years(max(given("Td")), 10)),
            ("FLU", years >= 65 and not given("FLU", season), season),
            ("PPV", years >= 65 and not given("PPV"), plus_years(birth, 65)),
            ("RZV", years >= 50 and len(shingles) < 2, plus_months(shingles[0], 2) if shingles else plus_years(birth, 50)),
        ]
        due = {code: day for code, applies, day in candidates if applies}
        for vaccine, day in sorted(due.items()):
            if day > horizon or (p["mrn"], vaccine) in skip or vaccine == skipped:
                continue
            recall = tools.create_recall(patient_id=p["id"], vaccine=vaccine, due_date=day.isoformat())
            send = day - dt.timedelta(days=lead)
            send = max(run, send) if no_reminders_in_the_past else send
            tools.schedule_reminder(recall_id=recall["recall_id"], send_on=send.isoformat())
            rows.append(f"{p['mrn']},{vaccine},{day.isoformat()},{send.isoformat()}")
            patients_hit.add(p["id"])
    tools.write_file(path=report_name, content="patient_mrn,vaccine,due_date,reminder_date\n" + "\n".join(rows) + "\n")
    return f"I created {len(rows)} recalls covering {len(patients_hit)} patients."
