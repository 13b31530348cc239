"""A plausible wrong solution: right recalls, but reminders always go lead-days before the due date, even when that is in the past."""
import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, lookahead_days, skipped_vaccine, report_name) -> str:
    memo = tools.read_file(path="protocols/recall_run_memo.md")
    run = dt.datetime.strptime(re.search(r"dated \w+ (\d+ \w+ \d{4})", memo).group(1), "%d %B %Y").date()
    horizon = run + dt.timedelta(days=lookahead_days)
    lead = int(re.search(r"sent (\d+) days", memo).group(1))
    full = {"tetanus-diphtheria booster": "Td", "seasonal influenza vaccine": "FLU",
            "recombinant shingles vaccine": "RZV", "pneumococcal polysaccharide vaccine": "PPV"}
    blocked = set()
    for text in read_files(tools, "letters/*").values():
        mrn = re.search(r"\((MRN\d+)\)", text).group(1)
        for name, code in full.items():
            if name in text and ("do not wish" in text or "contraindicated" in text):
                blocked.add((mrn, code))
    shots = {}
    for r in read_all(tools.list_immunizations):
        shots.setdefault(r["patient_id"], []).append((r["vaccine"], r["given_on"]))
    out, people = [], set()
    for p in read_all(tools.list_patients):
        if p["status"] != "active":
            continue
        b = dt.date.fromisoformat(p["birth_date"])
        years = run.year - b.year - ((run.month, run.day) < (b.month, b.day))
        mine = shots.get(p["id"], [])
        last_td = dt.date.fromisoformat(max(d for v, d in mine if v == "Td"))
        due = {"Td": last_td.replace(year=last_td.year + 10)}
        if years >= 65 and not any(v == "FLU" and d >= "2026-09-01" for v, d in mine):
            due["FLU"] = dt.date(2026, 9, 1)
        if years >= 65 and not any(v == "PPV" for v, _ in mine):
            due["PPV"] = b.replace(year=b.year + 65)
        rzv = sorted(d for v, d in mine if v == "RZV")
        if years >= 50 and len(rzv) < 2:
            if rzv:
                f = dt.date.fromisoformat(rzv[0])
                m = f.month + 1
                due["RZV"] = dt.date(f.year + m // 12, m % 12 + 1, min(f.day, 28))
            else:
                due["RZV"] = b.replace(year=b.year + 50)
        for v, d in due.items():
            if d <= horizon and (p["mrn"], v) not in blocked and v != full[skipped_vaccine]:
                rid = tools.create_recall(patient_id=p["id"], vaccine=v, due_date=d.isoformat())["recall_id"]
                send = d - dt.timedelta(days=lead)
                tools.schedule_reminder(recall_id=rid, send_on=send.isoformat())
                out.append(f"{p['mrn']},{v},{d},{send}")
                people.add(p["mrn"])
    tools.write_file(path=report_name, content="patient_mrn,vaccine,due_date,reminder_date\n" + "\n".join(out) + "\n")
    return f"{len(out)} recalls for {len(people)} patients."
