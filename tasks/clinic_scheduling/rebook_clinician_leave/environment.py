"""Tools and verifier for clinic_scheduling/rebook_clinician_leave."""
import csv
import datetime as dt
import io
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


def _check_date(value: str, name: str) -> str:
    try:
        return dt.date.fromisoformat(value).isoformat()
    except (TypeError, ValueError):
        raise ToolError(f"{name} must be a date like 2026-12-07, got {value!r}") from None


class RebookEnv(WorkspaceEnvironment):
    @tool
    def list_clinicians(self, page: int = 1, specialty: str = "") -> dict:
        """List the practice's clinicians (staff number, name, specialty, site), 20 per page.

        Args:
            page: 1-based page number.
            specialty: Only clinicians of this specialty when non-empty, e.g. "Physiotherapy".
        """
        where, args = (" WHERE specialty = ?", (specialty,)) if specialty else ("", ())
        return self.query_page("SELECT id, name, specialty, site FROM clinicians" + where + " ORDER BY id", args, page)

    @tool
    def list_appointments(self, clinician_id: int, date_from: str, date_to: str, page: int = 1) -> dict:
        """List one clinician's appointments (booked, cancelled or moved) between two dates inclusive, 20 per page.

        Args:
            clinician_id: The clinician's staff number.
            date_from: First day, YYYY-MM-DD.
            date_to: Last day, YYYY-MM-DD (inclusive).
            page: 1-based page number.
        """
        lo, hi = _check_date(date_from, "date_from"), _check_date(date_to, "date_to")
        self.require_row("clinicians", clinician_id, "use list_clinicians")
        return self.query_page(
            "SELECT id, patient_id, clinician_id, start, status, reason FROM appointments "
            "WHERE clinician_id = ? AND substr(start, 1, 10) BETWEEN ? AND ? ORDER BY start, id", (clinician_id, lo, hi), page)

    @tool
    def list_open_slots(self, specialty: str, date_from: str, page: int = 1) -> dict:
        """List open (bookable) slots of clinicians of one specialty from a date on, by start time, 20 per page.

        Args:
            specialty: The specialty, e.g. "General practice".
            date_from: Only slots on or after this day, YYYY-MM-DD.
            page: 1-based page number.
        """
        lo = _check_date(date_from, "date_from")
        if not self.query("SELECT id FROM clinicians WHERE specialty = ?", (specialty,)):
            raise ToolError(f"unknown specialty {specialty!r}; see list_clinicians for the specialties")
        return self.query_page(
            "SELECT s.id AS slot_id, s.clinician_id, c.name AS clinician, c.site, s.start FROM slots s "
            "JOIN clinicians c ON c.id = s.clinician_id WHERE c.specialty = ? AND s.status = 'open' "
            "AND substr(s.start, 1, 10) >= ? ORDER BY s.start, s.id", (specialty, lo), page)

    @tool
    def get_patient(self, patient_id: int) -> dict:
        """Get one patient's record: MRN, name, phone and birth date.

        Args:
            patient_id: The patient's numeric id (as in an appointment).
        """
        return self.require_row("patients", patient_id)

    @tool
    def rebook_appointment(self, appointment_id: int, slot_id: int) -> dict:
        """Move a booked appointment into an open slot; the old one is marked moved and a new appointment is created.

        Args:
            appointment_id: The booked appointment to move.
            slot_id: The open slot to book instead.
        """
        appt = self.query("SELECT * FROM appointments WHERE id = ?", (appointment_id,))
        if not appt or appt[0]["status"] != "booked":
            raise ToolError(f"appointment {appointment_id} does not exist or is not booked; only booked ones can be moved")
        slot = self.query("SELECT * FROM slots WHERE id = ? AND status = 'open'", (slot_id,))
        if not slot:
            raise ToolError(f"slot {slot_id} does not exist or is already taken; list_open_slots shows what is free")
        a, s = appt[0], slot[0]
        cur = self.db.execute(
            "INSERT INTO appointments (patient_id, clinician_id, start, status, reason, moved_to) VALUES (?,?,?, 'booked', ?, NULL)",
            (a["patient_id"], s["clinician_id"], s["start"], a["reason"]))
        self.db.execute("UPDATE appointments SET status = 'moved', moved_to = ? WHERE id = ?", (cur.lastrowid, appointment_id))
        self.db.execute("UPDATE slots SET status = 'booked' WHERE id = ?", (slot_id,))
        return {"new_appointment_id": cur.lastrowid, "old_appointment_id": appointment_id,
                "clinician_id": s["clinician_id"], "start": s["start"], "patient_id": a["patient_id"]}

    @tool
    def notify_patient(self, appointment_id: int) -> dict:
        """Send the patient of an appointment a notification with its date, time and clinician.

        Args:
            appointment_id: The appointment the notification is about.
        """
        appt = self.require_row("appointments", appointment_id, "use list_appointments")
        cur = self.db.execute("INSERT INTO notifications (appointment_id, patient_id, sent_at) VALUES (?,?, '2026-11-30 09:00')",
                              (appointment_id, appt["patient_id"]))
        return {"notification_id": cur.lastrowid, "appointment_id": appointment_id, "status": appt["status"]}

    # --- verifier --------------------------------------------------------------------------------
    def criteria(self, final_response: str) -> list[Criterion]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        expected = {int(k): v for k, v in facts["expected"][str(self.params["extension_days"])].items()}
        slots = {r["id"]: r for r in self.query("SELECT s.id, s.clinician_id, s.start, c.name FROM slots s JOIN clinicians c ON c.id = s.clinician_id")}
        appts = {r["id"]: r for r in self.query("SELECT * FROM appointments")}
        mrn = {r["id"]: r["mrn"] for r in self.query("SELECT id, mrn FROM patients")}
        moved = {aid: a for aid, a in appts.items() if a["status"] == "moved"}
        right_set = set(moved) == set(expected)

        placed, new_ids = 0, {}
        for old, slot_id in expected.items():
            new = appts.get(moved[old]["moved_to"]) if old in moved else None
            if new and new["start"] == slots[slot_id]["start"] and new["clinician_id"] == slots[slot_id]["clinician_id"]:
                placed += 1
                new_ids[old] = new["id"]
        slots_ok = placed == len(expected) and right_set

        prefs = {int(k): v for k, v in facts["prefs"].items()}
        clin = {r["id"]: r for r in self.query("SELECT * FROM clinicians")}
        broken = 0
        for a in moved.values():
            new = appts.get(a["moved_to"])
            pref = prefs.get(a["patient_id"])
            if new is None or pref is None:
                continue
            kind, value = pref
            hour, doc = int(new["start"][11:13]), clin[new["clinician_id"]]
            ok = {"morning": hour < 12, "afternoon": hour >= 12, "site": doc["site"] == value, "avoid": doc["id"] != value}[kind]
            broken += not ok
        notes = self.query("SELECT appointment_id FROM notifications")
        notified = sorted(n["appointment_id"] for n in notes)
        want_notified = sorted(a["moved_to"] for a in moved.values())
        notify_ok = bool(moved) and notified == want_notified

        report_name = self.params["report_name"]
        report_ok, detail = False, f"{report_name} not found"
        path = self.workspace / report_name
        if path.is_file():
            try:
                rows = list(csv.DictReader(io.StringIO(path.read_text().strip())))
                got = {int(r["old_appointment_id"]): (r["patient_mrn"].strip(), int(r["new_appointment_id"]),
                       r["new_clinician"].strip(), " ".join(r["new_start"].split())[:16]) for r in rows}
                want = {old: (mrn[appts[old]["patient_id"]], new_ids.get(old), slots[s]["name"], slots[s]["start"])
                        for old, s in expected.items()}
                report_ok = got == want and len(rows) == len(want)
                detail = "matches the expected moves" if report_ok else f"{len(rows)} rows; differs from the expected moves"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                detail = f"cannot parse the report: {exc}"

        delay = sum((dt.date.fromisoformat(slots[s]["start"][:10]) - dt.date.fromisoformat(appts[old]["start"][:10])).days
                    for old, s in expected.items())
        numbers = [int(x) for x in re.findall(r"(?<![\d.])\d+(?![\d.])", final_response)]
        answer_ok = len(expected) in numbers and delay in numbers
        return [
            Criterion("exactly_the_leave_appointments_moved", right_set, 2.0, f"{len(moved)} moved, {len(expected)} expected"),
            Criterion("earliest_fitting_slots_chosen", slots_ok, 2.0, f"{placed}/{len(expected)} in the expected slot"),
            Criterion("patient_preferences_respected", right_set and broken == 0, 1.0, f"{broken} moves break a patient's stated wish"),
            Criterion("new_appointments_notified", notify_ok, 1.0, f"{len(notified)} notifications, {len(want_notified)} new appointments"),
            Criterion("report_written", report_ok, 1.0, detail),
            Criterion("count_and_delay_reported", answer_ok, 1.0, f"expected {len(expected)} moves and {delay} total days of delay"),
        ]
