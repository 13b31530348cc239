"""Tools and verifier for library_circulation/interlibrary_loans."""
import datetime as dt
import json
import re
from typing import Literal

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

REASONS = ("suspended", "format", "no_copy", "limit")


class InterlibraryLoanEnv(WorkspaceEnvironment):
    @tool
    def list_requests(self, page: int = 1, status: Literal["pending", "filled", "declined", ""] = "pending") -> dict:
        """List interlibrary loan requests from partner libraries, oldest first, 20 per page.

        Args:
            page: 1-based page number.
            status: "pending", "filled", "declined", or "" for all.
        """
        sql = "SELECT id, partner_id, isbn, requested_on, status, patron_ref FROM requests"
        return self.query_page(sql + (" WHERE status = ?" if status else "") + " ORDER BY requested_on, id", (status,) if status else (), page)

    @tool
    def list_partners(self, page: int = 1) -> dict:
        """List partner libraries with their code, name and how many of our items they hold now, 20 per page.

        Args:
            page: 1-based page number.
        """
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
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def _outcomes(self) -> dict[int, str]:
        """Replay the queue from the original rows: request id -> "ship:<due date>" or a decline reason."""
        terms = json.loads(self.query("SELECT value FROM _verifier_facts WHERE key = 'terms'")[0]["value"])
        partners = {p["id"]: p for p in self.query("SELECT id, code, items_on_loan FROM partners")}
        fmt = {t["isbn"]: t["format"] for t in self.query("SELECT isbn, format FROM titles")}
        # Copies that were lendable before the episode: the ones still untouched plus those the agent moved.
        lendable: dict[str, int] = {}
        for c in self.query("SELECT c.isbn, c.status, h.id AS held FROM copies c LEFT JOIN holds h ON h.copy_id = c.id "
                            "WHERE c.collection = 'general'"):
            if c["status"] == "available" or c["held"]:
                lendable[c["isbn"]] = lendable.get(c["isbn"], 0) + 1
        held_before = {p: partners[p]["items_on_loan"] for p in partners}
        ship = dt.datetime.strptime(self.params["courier_date"], "%d %B %Y").date()
        cutoff = dt.datetime.strptime(self.params["request_cutoff"], "%d %B %Y").date().isoformat()
        out = {}
        pending = self.query("SELECT r.id, r.partner_id, r.isbn, r.requested_on FROM requests r LEFT JOIN shipments s ON s.request_id = r.id "
                             "LEFT JOIN declines d ON d.request_id = r.id WHERE r.status = 'pending' OR s.id IS NOT NULL "
                             "OR d.id IS NOT NULL ORDER BY r.requested_on, r.id")
        for r in pending:
            if r["requested_on"] > cutoff:
                continue  # too late for this courier run: stays pending
            code = partners[r["partner_id"]]["code"]
            deal = terms["agreements"][code]
            if code == terms["suspended"]:
                out[r["id"]] = "suspended"
            elif fmt[r["isbn"]] not in deal["formats"]:
                out[r["id"]] = "format"
            elif lendable.get(r["isbn"], 0) < 2:
                out[r["id"]] = "no_copy"
            elif held_before[r["partner_id"]] + 1 > deal["limit"]:
                out[r["id"]] = "limit"
            else:
                lendable[r["isbn"]] -= 1
                held_before[r["partner_id"]] += 1
                out[r["id"]] = "ship:" + (ship + dt.timedelta(days=deal["days"])).isoformat()
        return out

    def criteria(self, final_response: str) -> list[Criterion]:
        expected = self._outcomes()
        shipped = {s["request_id"]: s for s in self.query(
            "SELECT s.request_id, s.due_date, c.isbn AS copy_isbn, c.collection, r.isbn FROM shipments s JOIN holds h ON h.id = s.hold_id "
            "JOIN copies c ON c.id = h.copy_id JOIN requests r ON r.id = s.request_id")}
        declined = {d["request_id"]: d["reason"] for d in self.query("SELECT request_id, reason FROM declines")}
        want_ship = {k for k, v in expected.items() if v.startswith("ship:")}
        ship_ok = set(shipped) == want_ship
        copies_ok = bool(shipped) and all(s["copy_isbn"] == s["isbn"] and s["collection"] == "general" for s in shipped.values())
        due_ok = bool(shipped) and all(expected.get(k) == "ship:" + s["due_date"] for k, s in shipped.items())
        want_decline = {k: v for k, v in expected.items() if not v.startswith("ship:")}
        decline_ok = declined == want_decline
        stray_holds = self.query("SELECT COUNT(*) AS n FROM holds h LEFT JOIN shipments s ON s.hold_id = h.id WHERE s.id IS NULL")[0]["n"]
        count_ok = str(len(want_ship)) in re.findall(r"\d+", final_response)
        return [
            Criterion("shipped_exactly_the_lendable_requests", ship_ok and stray_holds == 0, 2.0,
                      f"{len(shipped)} shipped, {len(want_ship)} expected, {stray_holds} holds never shipped "
                      f"(requests up to {self.params['request_cutoff']})"),
            Criterion("right_copies_held", copies_ok, 1.0, "each shipment holds a general-collection copy of the title"),
            Criterion("due_dates_per_agreement", due_ok, 1.0, f"courier date {self.params['courier_date']} + the partner's loan period"),
            Criterion("declines_with_reasons", decline_ok, 1.0, f"{len(want_decline)} declines expected"),
            Criterion("shipped_count_reported", count_ok, 1.0, f"expected {len(want_ship)}"),
        ]
