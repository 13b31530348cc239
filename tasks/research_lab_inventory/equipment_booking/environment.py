from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

REASONS = ("outside hours", "over quota", "no capacity")


class EquipmentBookingEnv(WorkspaceEnvironment):
    @tool
    def list_instruments(self, page: int = 1, kind: str = "") -> dict:
        """Instruments in the core, with asset tag, kind and room; 20 per page.

        Args:
            kind: Only this kind of instrument, e.g. "flow cytometer", when non-empty.
        """
        return self.query_page("SELECT id, asset_tag, kind, room FROM instruments WHERE ? = '' OR kind = ? ORDER BY id",
                               (kind, kind), page)

    @tool
    def list_groups(self, page: int = 1) -> dict:
        """Research groups and how each is funded; 20 per page."""
        return self.query_page("SELECT id, name, funding FROM groups ORDER BY id", page=page)

    @tool
    def list_requests(self, page: int = 1, day: str = "") -> dict:
        """Booking requests for next week (start hour on a 24-hour clock, length in whole hours); 20 per page.

        Args:
            day: Only requests for this date (YYYY-MM-DD) when non-empty.
        """
        return self.query_page("SELECT id, request_no, group_id, kind, day, start_hour, hours, submitted_at FROM requests "
                               "WHERE ? = '' OR day = ? ORDER BY id", (day, day), page)

    def _undecided(self, request_id: int) -> dict:
        found = self.require_row("requests", request_id, "use list_requests")
        if self.query("SELECT 1 FROM decisions WHERE request_id = ?", (request_id,)):
            raise ToolError(f"request {request_id} has already been decided")
        return found

    @tool
    def approve_request(self, request_id: int, instrument_id: int) -> dict:
        """Approve a request on one instrument; returns the booking id.

        Args:
            request_id: The request's numeric id.
            instrument_id: The numeric id of the instrument to book.
        """
        req = self._undecided(request_id)
        inst = self.query("SELECT * FROM instruments WHERE id = ?", (instrument_id,))
        if not inst or inst[0]["kind"] != req["kind"]:
            raise ToolError(f"instrument {instrument_id} is not a {req['kind']}")
        end = req["start_hour"] + req["hours"]
        clash = self.query("SELECT r.request_no FROM decisions d JOIN requests r ON r.id = d.request_id WHERE d.instrument_id = ? "
                           "AND r.day = ? AND r.start_hour < ? AND ? < r.start_hour + r.hours", (instrument_id, req["day"], end, req["start_hour"]))
        if clash:
            raise ToolError(f"instrument {instrument_id} is already booked then by {clash[0]['request_no']}")
        booking = self.db.execute("INSERT INTO decisions (request_id, decision, instrument_id) VALUES (?, 'approved', ?)",
                                  (request_id, instrument_id))
        return {"booking_id": booking.lastrowid, "request_id": request_id, "instrument_id": instrument_id}

    @tool
    def reject_request(self, request_id: int, reason: str) -> dict:
        """Reject a request with one of the policy's reasons.

        Args:
            request_id: The request's numeric id.
            reason: "outside hours", "over quota" or "no capacity".
        """
        if reason not in REASONS:
            raise ToolError(f"reason must be one of {REASONS}")
        self._undecided(request_id)
        self.db.execute("INSERT INTO decisions (request_id, decision, reason) VALUES (?, 'rejected', ?)", (request_id, reason))
        return {"request_id": request_id, "decision": "rejected", "reason": reason}

    def criteria(self, final_response: str) -> list[Criterion]:
        down_id, down_day, lo, hi = self.facts["maintenance"]
        clashes = self.query("SELECT count(*) AS n FROM decisions d JOIN requests r ON r.id = d.request_id WHERE "
                             "d.decision = 'approved' AND d.instrument_id = ? AND r.day = ? AND r.start_hour < ? "
                             "AND ? < r.start_hour + r.hours", (down_id, down_day, hi, lo))[0]["n"]
        rejected = self.reference.query("SELECT count(*) AS n FROM decisions WHERE decision = 'rejected'")[0]["n"]
        return [
            self.tables_match("decisions", key="request_id", criterion="every_request_decided_once"),
            self.tables_match("decisions", key="request_id", columns="instrument_id", where="decision = 'approved'",
                              criterion="approvals_on_the_right_instruments", weight=2.0),
            self.tables_match("decisions", key="request_id", columns="reason", where="decision = 'rejected'",
                              criterion="rejection_reasons_correct"),
            Criterion("maintenance_window_respected", clashes == 0, 1.0, f"{clashes} bookings on the instrument under service"),
            self.file_matches(self.params["report_name"], key="request_no", columns=["decision", "instrument"],
                              criterion="plan_written"),
            self.answer_states(rejected, criterion="rejected_count_reported"),
        ]
