import datetime as dt

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

CODES = ("Td", "FLU", "RZV", "PPV")


def _iso(value: str, name: str) -> str:
    try:
        return dt.date.fromisoformat(value.strip()).isoformat()
    except (AttributeError, ValueError):
        raise ToolError(f"{name} must be a date in YYYY-MM-DD form, got {value!r}") from None


class VaccinationRecallEnv(WorkspaceEnvironment):
    @tool
    def list_patients(self, page: int = 1) -> dict:
        """List registered patients with MRN, name, date of birth and registration status, 20 per page."""
        return self.query_page("SELECT id, mrn, name, birth_date, status FROM patients ORDER BY id", page=page)

    @tool
    def list_immunizations(self, page: int = 1, vaccine: str = "", patient_id: int = 0) -> dict:
        """List recorded vaccine doses (patient, vaccine code, date given), 50 per page, optionally filtered.

        Args:
            vaccine: Only doses of this vaccine code (Td, FLU, RZV, PPV) when non-empty.
            patient_id: Only this patient's doses when non-zero.
        """
        if vaccine and vaccine not in CODES:
            raise ToolError(f"unknown vaccine code {vaccine!r}; codes are {', '.join(CODES)}")
        clauses, args = [], []
        if vaccine:
            clauses.append("vaccine = ?")
            args.append(vaccine)
        if patient_id:
            clauses.append("patient_id = ?")
            args.append(patient_id)
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        return self.query_page("SELECT id, patient_id, vaccine, given_on, batch FROM immunizations" + where + " ORDER BY id", tuple(args),
                               page, page_size=50)

    @tool
    def create_recall(self, patient_id: int, vaccine: str, due_date: str) -> dict:
        """Put a patient on the recall list for one vaccine; returns the recall id.

        Args:
            patient_id: The patient's id.
            vaccine: Vaccine code: Td, FLU, RZV or PPV.
            due_date: When the dose is due, YYYY-MM-DD.
        """
        if vaccine not in CODES:
            raise ToolError(f"unknown vaccine code {vaccine!r}; codes are {', '.join(CODES)}")
        self.require_row("patients", patient_id, "use list_patients")
        if self.query("SELECT id FROM recalls WHERE patient_id = ? AND vaccine = ?", (patient_id, vaccine)):
            raise ToolError(f"patient {patient_id} is already on the recall list for {vaccine}")
        cur = self.db.execute("INSERT INTO recalls (patient_id, vaccine, due_date) VALUES (?,?,?)", (patient_id, vaccine, _iso(due_date, "due_date")))
        return {"recall_id": cur.lastrowid, "patient_id": patient_id, "vaccine": vaccine}

    @tool
    def schedule_reminder(self, recall_id: int, send_on: str) -> dict:
        """Schedule the reminder letter/text for a recall.

        Args:
            recall_id: The id returned by create_recall.
            send_on: The day to send it, YYYY-MM-DD.
        """
        self.require_row("recalls", recall_id, "create it with create_recall first")
        if self.query("SELECT id FROM reminders WHERE recall_id = ?", (recall_id,)):
            raise ToolError(f"recall {recall_id} already has a reminder")
        cur = self.db.execute("INSERT INTO reminders (recall_id, send_on) VALUES (?,?)", (recall_id, _iso(send_on, "send_on")))
        return {"reminder_id": cur.lastrowid, "recall_id": recall_id, "send_on": send_on.strip()}

    def criteria(self, final_response: str) -> list[Criterion]:
        recalls = "recalls r JOIN patients p ON p.id = r.patient_id LEFT JOIN reminders m ON m.recall_id = r.id"
        key = ["p.mrn", "r.vaccine"]
        counts = self.reference.query("SELECT count(*) AS n, count(DISTINCT patient_id) AS patients FROM recalls")[0]
        return [
            self.tables_match(recalls, key=key, weight=2.0, criterion="exactly_the_due_recalls_created"),
            self.tables_match(recalls, key=key, columns="r.due_date", weight=2.0, criterion="due_dates_computed"),
            self.tables_match(recalls, key=key, columns="m.send_on", criterion="reminders_on_the_right_day"),
            self.file_matches(self.params["report_name"], as_="csv", key=["patient_mrn", "vaccine"],
                              criterion="recall_list_written"),
            self.answer_states([counts["n"], counts["patients"]], criterion="counts_reported"),
        ]
