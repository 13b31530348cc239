from datetime import date

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool
from progagent_lib.task.criteria import MAX_FILE_CHARS, compare_rows, parse_rows

FAULTS = ("reverse", "stuck", "spike")  # most serious first


class MeterFaultsEnv(WorkspaceEnvironment):
    @tool
    def list_meters(self, page: int = 1) -> dict:
        """List meters with their account, address and installation date, 20 per page."""
        return self.query_page("SELECT meter_id, account_no, address, installed_on FROM meters ORDER BY id", page=page)

    @tool
    def list_readings(self, page: int = 1, meter_id: str = "") -> dict:
        """Daily register readings (kWh), ordered by meter then date, 20 per page.

        Args:
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

    def report_written(self, new: str) -> Criterion:
        """The report lists the reference's new tickets, each under the id the episode's ticket got."""
        name = self.params["report_name"]
        written = self.file_matches(name, key="meter_id", columns=["fault", "first_seen", "visit_date"],
                                    criterion="ticket_report_written")
        if not written.passed:
            return written
        ids = self.query(f"SELECT id AS ticket_id, meter_id FROM tickets WHERE {new}")
        problem = compare_rows(parse_rows(self.fs.read_text(name, MAX_FILE_CHARS), "csv"), ids, ["meter_id"],
                               ["ticket_id"], tolerance=0)
        return Criterion(written.name, problem is None, 1.0, problem or written.detail)

    def criteria(self, final_response: str) -> list[Criterion]:
        new = f"id > {self.facts['pre_tickets']}"
        opened = self.reference.query(f"SELECT count(*) AS n FROM tickets WHERE {new}")[0]["n"]
        return [
            self.tables_match("tickets", key="meter_id", where=new, weight=2.0,
                              criterion="new_tickets_for_exactly_the_faulty_meters"),
            self.tables_match("tickets", key="meter_id", columns=["fault", "first_seen"], where=new,
                              criterion="fault_type_and_first_seen_correct"),
            self.tables_match("tickets", key="meter_id", columns="visit_date", where=new,
                              criterion="visits_on_required_working_day"),
            self.tables_match("tickets", key="id", where=f"NOT {new} AND id IN (SELECT ticket_id FROM ticket_notes)",
                              criterion="existing_tickets_noted_not_duplicated"),
            self.report_written(new),
            self.answer_states(opened, criterion="new_ticket_count_reported"),
        ]
