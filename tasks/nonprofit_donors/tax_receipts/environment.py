from datetime import date

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class TaxReceiptsEnv(WorkspaceEnvironment):
    @tool
    def list_donors(self, page: int = 1) -> dict:
        """List supporters with their supporter number, name, e-mail and country of residence, 20 per page."""
        return self.query_page("SELECT id, donor_no, first_name, last_name, email, country FROM donors ORDER BY id", page=page)

    @tool
    def list_gifts(self, page: int = 1, date_from: str = "", date_to: str = "", donor_id: int = 0) -> dict:
        """List recorded gifts (date, amount, payment method, status), oldest first, 20 per page.

        Args:
            date_from: Earliest gift date, YYYY-MM-DD inclusive, when non-empty.
            date_to: Latest gift date, YYYY-MM-DD inclusive, when non-empty.
            donor_id: Only this donor's gifts when non-zero.
        """
        bounds = []
        for label, value in (("date_from", date_from), ("date_to", date_to)):
            try:
                bounds.append(date.fromisoformat(value).isoformat() if value else None)
            except ValueError:
                raise ToolError(f"{label} must be YYYY-MM-DD, got {value!r}") from None
        return self.query_page(
            "SELECT id, donor_id, gift_date, amount, method, campaign, status FROM gifts "
            "WHERE gift_date >= ? AND gift_date <= ? AND (? = 0 OR donor_id = ?) ORDER BY gift_date, id",
            (bounds[0] or "0000-00-00", bounds[1] or "9999-12-31", donor_id, donor_id), page)

    @tool
    def list_declarations(self, page: int = 1) -> dict:
        """List Gift Aid declarations on file: who signed, when, and which gifts they cover, 20 per page."""
        return self.query_page("SELECT id, donor_id, signed_on, covers FROM declarations ORDER BY id", page=page)

    @tool
    def issue_receipt(self, donor_id: int, qualifying_total: float, gift_aid: float) -> dict:
        """Issue this tax year's annual receipt to a donor; returns the new receipt number.

        Args:
            donor_id: The donor's numeric id.
            qualifying_total: Total of the donor's qualifying gifts in the tax year, in pounds.
            gift_aid: Gift Aid reclaimable on those gifts, in pounds (0 if none).
        """
        self.require_row("donors", donor_id, "use list_donors")
        if qualifying_total <= 0 or gift_aid < 0:
            raise ToolError("qualifying_total must be positive and gift_aid cannot be negative")
        if self.query("SELECT 1 FROM receipts WHERE donor_id = ?", (donor_id,)):
            raise ToolError(f"donor {donor_id} already has a receipt for this tax year")
        count = self.query("SELECT COUNT(*) AS n FROM receipts")[0]["n"]
        number = f"RCP-{donor_id * 7 % 1000:03d}{count + 1:04d}"
        self.db.execute("INSERT INTO receipts (receipt_no, donor_id, tax_year, qualifying_total, gift_aid) VALUES (?,?,?,?,?)",
                        (number, donor_id, "current", qualifying_total, gift_aid))
        return {"receipt_no": number, "donor_id": donor_id}

    def criteria(self, final_response: str) -> list[Criterion]:
        name = self.params["report_name"]  # receipt numbers follow the order of issue: rows compare without them
        grand = self.reference.query("SELECT sum(gift_aid) AS g FROM receipts")[0]["g"] or 0.0
        return [
            self.tables_match("receipts", key="donor_id", criterion="receipts_for_exactly_the_qualifying_donors",
                              weight=2.0),
            self.tables_match("receipts", key="donor_id", columns="qualifying_total", tolerance=0.005,
                              criterion="qualifying_totals_correct"),
            self.tables_match("receipts", key="donor_id", columns="gift_aid", tolerance=0.005,
                              criterion="gift_aid_correct"),
            self.file_matches(name, columns="donor", criterion="anonymity_respected"),
            self.file_matches(name, columns=["donor", "qualifying_total", "gift_aid"], tolerance=0.005),
            self.answer_states(round(grand, 2), tolerance=0.005, criterion="total_gift_aid_reported"),
        ]
