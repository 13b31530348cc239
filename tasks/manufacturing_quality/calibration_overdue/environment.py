import json
from typing import Literal

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool
from progagent_lib.task.criteria import compare_rows


class CalibrationEnv(WorkspaceEnvironment):
    @tool
    def list_instruments(self, page: int = 1) -> dict:
        """List registered measuring instruments with type, location, status and calibration interval, 20 per page."""
        return self.query_page("SELECT id, tag, type, location, status, interval_days, commissioned_on, serial "
                               "FROM instruments ORDER BY id", page=page)

    @tool
    def list_calibrations(self, instrument_id: int, page: int = 1) -> dict:
        """List one instrument's calibration history (date, result, certificate), oldest first, 20 per page.

        Args:
            instrument_id: The instrument's numeric id.
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

    def criteria(self, final_response: str) -> list[Criterion]:
        name = self.params["report_name"]
        most_overdue = max(json.loads(self.reference.read(name) or "[]"), key=lambda r: r["days_overdue"])["tag"]
        return [
            self.tables_match("locks", key="instrument_id", weight=2.0,
                              criterion="exactly_the_overdue_instruments_locked"),
            self.bookings_match("lab", criterion="booked_with_the_right_lab"),
            self.bookings_match("priority", criterion="booking_priority"),
            self.file_matches(name, as_="json", key="tag", criterion="overdue_report_written"),
            self.answer_states(most_overdue, criterion="most_overdue_named"),
        ]

    def bookings_match(self, column: str, criterion: str) -> Criterion:
        """The bookings' `column` is the reference's on every overdue instrument the episode locked; which instruments
        it locked is the first criterion's to judge, so a missed one does not fail this one too."""
        sql = f"SELECT l.instrument_id, b.{column} FROM locks l LEFT JOIN bookings b ON b.lock_id = l.id"
        want = {row[0]: row[1] for row in self.reference.db.execute(sql)}
        got = [{"id": row[0], column: row[1]} for row in self.db.execute(sql) if row[0] in want]
        problem = compare_rows(got, [{"id": row["id"], column: want[row["id"]]} for row in got], ["id"], [column], 0)
        problem = problem if got else "no overdue instrument is locked"
        return Criterion(criterion, problem is None, 1.0, problem or f"{len(got)} bookings as expected")
