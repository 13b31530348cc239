"""Tools and verifier for energy_metering/meter_faults."""
import csv
import io
import json
import re
import statistics
from datetime import date, timedelta

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

FAULTS = ("reverse", "stuck", "spike")  # most serious first


def detect(series: list[tuple[str, int]], stuck_run: int, spike_factor: float, ignore: set) -> dict:
    """{fault: first date seen} for one meter's (date, register) series in date order."""
    seen = {}
    usage = [(series[i][0], series[i][1] - series[i - 1][1]) for i in range(1, len(series))]
    for day, used in usage:
        if used < 0:
            seen.setdefault("reverse", day)
    run_start, run_len = 0, 1
    for i in range(1, len(series) + 1):
        if i < len(series) and series[i][1] == series[i - 1][1]:
            run_len += 1
            continue
        if run_len >= stuck_run:
            seen.setdefault("stuck", series[run_start][0])
        run_start, run_len = i, 1
    median = statistics.median(u for _, u in usage)
    for day, used in usage:
        if used > spike_factor * median:
            seen.setdefault("spike", day)
    return {k: v for k, v in seen.items() if k not in ignore}


def working_day_after(today: date, n: int, holidays: set) -> date:
    day, counted = today, 0
    while counted < n:
        day += timedelta(days=1)
        if day.weekday() < 5 and day not in holidays:
            counted += 1
    return day


