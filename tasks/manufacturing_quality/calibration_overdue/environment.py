"""Tools and verifier for manufacturing_quality/calibration_overdue."""
import datetime as dt
import json
from typing import Literal

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

AUDIT = dt.date(2026, 11, 30)
DIMENSIONAL = ("caliper", "micrometer", "gauge block", "height gauge")


class CalibrationEnv(WorkspaceEnvironment):
    @tool
    def list_instruments(self, page: int = 1) -> dict:
        """List registered measuring instruments with type, location, status and calibration interval, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, tag, type, location, status, interval_days, commissioned_on, serial "
                               "FROM instruments ORDER BY id", page=page)

    @tool
    def list_calibrations(self, instrument_id: int, page: int = 1) -> dict:
        """List one instrument's calibration history (date, result, certificate), oldest first, 20 per page.

        Args:
            instrument_id: The instrument's numeric id.
            page: 1-based page number.
        """
        self.require_row("instruments", instrument_id, "use list_instruments")
        return self.query_page("SELECT performed_on, result, certificate FROM calibrations WHERE instrument_id = ? "
                               "ORDER BY performed_on, id", (instrument_id,), page)

    @tool
    def lock_instrument(self, instrument_id: int, reason: str) -> dict:
        """Lock an instrument out of use; returns the lock id that a calibration booking refers to.

        Args:
            instrument_id: The instrument to lock.
            reason: Short reason shown on the lock tag.
        """
        self.require_row("instruments", instrument_id, "use list_instruments")
        if not reason.strip():
            raise ToolError("give a reason for the lock")
        if self.query("SELECT id FROM locks WHERE instrument_id = ?", (instrument_id,)):
            raise ToolError(f"instrument {instrument_id} is already locked")
        cur = self.db.execute("INSERT INTO locks (instrument_id, reason) VALUES (?, ?)", (instrument_id, reason.strip()))
        return {"lock_id": cur.lastrowid, "instrument_id": instrument_id}

    @tool
    def book_calibration(self, lock_id: int, lab: str, priority: Literal["urgent", "routine"]) -> dict:
        """Book a calibration for a locked instrument.

        Args:
            lock_id: The lock id returned by lock_instrument.
            lab: The calibration lab's name.
            priority: "urgent" or "routine".
        """
        if not lab.strip():
            raise ToolError("name the lab")
        self.require_row("locks", lock_id, "lock the instrument first")
        if self.query("SELECT id FROM bookings WHERE lock_id = ?", (lock_id,)):
            raise ToolError(f"lock {lock_id} already has a booking")
        cur = self.db.execute("INSERT INTO bookings (lock_id, lab, priority) VALUES (?,?,?)", (lock_id, lab.strip(), priority))
        return {"booking_id": cur.lastrowid, "lock_id": lock_id, "lab": lab.strip(), "priority": priority}

    # --- verifier --------------------------------------------------------------------------------
    def _overdue(self) -> tuple[dict[int, dict], dict]:
        facts = json.loads(self.query("SELECT value FROM _verifier_facts WHERE key = 'memo'")[0]["value"])
        good = {}
        for row in self.query("SELECT instrument_id, MAX(performed_on) AS last FROM calibrations "
                              "WHERE result != 'fail' GROUP BY instrument_id"):
            good[row["instrument_id"]] = row["last"]
        out = {}
        for inst in self.query("SELECT * FROM instruments WHERE status = 'in service' AND location != 'Stores' "
                                  "AND location != ?", (self.params["excluded_location"],)):
            interval = facts["torque_days"] if inst["type"] == "torque wrench" else inst["interval_days"]
            base = good.get(inst["id"])
            due = dt.date.fromisoformat(base) + dt.timedelta(days=interval) if base else dt.date.fromisoformat(inst["commissioned_on"])
            if inst["tag"] in facts["deviated"]:
                due += dt.timedelta(days=facts["deviation_days"])
            late = (AUDIT - due).days
            if late > 0:
                out[inst["id"]] = {"tag": inst["tag"], "due": due.isoformat(), "late": late,
                                   "lab": "In-house lab" if inst["type"] in DIMENSIONAL else facts["external_lab"],
                                   "priority": "urgent" if late > self.params["urgent_over"] else "routine"}
        return out, facts

    def criteria(self, final_response: str) -> list[Criterion]:
        expected, facts = self._overdue()
        locks = self.query("SELECT l.id, l.instrument_id, b.lab, b.priority FROM locks l LEFT JOIN bookings b ON b.lock_id = l.id")
        locked = {l["instrument_id"]: l for l in locks}
        set_ok = set(locked) == set(expected) and len(locks) == len(locked)
        booked = [i for i in expected if i in locked]
        labs_ok = bool(booked) and all(locked[i]["lab"] and locked[i]["lab"].lower() == expected[i]["lab"].lower() for i in booked)
        prio_ok = bool(booked) and all(locked[i]["priority"] == expected[i]["priority"] for i in booked)
        report_name = self.params["report_name"]
        file_ok, detail = False, f"{report_name} not found"
        path = self.workspace / report_name
        if path.is_file():
            try:
                data = json.loads(path.read_text())
                got = sorted((str(r["tag"]).strip(), str(r["due_date"]).strip(), int(r["days_overdue"])) for r in data)
                want = sorted((e["tag"], e["due"], e["late"]) for e in expected.values())
                file_ok = got == want
                detail = "matches" if file_ok else f"{len(got)} entries; expected {len(want)} with exact dates and days"
            except (ValueError, KeyError, TypeError) as exc:
                detail = f"cannot read the file: {exc}"
        return [
            Criterion("exactly_the_overdue_instruments_locked", set_ok, 2.0, f"{len(locked)} locked, {len(expected)} overdue outside {self.params['excluded_location']}"),
            Criterion("booked_with_the_right_lab", labs_ok, 1.0, "in-house for dimensional, external otherwise"),
            Criterion("booking_priority", prio_ok, 1.0, f"urgent when more than {self.params['urgent_over']} days overdue"),
            Criterion("overdue_report_written", file_ok, 1.0, detail),
            Criterion("most_overdue_named", facts["most_overdue"].lower() in final_response.lower(), 1.0,
                      f"expected {facts['most_overdue']}"),
        ]
