import json
from typing import Literal

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

RATINGS = ("red", "amber", "green")


class CounterpartyExposureEnv(WorkspaceEnvironment):
    @tool
    def list_counterparties(self, page: int = 1) -> dict:
        """Customer companies, their country and current risk rating; 20 per page."""
        return self.query_page("SELECT id, name, country, risk_rating FROM counterparties ORDER BY id", page=page)

    @tool
    def list_contracts(self, page: int = 1, counterparty_id: int = 0) -> dict:
        """Customer contracts with currency, total value, term and status; 20 per page.

        Args:
            counterparty_id: Only this customer's contracts when non-zero.
        """
        return self.query_page("SELECT id, contract_no, counterparty_id, currency, total_value, start_date, end_date, status "
                               "FROM contracts WHERE ? = 0 OR counterparty_id = ? ORDER BY id", (counterparty_id, counterparty_id), page)

    @tool
    def list_invoices(self, page: int = 1, status: Literal["", "paid", "open", "disputed"] = "") -> dict:
        """Invoices raised under the contracts (amounts in the contract's currency); 20 per page.

        Args:
            status: Only "paid", "open" or "disputed" invoices when non-empty.
        """
        return self.query_page("SELECT id, invoice_no, contract_id, amount, issued_on, status FROM invoices "
                               "WHERE ? = '' OR status = ? ORDER BY id", (status, status), page)

    @tool
    def set_risk_rating(self, counterparty_id: int, rating: str) -> dict:
        """Record a risk rating on a company's record.

        Args:
            counterparty_id: The company's numeric id.
            rating: "red", "amber" or "green".
        """
        if rating not in RATINGS:
            raise ToolError(f"rating must be one of {RATINGS}")
        self.require_row("counterparties", counterparty_id, "use list_counterparties", what="counterparty")
        self.db.execute("UPDATE counterparties SET risk_rating = ? WHERE id = ?", (rating, counterparty_id))
        return {"counterparty_id": counterparty_id, "rating": rating}

    def criteria(self, final_response: str) -> list[Criterion]:
        # subsidiaries roll up into their parent, so the reference leaves them unrated
        unrated = self.reference.query("SELECT id FROM counterparties WHERE risk_rating IS NULL")
        subsidiaries = ", ".join(str(r["id"]) for r in unrated) or "NULL"
        report = json.loads(self.reference.read(self.params["report_name"]))
        return [
            self.tables_match("counterparties", key="id", columns="risk_rating", where=f"id NOT IN ({subsidiaries})",
                              weight=2.0, criterion="group_ratings_recorded"),
            self.tables_match("counterparties", key="id", columns="risk_rating", where=f"id IN ({subsidiaries})",
                              criterion="subsidiaries_not_rated"),
            self.file_matches(self.params["report_name"], as_="json", tolerance=0.05, weight=2.0,
                              criterion="exposure_report_written"),
            self.answer_states(max(report, key=lambda group: report[group]["exposure_gbp"]),
                               criterion="largest_exposure_named"),
        ]