class MeterFaultsEnv(WorkspaceEnvironment):
    @tool
    def list_meters(self, page: int = 1) -> dict:
        """List meters with their account, address and installation date, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT meter_id, account_no, address, installed_on FROM meters ORDER BY id", page=page)

    @tool
    def list_readings(self, page: int = 1, meter_id: str = "") -> dict:
        """Daily register readings (kWh), ordered by meter then date, 20 per page.

        Args:
            page: 1-based page number.
            meter_id: Only this meter's readings when non-empty.
        """
        if meter_id and not self.query("SELECT 1 FROM meters WHERE meter_id = ?", (meter_id,)):
            raise ToolError(f"no meter {meter_id!r}; meter ids look like those from list_meters")
        return self.query_page("SELECT meter_id, read_date, register_kwh FROM readings WHERE ? = '' OR meter_id = ? "
                               "ORDER BY id", (meter_id, meter_id), page)  # stored by meter, then date

    @tool
    def list_tickets(self, page: int = 1, status: str = "") -> dict:
        """Existing fault tickets, 20 per page.

        Args:
            page: 1-based page number.
            status: Only "open" or "closed" tickets when non-empty.
        """
        return self.query_page("SELECT id, meter_id, fault, first_seen, status, visit_date FROM tickets "
                               "WHERE ? = '' OR status = ? ORDER BY id", (status, status), page)

    @tool
    def open_ticket(self, meter_id: str, fault: str, first_seen: str) -> dict:
        """Open a fault ticket for a meter; returns the ticket id (book the visit separately).

        Args:
            meter_id: The meter's id, e.g. "E41K00007".
            fault: "reverse", "stuck" or "spike".
            first_seen: Date the fault was first seen, YYYY-MM-DD.
        """
        if fault not in FAULTS:
            raise ToolError(f"fault must be one of {FAULTS}, got {fault!r}")
        if not self.query("SELECT 1 FROM meters WHERE meter_id = ?", (meter_id,)):
            raise ToolError(f"unknown meter {meter_id!r}")
        if self.query("SELECT 1 FROM tickets WHERE meter_id = ? AND status = 'open'", (meter_id,)):
            raise ToolError(f"meter {meter_id} already has an open ticket; add a note to it instead")
        try:
            date.fromisoformat(first_seen)
        except ValueError:
            raise ToolError(f"first_seen must be YYYY-MM-DD, got {first_seen!r}") from None
        new = self.db.execute("INSERT INTO tickets (meter_id, fault, first_seen, status) VALUES (?,?,?, 'open')",
                              (meter_id, fault, first_seen))
        return {"ticket_id": new.lastrowid, "meter_id": meter_id, "fault": fault}

    @tool
    def schedule_visit(self, ticket_id: int, visit_date: str) -> dict:
        """Book an engineer visit for an open ticket.

        Args:
            ticket_id: The ticket to book.
            visit_date: Visit date, YYYY-MM-DD.
        """
        if not self.query("SELECT 1 FROM tickets WHERE id = ? AND status = 'open'", (ticket_id,)):
            raise ToolError(f"no open ticket {ticket_id}")
        try:
            if date.fromisoformat(visit_date).weekday() >= 5:
                raise ToolError(f"{visit_date} is a weekend day; engineers work Monday to Friday")
        except ValueError:
            raise ToolError(f"visit_date must be YYYY-MM-DD, got {visit_date!r}") from None
        self.db.execute("UPDATE tickets SET visit_date = ? WHERE id = ?", (visit_date, ticket_id))
        return {"ticket_id": ticket_id, "visit_date": visit_date}

    @tool
    def add_ticket_note(self, ticket_id: int, note: str) -> dict:
        """Add a note to an existing ticket.

        Args:
            ticket_id: The ticket's id.
            note: The text of the note.
        """
        self.require_row("tickets", ticket_id, "use list_tickets")
        if not note.strip():
            raise ToolError("the note is empty")
        added = self.db.execute("INSERT INTO ticket_notes (ticket_id, note) VALUES (?, ?)", (ticket_id, note))
        return {"note_id": added.lastrowid, "ticket_id": ticket_id}

    # --- verifier --------------------------------------------------------------------------------
    def criteria(self, final_response: str) -> list[Criterion]:
        f = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        today, holidays = date.fromisoformat(f["today"]), {date.fromisoformat(f["holiday"])}
        series = {}
        for r in self.query("SELECT meter_id, read_date, register_kwh FROM readings ORDER BY meter_id, read_date"):
            series.setdefault(r["meter_id"], []).append((r["read_date"], r["register_kwh"]))
        ignore = {f["vacant_meter"]: {"stuck"}, f["solar_meter"]: {"reverse"}}
        pre_open = {t["meter_id"]: t["id"] for t in self.query("SELECT * FROM tickets WHERE id <= ? AND status = 'open'", (f["pre_tickets"],))}
        skipped = {m["meter_id"] for m in self.query("SELECT meter_id, address FROM meters")
                   if m["address"].split(" ", 1)[1] == self.params["excluded_street"]}
        new_expected, noted_expected = {}, set()
        for meter, points in series.items():
            if meter in skipped:
                continue
            found = detect(points, f["stuck_run"], f["spike_factor"], ignore.get(meter, set()))
            if not found:
                continue
            fault = next(k for k in FAULTS if k in found)
            if meter in pre_open:
                noted_expected.add(pre_open[meter])
                continue
            visit = working_day_after(today, max({"reverse": 1, "stuck": 3, "spike": 5}[fault], self.params["booked_days"] + 1), holidays)
            new_expected[meter] = (fault, found[fault], visit.isoformat())
        fresh = self.query("SELECT * FROM tickets WHERE id > ?", (f["pre_tickets"],))
        created = {t["meter_id"]: t for t in fresh}
        notes = {n["ticket_id"] for n in self.query("SELECT ticket_id FROM ticket_notes")}
        details_ok = all(m in created and (created[m]["fault"], created[m]["first_seen"]) == e[:2] for m, e in new_expected.items())
        visits_ok = all(m in created and created[m]["visit_date"] == e[2] for m, e in new_expected.items())

        report_ok, info = False, f"{self.params['report_name']} not found"
        path = self.workspace / self.params["report_name"]
        if path.is_file():
            try:
                got = {}
                for row in csv.DictReader(io.StringIO(path.read_text().strip())):
                    got[row["meter_id"].strip()] = (int(row["ticket_id"]), row["fault"].strip(), row["first_seen"].strip(), row["visit_date"].strip())
                want = {m: (created[m]["id"],) + e for m, e in new_expected.items() if m in created}
                report_ok = got == want and len(want) == len(new_expected)
                info = f"{len(got)} rows, {len(new_expected)} expected"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                info = f"could not read it: {exc}"
        counts = [int(x) for x in re.findall(r"\b\d+\b", final_response)]
        return [
            Criterion("new_tickets_for_exactly_the_faulty_meters", set(created) == set(new_expected) and len(fresh) == len(created), 2.0,
                      f"{len(created)} new tickets, {len(new_expected)} expected (none on {self.params['excluded_street']})"),
            Criterion("fault_type_and_first_seen_correct", details_ok, 1.0, "most serious fault, earliest occurrence"),
            Criterion("visits_on_required_working_day", visits_ok, 1.0, f"working days skip weekends and the public holiday; none in the first {self.params['booked_days']} (fully booked)"),
            Criterion("existing_tickets_noted_not_duplicated", noted_expected <= notes, 1.0, f"notes expected on {sorted(noted_expected)}"),
            Criterion("ticket_report_written", report_ok, 1.0, info),
            Criterion("new_ticket_count_reported", len(new_expected) in counts, 1.0, f"expected {len(new_expected)}"),
        ]
