"""Tools and verifier for clinic_scheduling/vaccination_recall."""
import csv
import datetime as dt
import io
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

CODES = ("Td", "FLU", "RZV", "PPV")
NAMES = {"tetanus-diphtheria booster": "Td", "seasonal influenza vaccine": "FLU", "recombinant shingles vaccine": "RZV",
         "pneumococcal polysaccharide vaccine": "PPV"}  # as the schedule names them


def _iso(value: str, name: str) -> str:
    try:
        return dt.date.fromisoformat(value.strip()).isoformat()
    except (AttributeError, ValueError):
        raise ToolError(f"{name} must be a date in YYYY-MM-DD form, got {value!r}") from None


class VaccinationRecallEnv(WorkspaceEnvironment):
    @tool
    def list_patients(self, page: int = 1) -> dict:
        """List registered patients with MRN, name, date of birth and registration status, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, mrn, name, birth_date, status FROM patients ORDER BY id", page=page)

    @tool
    def list_immunizations(self, page: int = 1, vaccine: str = "", patient_id: int = 0) -> dict:
        """List recorded vaccine doses (patient, vaccine code, date given), 50 per page, optionally filtered.

        Args:
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def criteria(self, final_response: str) -> list[Criterion]:
        skipped = NAMES[self.params["skipped_vaccine"]]
        expected = {(m, v): (d, r) for m, v, d, r in json.loads(self.query("SELECT value FROM _verifier_facts WHERE key = 'expected'")[0]["value"])
                    if v != skipped}
        made = self.query("SELECT r.id, p.mrn, r.vaccine, r.due_date, m.send_on FROM recalls r JOIN patients p ON p.id = r.patient_id "
                          "LEFT JOIN reminders m ON m.recall_id = r.id")
        got = {(r["mrn"], r["vaccine"]): (r["due_date"], r["send_on"]) for r in made}
        right_set = set(got) == set(expected) and len(made) == len(got)
        dues_ok = right_set and all(got[k][0] == v[0] for k, v in expected.items())
        reminders_ok = right_set and all(got[k][1] == v[1] for k, v in expected.items())
        # Partial-credit check on the exceptions: no recall for a patient/vaccine the schedule makes due but notes forbid.
        wrong_extra = set(got) - set(expected)

        report_name = self.params["report_name"]
        report_ok, detail = False, f"{report_name} not found"
        path = self.workspace / report_name
        if path.is_file():
            try:
                rows = list(csv.DictReader(io.StringIO(path.read_text().strip())))
                rep = {(r["patient_mrn"].strip(), r["vaccine"].strip()): (r["due_date"].strip(), r["reminder_date"].strip()) for r in rows}
                report_ok = rep == expected and len(rows) == len(expected)
                detail = "matches the expected recalls" if report_ok else f"{len(rows)} rows; differ from the {len(expected)} expected"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                detail = f"cannot parse the list: {exc}"
        n_patients = len({m for m, _ in expected})
        said = [int(x) for x in re.findall(r"(?<![\d.])\d+(?![\d.])", final_response)]
        return [
            Criterion("exactly_the_due_recalls_created", right_set, 2.0, f"{len(made)} recalls, {len(expected)} expected (no {skipped}); {len(wrong_extra)} not wanted"),
            Criterion("due_dates_computed", dues_ok, 2.0, "schedule intervals, ages and season start"),
            Criterion("reminders_on_the_right_day", reminders_ok, 1.0, "lead time before due, or the run date"),
            Criterion("recall_list_written", report_ok, 1.0, detail),
            Criterion("counts_reported", len(expected) in said and n_patients in said, 1.0, f"expected {len(expected)} recalls for {n_patients} patients"),
        ]
