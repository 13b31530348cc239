"""Tools and verifier for research_lab_inventory/equipment_booking."""
import csv
import io
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

REASONS = ("outside hours", "over quota", "no capacity")
PRIORITY = {"teaching": 0, "grant": 1, "internal": 2}


def allocate(requests: list[dict], groups: dict, instruments: list[dict], facts: dict, closing_hour: int) -> dict:
    """The policy's decision for every request: {request_id: (decision, instrument_id or None, reason or None)}."""
    busy = {i["id"]: [] for i in instruments}
    down_id, down_day, down_from, down_to = facts["maintenance"]
    busy[down_id].append((down_day, down_from, down_to))
    used = {g: 0 for g in groups}
    result = {}
    for r in sorted(requests, key=lambda r: (PRIORITY[groups[r["group_id"]]["funding"]], r["submitted_at"], r["request_no"])):
        start, end = r["start_hour"], r["start_hour"] + r["hours"]
        limit = facts["boost_cap"] if r["group_id"] == facts["boosted"] else facts["cap"]
        if start < 8 or end > closing_hour:
            result[r["id"]] = ("rejected", None, "outside hours")
            continue
        if used[r["group_id"]] + r["hours"] > limit:
            result[r["id"]] = ("rejected", None, "over quota")
            continue
        free = [i for i in instruments if i["kind"] == r["kind"] and not any(
            d == r["day"] and s < end and start < e for d, s, e in busy[i["id"]])]
        if not free:
            result[r["id"]] = ("rejected", None, "no capacity")
            continue
        chosen = min(free, key=lambda i: i["asset_tag"])
        busy[chosen["id"]].append((r["day"], start, end))
        used[r["group_id"]] += r["hours"]
        result[r["id"]] = ("approved", chosen["id"], None)
    return result


class EquipmentBookingEnv(WorkspaceEnvironment):
    @tool
    def list_instruments(self, page: int = 1, kind: str = "") -> dict:
        """Instruments in the core, with asset tag, kind and room; 20 per page.

        Args:
            page: 1-based page number.
            kind: Only this kind of instrument, e.g. "flow cytometer", when non-empty.
        """
        return self.query_page("SELECT id, asset_tag, kind, room FROM instruments WHERE ? = '' OR kind = ? ORDER BY id",
                               (kind, kind), page)

    @tool
    def list_groups(self, page: int = 1) -> dict:
        """Research groups and how each is funded; 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, name, funding FROM groups ORDER BY id", page=page)

    @tool
    def list_requests(self, page: int = 1, day: str = "") -> dict:
        """Booking requests for next week (start hour on a 24-hour clock, length in whole hours); 20 per page.

        Args:
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def criteria(self, final_response: str) -> list[Criterion]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        requests = self.query("SELECT * FROM requests")
        groups = {g["id"]: g for g in self.query("SELECT * FROM groups")}
        instruments = self.query("SELECT * FROM instruments")
        want = allocate(requests, groups, instruments, facts, self.params["closing_hour"])
        got = {d["request_id"]: (d["decision"], d["instrument_id"], d["reason"]) for d in self.query("SELECT * FROM decisions")}
        approvals_ok = all(got.get(k, (None,))[:2] == v[:2] for k, v in want.items() if v[0] == "approved") and \
            {k for k, v in got.items() if v[0] == "approved"} == {k for k, v in want.items() if v[0] == "approved"}
        reasons_ok = all(got.get(k) == v for k, v in want.items() if v[0] == "rejected")
        down_id, down_day, lo, hi = facts["maintenance"]
        by_id = {r["id"]: r for r in requests}
        maintenance_ok = not any(v[1] == down_id and by_id[k]["day"] == down_day and by_id[k]["start_hour"] < hi
                                 and lo < by_id[k]["start_hour"] + by_id[k]["hours"] for k, v in got.items() if v[0] == "approved")

        tags = {i["id"]: i["asset_tag"] for i in instruments}
        report_name = self.params["report_name"]
        plan_ok, info = False, f"{report_name} not found"
        path = self.workspace / report_name
        if path.is_file():
            try:
                plan = {row["request_no"].strip(): (row["decision"].strip().lower(), (row.get("instrument") or "").strip())
                        for row in csv.DictReader(io.StringIO(path.read_text().strip()))}
                expected_plan = {by_id[k]["request_no"]: (v[0], tags[v[1]] if v[1] else "") for k, v in want.items()}
                plan_ok = plan == expected_plan
                info = f"{len(plan)} rows, {sum(a != b for a, b in zip(sorted(plan.items()), sorted(expected_plan.items())))} differ"
            except (KeyError, TypeError, AttributeError, csv.Error) as exc:
                info = f"could not read it: {exc}"
        rejected = sum(1 for v in want.values() if v[0] == "rejected")
        return [
            Criterion("every_request_decided_once", set(got) == set(want), 1.0, f"{len(got)} of {len(want)} decided"),
            Criterion("approvals_on_the_right_instruments", approvals_ok, 2.0, "priority order, lowest free asset tag"),
            Criterion("rejection_reasons_correct", reasons_ok, 1.0, f"hours (closing at {self.params['closing_hour']}:00), quota (with the exception) and capacity"),
            Criterion("maintenance_window_respected", maintenance_ok, 1.0, "nothing booked on the instrument under service"),
            Criterion("plan_written", plan_ok, 1.0, info),
            Criterion("rejected_count_reported", str(rejected) in re.findall(r"\d+", final_response), 1.0, f"expected {rejected}"),
        ]
