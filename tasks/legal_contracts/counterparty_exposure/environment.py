"""Tools and verifier for legal_contracts/counterparty_exposure."""
import json
import re
from datetime import date
from typing import Literal

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

RATINGS = ("red", "amber", "green")


class CounterpartyExposureEnv(WorkspaceEnvironment):
    @tool
    def list_counterparties(self, page: int = 1) -> dict:
        """Customer companies, their country and current risk rating; 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, name, country, risk_rating FROM counterparties ORDER BY id", page=page)

    @tool
    def list_contracts(self, page: int = 1, counterparty_id: int = 0) -> dict:
        """Customer contracts with currency, total value, term and status; 20 per page.

        Args:
            page: 1-based page number.
            counterparty_id: Only this customer's contracts when non-zero.
        """
        return self.query_page("SELECT id, contract_no, counterparty_id, currency, total_value, start_date, end_date, status "
                               "FROM contracts WHERE ? = 0 OR counterparty_id = ? ORDER BY id", (counterparty_id, counterparty_id), page)

    @tool
    def list_invoices(self, page: int = 1, status: Literal["", "paid", "open", "disputed"] = "") -> dict:
        """Invoices raised under the contracts (amounts in the contract's currency); 20 per page.

        Args:
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def groups(self) -> tuple[dict, dict]:
        f = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        owner = {int(k): v for k, v in f["owner"].items()}
        contracts = {c["id"]: c for c in self.query("SELECT * FROM contracts")}
        review, share = date.fromisoformat(f["review"]), self.params["commitment_pct"] / 100
        local = {}
        invoiced = {}
        for inv in self.query("SELECT * FROM invoices"):
            invoiced[inv["contract_id"]] = invoiced.get(inv["contract_id"], 0) + inv["amount"]
            weight = {"open": 1.0, "disputed": 0.5}.get(inv["status"], 0.0)
            if (review - date.fromisoformat(inv["issued_on"])).days > self.params["aging_days"]:
                weight = 0.0  # with the collections agency
            c = contracts[inv["contract_id"]]
            local[c["counterparty_id"]] = local.get(c["counterparty_id"], 0) + weight * inv["amount"] * f["rates"][c["currency"]]
        for c in contracts.values():
            if c["status"] == "active":
                local[c["counterparty_id"]] = local.get(c["counterparty_id"], 0) + \
                    (c["total_value"] - invoiced.get(c["id"], 0)) * share * f["rates"][c["currency"]]
        out = {}
        for p in self.query("SELECT * FROM counterparties"):
            if p["id"] in owner:
                continue
            total = local.get(p["id"], 0) + sum(local.get(s, 0) for s, parent in owner.items() if parent == p["id"])
            rating = "red" if total > f["red"] else "amber" if total > f["amber"] else "green"
            out[p["id"]] = {"name": p["name"], "exposure": round(total, 2), "rating": rating}
        return out, owner

    def criteria(self, final_response: str) -> list[Criterion]:
        want, owner = self.groups()
        rated = {p["id"]: p["risk_rating"] for p in self.query("SELECT id, risk_rating FROM counterparties")}
        ratings_ok = all(rated[k] == w["rating"] for k, w in want.items())
        subs_unrated = all(rated[s] is None for s in owner)
        report_name = self.params["report_name"]
        report_ok, info = False, f"{report_name} not found"
        path = self.workspace / report_name
        if path.is_file():
            try:
                data = json.loads(path.read_text())
                expect = {w["name"]: w for w in want.values()}
                report_ok = set(data) == set(expect) and all(
                    abs(float(data[k]["exposure_gbp"]) - w["exposure"]) <= 0.05 and str(data[k]["rating"]).lower() == w["rating"]
                    for k, w in expect.items())
                info = (f"{len(data)} groups, {len(expect)} expected (commitments at {self.params['commitment_pct']}%, "
                        f"invoices older than {self.params['aging_days']} days left out)")
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                info = f"could not read it: {exc}"
        top = max(want.values(), key=lambda w: w["exposure"])["name"]
        return [
            Criterion("group_ratings_recorded", ratings_ok, 2.0, "each group's rating on its parent record"),
            Criterion("subsidiaries_not_rated", subs_unrated, 1.0, "subsidiaries roll up into their parent"),
            Criterion("exposure_report_written", report_ok, 2.0, info),
            Criterion("largest_exposure_named", re.search(re.escape(top), final_response) is not None, 1.0, f"expected {top}"),
        ]
