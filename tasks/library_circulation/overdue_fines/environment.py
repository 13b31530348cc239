"""Tools and verifier for library_circulation/overdue_fines."""
import csv
import io
import json
import re
from datetime import date, timedelta

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

ENTRY_DAY = "2026-11-30"  # the day this run's fines are entered
FORMAT_PLURALS = {"books": "book", "DVDs": "dvd", "audiobooks": "audiobook", "magazines": "magazine"}


def _day(text: str, what: str) -> date:
    try:
        return date.fromisoformat(text)
    except (TypeError, ValueError):
        raise ToolError(f"{what} must be a date like 2026-11-01, got {text!r}") from None


class OverdueFinesEnv(WorkspaceEnvironment):
    @tool
    def list_patrons(self, page: int = 1) -> dict:
        """List library card holders with their card type and block status, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, card_number, name, card_type, blocked FROM patrons ORDER BY id", page=page)

    @tool
    def list_items(self, page: int = 1) -> dict:
        """List catalogue items with their format, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, barcode, title, format FROM items ORDER BY id", page=page)

    @tool
    def list_loans(self, returned_from: str, returned_to: str, page: int = 1) -> dict:
        """List loans whose item was returned between two dates (both included), 20 per page.

        Args:
            returned_from: First return date, "YYYY-MM-DD".
            returned_to: Last return date, "YYYY-MM-DD".
            page: 1-based page number.
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
            page: 1-based page number.
        """
        sql = "SELECT id, patron_id, loan_id, amount, status, entered_on FROM fines"
        if patron_id:
            return self.query_page(sql + " WHERE patron_id = ? ORDER BY id", (patron_id,), page)
        return self.query_page(sql + " ORDER BY id", page=page)

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

    # --- verifier --------------------------------------------------------------------------------
    def expected(self) -> tuple[dict[int, dict], set[str]]:
        f = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        closed = {date.fromisoformat(d) for d in f["closures"]}
        amnesty = [date.fromisoformat(d) for d in f["amnesty"]]
        rows = self.query("SELECT l.id, l.due_date, l.returned_on, p.id AS pid, p.card_number, p.card_type, i.format "
                          "FROM loans l JOIN patrons p ON p.id = l.patron_id JOIN items i ON i.id = l.item_id "
                          "WHERE l.returned_on BETWEEN '2026-11-01' AND '2026-11-30'")
        fines = {}
        for r in rows:
            due, back = date.fromisoformat(r["due_date"]), date.fromisoformat(r["returned_on"])
            if r["card_type"] == "child" or amnesty[0] <= back <= amnesty[1] or r["format"] == FORMAT_PLURALS[self.params["fine_free_format"]]:
                continue
            late = sum(1 for k in range(1, (back - due).days + 1) if due + timedelta(days=k) not in closed)
            days = late - f["grace"]
            amount = round(min(f["cap"], days * f["rates"][r["format"]]), 2)
            if days > 0 and amount >= self.params["min_fine"] - 1e-9:  # smaller fines are written off
                fines[r["id"]] = {"card": r["card_number"], "pid": r["pid"], "days": days, "amount": amount}
        owed = {}
        for old in self.query("SELECT patron_id, amount FROM fines WHERE status = 'unpaid' AND entered_on != ?", (ENTRY_DAY,)):
            owed[old["patron_id"]] = owed.get(old["patron_id"], 0) + old["amount"]
        for fine in fines.values():
            owed[fine["pid"]] = owed.get(fine["pid"], 0) + fine["amount"]
        cards = {p["id"]: p["card_number"] for p in self.query("SELECT id, card_number FROM patrons")}
        return fines, {cards[pid] for pid, total in owed.items() if total >= f["block_at"] - 1e-9}

    def criteria(self, final_response: str) -> list[Criterion]:
        fines, blocks = self.expected()
        entered = {r["loan_id"]: r["amount"] for r in self.query("SELECT loan_id, amount FROM fines WHERE entered_on = ?", (ENTRY_DAY,))}
        right_loans = set(entered) == set(fines)
        amounts_ok = right_loans and all(abs(entered[k] - v["amount"]) < 0.005 for k, v in fines.items())
        blocked = {r["card_number"] for r in self.query("SELECT card_number FROM patrons WHERE blocked = 1")}
        report_name = self.params["report_name"]
        report_ok, detail = False, f"{report_name} not found"
        path = self.workspace / report_name
        if path.is_file():
            try:
                rows = list(csv.DictReader(io.StringIO(path.read_text().strip())))
                got = {int(r["loan_id"]): (r["card_number"].strip(), int(float(r["days_charged"])), round(float(r["amount"].strip().lstrip("$")), 2))
                       for r in rows}
                want = {k: (v["card"], v["days"], v["amount"]) for k, v in fines.items()}
                report_ok = got == want and len(rows) == len(want)
                detail = "matches the expected fines" if report_ok else f"{len(rows)} rows, {len(want)} expected"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                detail = f"cannot parse the report: {exc}"
        total = round(sum(v["amount"] for v in fines.values()), 2)
        money = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.\d{2}", final_response)]
        counts = {int(n) for n in re.findall(r"(?<![\d.])\d+(?![\d.])", final_response)}
        return [
            Criterion("fines_on_exactly_the_chargeable_loans", right_loans, 2.0, f"{len(entered)} fines entered, {len(fines)} expected "
                      f"(no fines on {self.params['fine_free_format']}, none under {self.params['min_fine']:.2f})"),
            Criterion("fine_amounts_correct", amounts_ok, 1.0, "per-day rate after closures and grace, capped per loan"),
            Criterion("cards_blocked_at_the_limit", blocked == blocks, 1.0, f"{len(blocked)} blocked, {len(blocks)} expected"),
            Criterion("report_written", report_ok, 1.0, detail),
            Criterion("total_and_block_count_reported", any(abs(m - total) < 0.01 for m in money) and len(blocks) in counts, 1.0,
                      f"expected total {total:.2f} and {len(blocks)} blocked cards"),
        ]
