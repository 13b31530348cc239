from datetime import date

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

ENTRY_DAY = "2026-11-30"  # the day this run's fines are entered


def _day(text: str, what: str) -> date:
    try:
        return date.fromisoformat(text)
    except (TypeError, ValueError):
        raise ToolError(f"{what} must be a date like 2026-11-01, got {text!r}") from None


class OverdueFinesEnv(WorkspaceEnvironment):
    @tool
    def list_patrons(self, page: int = 1) -> dict:
        """List library card holders with their card type and block status, 20 per page."""
        return self.query_page("SELECT id, card_number, name, card_type, blocked FROM patrons ORDER BY id", page=page)

    @tool
    def list_items(self, page: int = 1) -> dict:
        """List catalogue items with their format, 20 per page."""
        return self.query_page("SELECT id, barcode, title, format FROM items ORDER BY id", page=page)

    @tool
    def list_loans(self, returned_from: str, returned_to: str, page: int = 1) -> dict:
        """List loans whose item was returned between two dates (both included), 20 per page.

        Args:
            returned_from: First return date, "YYYY-MM-DD".
            returned_to: Last return date, "YYYY-MM-DD".
        """
        start, end = _day(returned_from, "returned_from"), _day(returned_to, "returned_to")
        if end < start:
            raise ToolError("returned_to is before returned_from")
        return self.query_page("SELECT id, item_id, patron_id, checked_out, due_date, returned_on FROM loans "
                               "WHERE returned_on BETWEEN ? AND ? ORDER BY id", (start.isoformat(), end.isoformat()), page)

    @tool
    def list_fines(self, patron_id: int = 0, page: int = 1) -> dict:
        """List fines on record, 20 per page.

        Args:
            patron_id: Only this patron's fines when non-zero.
        """
        sql = "SELECT id, patron_id, loan_id, amount, status, entered_on FROM fines"
        where, args = (" WHERE patron_id = ?", (patron_id,)) if patron_id else ("", ())
        return self.query_page(sql + where + " ORDER BY id", args, page)

    @tool
    def assess_fine(self, loan_id: int, amount: float) -> dict:
        """Enter an unpaid overdue fine against a returned loan; returns the new fine's id.

        Args:
            loan_id: The loan the fine is for.
            amount: Fine in dollars, greater than zero.
        """
        loan = self.require_row("loans", loan_id, "use list_loans")
        if loan["returned_on"] is None:
            raise ToolError(f"loan {loan_id} is still out; fines are entered when the item comes back")
        if self.query("SELECT id FROM fines WHERE loan_id = ?", (loan_id,)):
            raise ToolError(f"loan {loan_id} already has a fine")
        if amount <= 0:
            raise ToolError("amount must be greater than zero; simply do not enter a fine when nothing is owed")
        cur = self.db.execute("INSERT INTO fines (patron_id, loan_id, amount, status, entered_on) VALUES (?,?,?, 'unpaid', ?)",
                              (loan["patron_id"], loan_id, round(amount, 2), ENTRY_DAY))
        return {"fine_id": cur.lastrowid, "loan_id": loan_id, "patron_id": loan["patron_id"], "amount": round(amount, 2)}

    @tool
    def block_patron(self, card_number: str, reason: str) -> dict:
        """Block a library card.

        Args:
            card_number: The patron's card number.
            reason: Why the card is blocked.
        """
        if not self.query("SELECT id FROM patrons WHERE card_number = ?", (card_number,)):
            raise ToolError(f"no patron with card number {card_number!r}")
        self.db.execute("UPDATE patrons SET blocked = 1, block_reason = ? WHERE card_number = ?", (reason, card_number))
        return {"card_number": card_number, "blocked": True}

    def criteria(self, final_response: str) -> list[Criterion]:
        entered = f"entered_on = '{ENTRY_DAY}'"
        total = self.reference.query(f"SELECT coalesce(sum(amount), 0) AS t FROM fines WHERE {entered}")[0]["t"]
        blocked = self.reference.query("SELECT count(*) AS n FROM patrons WHERE blocked = 1")[0]["n"]
        return [
            self.tables_match("fines", key="loan_id", where=entered, weight=2.0,
                              criterion="fines_on_exactly_the_chargeable_loans"),
            self.tables_match("fines", key="loan_id", columns="amount", where=entered, tolerance=0.005,
                              criterion="fine_amounts_correct"),
            self.tables_match("patrons", key="card_number", where="blocked = 1",
                              criterion="cards_blocked_at_the_limit"),
            self.file_matches(self.params["report_name"], key="loan_id", criterion="report_written"),
            self.answer_states([round(total, 2), blocked], criterion="total_and_block_count_reported"),
        ]
