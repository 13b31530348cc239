from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool
from progagent_lib.task.criteria import parse_rows

TEAMS = ("tier2", "duty_manager")
STATUSES = ("open", "pending", "solved")


class SlaEscalationEnv(WorkspaceEnvironment):
    @tool
    def list_customers(self, page: int = 1) -> dict:
        """List customer accounts with their support plan, 20 per page."""
        return self.query_page("SELECT id, name, plan, region, seats FROM customers ORDER BY id", page=page)

    @tool
    def list_tickets(self, status: str = "", page: int = 1) -> dict:
        """List support tickets, oldest id first, 20 per page. Times are UTC, "YYYY-MM-DD HH:MM".

        Args:
            status: Only tickets with this status ("open", "pending" or "solved") when non-empty.
        """
        if status and status not in STATUSES:
            raise ToolError(f"unknown status {status!r}; use one of {', '.join(STATUSES)} or leave it empty")
        sql = "SELECT id, customer_id, subject, priority, status, channel, created_at, first_reply_at, assignee FROM tickets"
        return self.query_page(sql + (" WHERE status = ?" if status else "") + " ORDER BY id", (status,) if status else (), page)

    @tool
    def list_escalations(self, page: int = 1) -> dict:
        """List escalations already on file, 20 per page."""
        return self.query_page("SELECT id, ticket_id, team, reason, created_at FROM escalations ORDER BY id", page=page)

    @tool
    def escalate_ticket(self, ticket_id: int, team: str, reason: str) -> dict:
        """Escalate one ticket to a team; returns the new escalation record.

        Args:
            ticket_id: The ticket's numeric id.
            team: "tier2" or "duty_manager".
            reason: A short note for the receiving team.
        """
        if team not in TEAMS:
            raise ToolError(f"unknown team {team!r}; use 'tier2' or 'duty_manager'")
        self.require_row("tickets", ticket_id, "use list_tickets")
        if self.query("SELECT id FROM escalations WHERE ticket_id = ?", (ticket_id,)):
            raise ToolError(f"ticket {ticket_id} already has an escalation on file; it cannot be escalated again")
        cur = self.db.execute("INSERT INTO escalations (ticket_id, team, reason, created_at) VALUES (?,?,?, '2026-11-20 09:00')",
                              (ticket_id, team, reason))
        return {"escalation_id": cur.lastrowid, "ticket_id": ticket_id, "team": team}

    def criteria(self, final_response: str) -> list[Criterion]:
        report, swept = self.params["report_name"], "created_at = '2026-11-20 09:00'"  # made during the sweep
        breaches = parse_rows(self.reference.read(report), "csv")
        worst = max(float(b["hours_overdue"]) for b in breaches)
        worst_ids = [int(b["ticket_id"]) for b in breaches if float(b["hours_overdue"]) == worst]  # ties: any
        return [
            self.tables_match("escalations", key="ticket_id", where=swept, weight=2.0,
                              criterion="escalated_exactly_the_breached_tickets"),
            self.tables_match("escalations", key="ticket_id", columns="team", where=swept,
                              criterion="routed_to_the_right_team"),
            self.file_matches(report, as_="csv", key="ticket_id", tolerance=0.051, criterion="report_written"),
            self.answer_states(len(breaches), criterion="count_reported"),
            Criterion("most_overdue_ticket_reported", any(self.answer_states(t).passed for t in worst_ids), 1.0,
                      f"expected ticket {' or '.join(map(str, worst_ids))}"),
        ]
