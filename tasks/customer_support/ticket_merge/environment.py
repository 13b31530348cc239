"""Tools and verifier for customer_support/ticket_merge."""
import json
import re
from datetime import datetime, timedelta

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


def subject_key(subject: str) -> str:
    text = subject.lower()
    while True:
        stripped = re.sub(r"^\s*(re|fw|fwd)\s*:\s*", "", text)
        if stripped == text:
            break
        text = stripped
    return " ".join(re.sub(r"[^a-z0-9 ]", " ", text).split())


class TicketMergeEnv(WorkspaceEnvironment):
    @tool
    def list_tickets(self, status: str = "", page: int = 1) -> dict:
        """List tickets oldest first, 20 per page.

        Args:
            status: Only tickets with this status ("open", "pending", "solved", "merged") when non-empty.
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def expected(self) -> dict[int, list[int]]:
        f = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        canonical = {b.lower(): a.lower() for a, b in f["aliases"]}
        start = {r["ticket_id"]: r["status"] for r in self.query("SELECT ticket_id, status FROM _status_at_start")}
        cutoff = datetime.strptime(self.params["cutoff_date"], "%d %B %Y").strftime("%Y-%m-%d %H:%M")
        threads = {}
        for t in self.query("SELECT id, requester_email, subject, created_at, tags FROM tickets ORDER BY created_at, id"):
            if start[t["id"]] == "solved" or "legal" in t["tags"].split(","):
                continue
            if t["created_at"] < cutoff or t["requester_email"].lower().split("@")[1] == self.params["excluded_domain"]:
                continue  # archived, or handled by that customer's own account team
            who = t["requester_email"].lower()
            threads.setdefault((canonical.get(who, who), subject_key(t["subject"])), []).append(t)
        merges = {}
        window = timedelta(hours=f["window_hours"])
        for tickets in threads.values():
            primary = None
            for t in tickets:
                when = datetime.strptime(t["created_at"], "%Y-%m-%d %H:%M")
                if primary and when - primary[1] <= window:
                    merges[primary[0]].append(t["id"])
                else:
                    primary = (t["id"], when)
                    merges[t["id"]] = []
        return {p: ids for p, ids in merges.items() if ids}

    def criteria(self, final_response: str) -> list[Criterion]:
        expected = self.expected()
        done = {}
        for r in self.query("SELECT id, merged_into FROM tickets WHERE status = 'merged'"):
            done.setdefault(r["merged_into"], []).append(r["id"])
        done = {k: sorted(v) for k, v in done.items()}
        want = {k: sorted(v) for k, v in expected.items()}
        merged_away = {i for v in want.values() for i in v}
        notes = {}
        for n in self.query("SELECT ticket_id, body FROM ticket_notes WHERE internal = 1"):
            notes[n["ticket_id"]] = notes.get(n["ticket_id"], "") + "\n" + n["body"]
        notes_ok = all(all(str(i) in notes.get(p, "") for i in ids) for p, ids in want.items())
        report_ok, detail = False, f"{self.params['log_name']} not found"
        path = self.workspace / self.params["log_name"]
        if path.is_file():
            try:
                data = json.loads(path.read_text())
                got = {int(k): sorted(int(i) for i in v) for k, v in data.items() if v}
                report_ok = got == want
                detail = "matches the expected merges" if report_ok else f"{len(got)} primaries listed, {len(want)} expected"
            except (ValueError, TypeError, AttributeError) as exc:
                detail = f"cannot parse the log: {exc}"
        counts = {int(n) for n in re.findall(r"(?<![\d.])\d+(?![\d.])", final_response)}
        wrong = {i for v in done.values() for i in v} - merged_away
        return [
            Criterion("duplicates_merged_into_the_right_primary", done == want, 2.0,
                      f"{sum(map(len, done.values()))} tickets merged, {len(merged_away)} expected"),
            Criterion("no_protected_ticket_merged", not wrong, 1.0, f"{len(wrong)} tickets merged that should stay"),
            Criterion("internal_notes_left", bool(want) and notes_ok, 1.0, "each primary's note lists the tickets merged into it"),
            Criterion("merge_log_written", report_ok, 1.0, detail),
            Criterion("merged_count_reported", len(merged_away) in counts, 1.0, f"expected {len(merged_away)}"),
        ]
