from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class TicketMergeEnv(WorkspaceEnvironment):
    @tool
    def list_tickets(self, status: str = "", page: int = 1) -> dict:
        """List tickets oldest first, 20 per page.

        Args:
            status: Only tickets with this status ("open", "pending", "solved", "merged") when non-empty.
        """
        sql = "SELECT id, requester_email, subject, created_at, status, tags, merged_into, first_message FROM tickets"
        where, args = (" WHERE status = ?", (status,)) if status else ("", ())
        return self.query_page(sql + where + " ORDER BY created_at, id", args, page)

    @tool
    def merge_ticket(self, source_id: int, target_id: int) -> dict:
        """Merge one ticket into another: the source is closed as a duplicate pointing at the target.

        Args:
            source_id: The duplicate ticket to close.
            target_id: The ticket it is merged into.
        """
        if source_id == target_id:
            raise ToolError("a ticket cannot be merged into itself")
        rows = {r["id"]: r for r in self.query("SELECT id, status FROM tickets WHERE id IN (?, ?)", (source_id, target_id))}
        for tid in (source_id, target_id):
            if tid not in rows:
                raise ToolError(f"no ticket with id {tid}")
            if rows[tid]["status"] == "merged":
                raise ToolError(f"ticket {tid} was already merged away")
        self.db.execute("UPDATE tickets SET status = 'merged', merged_into = ? WHERE id = ?", (target_id, source_id))
        return {"source_id": source_id, "target_id": target_id, "status": "merged"}

    @tool
    def add_internal_note(self, ticket_id: int, body: str) -> dict:
        """Add an internal (agent-only) note to a ticket; returns the note id.

        Args:
            ticket_id: The ticket to annotate.
            body: The note's text.
        """
        self.require_row("tickets", ticket_id, "use list_tickets")
        if not body.strip():
            raise ToolError("the note is empty")
        cur = self.db.execute("INSERT INTO ticket_notes (ticket_id, body, internal) VALUES (?, ?, 1)", (ticket_id, body))
        return {"note_id": cur.lastrowid, "ticket_id": ticket_id}

    def criteria(self, final_response: str) -> list[Criterion]:
        merged = "SELECT id, merged_into FROM tickets WHERE status = 'merged'"
        want = self.reference.query(merged)
        wrong = {r["id"] for r in self.query(merged)} - {r["id"] for r in want}
        notes = {}
        for note in self.query("SELECT ticket_id, body FROM ticket_notes WHERE internal = 1"):
            notes[note["ticket_id"]] = notes.get(note["ticket_id"], "") + "\n" + note["body"]
        unnoted = [r["id"] for r in want if str(r["id"]) not in notes.get(r["merged_into"], "")]
        return [
            self.tables_match("tickets", key="id", columns="merged_into", where="status = 'merged'", weight=2.0,
                              criterion="duplicates_merged_into_the_right_primary"),
            Criterion("no_protected_ticket_merged", not wrong, 1.0, f"{len(wrong)} tickets merged that should stay"),
            Criterion("internal_notes_left", bool(want) and not unnoted, 1.0,
                      f"{len(unnoted)} merged tickets missing from their primary's internal notes"),
            self.file_matches(self.params["log_name"], as_="json", criterion="merge_log_written"),
            self.answer_states(len(want), criterion="merged_count_reported"),
        ]
