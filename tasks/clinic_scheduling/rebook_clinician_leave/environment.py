import datetime as dt

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

MOVES = "appointments a JOIN appointments n ON n.id = a.moved_to"  # a moved appointment and the one it became


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
            specialty: Only clinicians of this specialty when non-empty, e.g. "Physiotherapy".
        """
        where, args = (" WHERE specialty = ?", (specialty,)) if specialty else ("", ())
        return self.query_page("SELECT id, name, specialty, site FROM clinicians" + where + " ORDER BY id", args, page)

    @tool
    def list_appointments(self, clinician_id: int, date_from: str, date_to: str, page: int = 1) -> dict:
        """List one clinician's appointments between two dates inclusive, with their status (booked, cancelled, moved).

        Args:
            clinician_id: The clinician's staff number.
            date_from: First day, YYYY-MM-DD.
            date_to: Last day, YYYY-MM-DD (inclusive).
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

    def broken_wishes(self) -> int:
        """Moves whose new slot breaks a wish the patient gave the front desk (hour, site or clinician)."""
        wishes = self.facts["prefs"]
        broken = 0
        for move in self.query(f"SELECT a.patient_id, n.start, c.id, c.site FROM {MOVES} "
                               "JOIN clinicians c ON c.id = n.clinician_id WHERE a.status = 'moved'"):
            kind, value = wishes.get(str(move["patient_id"]), (None, None))
            hour = int(move["start"][11:13])
            broken += not {None: True, "morning": hour < 12, "afternoon": hour >= 12, "site": move["site"] == value,
                           "avoid": move["id"] != value}[kind]
        return broken

    def criteria(self, final_response: str) -> list[Criterion]:
        moved = self.tables_match("appointments", key="id", where="status = 'moved'", weight=2.0,
                                  criterion="exactly_the_leave_appointments_moved")
        broken = self.broken_wishes()
        waits = self.reference.query("SELECT count(*) AS n, sum(julianday(substr(n.start, 1, 10)) - julianday(substr("
                                     f"a.start, 1, 10))) AS days FROM {MOVES} WHERE a.status = 'moved'")
        return [
            moved,
            self.tables_match(MOVES, key="a.id", columns=["n.start", "n.clinician_id"], where="a.status = 'moved'",
                              weight=2.0, criterion="earliest_fitting_slots_chosen"),
            Criterion("patient_preferences_respected", moved.passed and broken == 0, 1.0,
                      f"{broken} moves break a patient's stated wish"),
            # Keyed by the moved appointment: a notification about anything else has no key and shows as unexpected.
            self.tables_match("notifications x LEFT JOIN appointments a ON a.moved_to = x.appointment_id", key="a.id",
                              criterion="new_appointments_notified"),
            # New appointment ids follow the order of rebooking, which the result does not depend on.
            self.file_matches(self.params["report_name"], as_="csv", key="old_appointment_id",
                              columns=["patient_mrn", "new_clinician", "new_start"], criterion="report_written"),
            self.answer_states([waits[0]["n"], round(waits[0]["days"] or 0)], criterion="count_and_delay_reported"),
        ]
