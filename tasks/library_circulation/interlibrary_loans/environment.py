import datetime as dt
from typing import Literal

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

REASONS = ("suspended", "format", "no_copy", "limit")


class InterlibraryLoanEnv(WorkspaceEnvironment):
    @tool
    def list_requests(self, page: int = 1, status: Literal["pending", "filled", "declined", ""] = "pending") -> dict:
        """List interlibrary loan requests from partner libraries, oldest first, 20 per page.

        Args:
            status: "pending", "filled", "declined", or "" for all.
        """
        sql = "SELECT id, partner_id, isbn, requested_on, status, patron_ref FROM requests"
        return self.query_page(sql + (" WHERE status = ?" if status else "") + " ORDER BY requested_on, id", (status,) if status else (), page)

    @tool
    def list_partners(self, page: int = 1) -> dict:
        """List partner libraries with their code, name and how many of our items they hold now, 20 per page."""
        return self.query_page("SELECT id, code, name, items_on_loan FROM partners ORDER BY id", page=page)

    @tool
    def get_title(self, isbn: str) -> dict:
        """Get a title's name and format (book, audiobook or dvd).

        Args:
            isbn: The 13-digit ISBN.
        """
        rows = self.query("SELECT isbn, title, format FROM titles WHERE isbn = ?", (isbn,))
        if not rows:
            raise ToolError(f"no title with ISBN {isbn!r}")
        return rows[0]

    @tool
    def list_copies(self, isbn: str, page: int = 1) -> dict:
        """List the copies we own of a title: barcode, branch, collection and status, 20 per page.

        Args:
            isbn: The 13-digit ISBN.
        """
        if not self.query("SELECT isbn FROM titles WHERE isbn = ?", (isbn,)):
            raise ToolError(f"no title with ISBN {isbn!r}")
        return self.query_page("SELECT id, barcode, branch, collection, status FROM copies WHERE isbn = ? ORDER BY id",
                               (isbn,), page)

    @tool
    def place_hold(self, copy_id: int, request_id: int) -> dict:
        """Put an available copy on hold for a loan request; returns the hold id used to ship it.

        Args:
            copy_id: The copy to hold.
            request_id: The request it is held for.
        """
        copy = self.require_row("copies", copy_id, "use list_copies", what="copy")
        if copy["status"] != "available":
            raise ToolError(f"copy {copy_id} is {copy['status']}, not available")
        if not self.query("SELECT id FROM requests WHERE id = ? AND status = 'pending'", (request_id,)):
            raise ToolError(f"no pending request with id {request_id}")
        self.db.execute("UPDATE copies SET status = 'on hold' WHERE id = ?", (copy_id,))
        cur = self.db.execute("INSERT INTO holds (copy_id, request_id) VALUES (?, ?)", (copy_id, request_id))
        return {"hold_id": cur.lastrowid, "copy_id": copy_id, "request_id": request_id}

    @tool
    def ship_loan(self, request_id: int, hold_id: int, due_date: str) -> dict:
        """Ship the held copy to the requesting library and mark the request filled.

        Args:
            request_id: The request being filled.
            hold_id: The hold placed for it.
            due_date: Date the partner must return it, YYYY-MM-DD.
        """
        try:
            dt.date.fromisoformat(due_date)
        except ValueError:
            raise ToolError(f"due_date must be YYYY-MM-DD, got {due_date!r}") from None
        hold = self.query("SELECT id, copy_id, request_id FROM holds WHERE id = ?", (hold_id,))
        if not hold or hold[0]["request_id"] != request_id:
            raise ToolError(f"hold {hold_id} does not exist for request {request_id}; place a hold first")
        if not self.query("SELECT id FROM requests WHERE id = ? AND status = 'pending'", (request_id,)):
            raise ToolError(f"request {request_id} is not pending")
        self.db.execute("UPDATE requests SET status = 'filled' WHERE id = ?", (request_id,))
        self.db.execute("UPDATE copies SET status = 'in transit' WHERE id = ?", (hold[0]["copy_id"],))
        cur = self.db.execute("INSERT INTO shipments (request_id, hold_id, due_date) VALUES (?,?,?)", (request_id, hold_id, due_date))
        return {"shipment_id": cur.lastrowid, "request_id": request_id, "due_date": due_date}

    @tool
    def decline_request(self, request_id: int, reason: str) -> dict:
        """Decline a pending request.

        Args:
            request_id: The request to decline.
            reason: One of "suspended", "format", "no_copy", "limit".
        """
        if reason not in REASONS:
            raise ToolError(f"reason must be one of {REASONS}")
        if not self.query("SELECT id FROM requests WHERE id = ? AND status = 'pending'", (request_id,)):
            raise ToolError(f"no pending request with id {request_id}")
        self.db.execute("UPDATE requests SET status = 'declined' WHERE id = ?", (request_id,))
        self.db.execute("INSERT INTO declines (request_id, reason) VALUES (?, ?)", (request_id, reason))
        return {"request_id": request_id, "status": "declined", "reason": reason}

    def criteria(self, final_response: str) -> list[Criterion]:
        # Any general-collection copy of the title will do, so the held copy is a rule, not the reference's copy.
        held, wrong_copies = self.query(
            "SELECT count(*) AS n, coalesce(sum(c.isbn != r.isbn OR c.collection != 'general'), 0) AS wrong "
            "FROM shipments s JOIN holds h ON h.id = s.hold_id JOIN copies c ON c.id = h.copy_id "
            "JOIN requests r ON r.id = s.request_id")[0].values()
        shipped = self.reference.query("SELECT count(*) AS n FROM shipments")[0]["n"]
        return [
            self.tables_match("holds h LEFT JOIN shipments s ON s.hold_id = h.id", key="h.request_id",
                              columns="s.request_id", weight=2.0, criterion="shipped_exactly_the_lendable_requests"),
            Criterion("right_copies_held", bool(held) and wrong_copies == 0, 1.0,
                      f"{wrong_copies} of {held} shipments hold no general-collection copy of the title"),
            self.tables_match("shipments", key="request_id", columns="due_date", criterion="due_dates_per_agreement"),
            self.tables_match("declines", key="request_id", columns="reason", criterion="declines_with_reasons"),
            self.answer_states(shipped, criterion="shipped_count_reported"),
        ]
