from typing import Literal

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

REASONS = ("late_payments", "property_sale")


class LeaseRenewalEnv(WorkspaceEnvironment):
    @tool
    def list_properties(self, page: int = 1) -> dict:
        """List the portfolio's buildings (name, address, district, year built), 20 per page."""
        return self.query_page("SELECT id, name, address, district, year_built FROM properties ORDER BY id", page=page)

    @tool
    def list_units(self, property_id: int, page: int = 1) -> dict:
        """List the units of one building with bedrooms and current market rent (USD/month), 20 per page.

        Args:
            property_id: The building's id.
        """
        self.require_row("properties", property_id, "use list_properties", what="property")
        return self.query_page("SELECT id, property_id, unit_no, bedrooms, market_rent FROM units WHERE property_id = ? ORDER BY id",
                               (property_id,), page)

    @tool
    def list_leases(self, page: int = 1, status: Literal["active", "ended"] = "active") -> dict:
        """List leases (unit, tenant, term dates, monthly rent), 20 per page.

        Args:
            status: "active" or "ended".
        """
        return self.query_page("SELECT id, unit_id, tenant_id, start_date, end_date, monthly_rent, status FROM leases "
                               "WHERE status = ? ORDER BY id", (status,), page)

    @tool
    def get_tenant(self, tenant_id: int) -> dict:
        """Get a tenant's name and e-mail.

        Args:
            tenant_id: The tenant's id from a lease.
        """
        return self.require_row("tenants", tenant_id)

    @tool
    def list_payments(self, lease_id: int, page: int = 1) -> dict:
        """List the rent payments recorded on a lease (due date, amount, date received), oldest first, 20 per page.

        Args:
            lease_id: The lease's id.
        """
        self.require_row("leases", lease_id, "list_leases shows the lease ids")
        return self.query_page("SELECT due_date, amount, paid_on FROM payments WHERE lease_id = ? ORDER BY due_date, id", (lease_id,), page)

    def _active_lease(self, lease_id: int) -> None:
        if not self.query("SELECT id FROM leases WHERE id = ? AND status = 'active'", (lease_id,)):
            raise ToolError(f"lease {lease_id} is not an active lease")
        if self.query("SELECT id FROM renewal_offers WHERE lease_id = ? UNION SELECT id FROM non_renewals WHERE lease_id = ?",
                      (lease_id, lease_id)):
            raise ToolError(f"lease {lease_id} already has an offer or a notice")

    @tool
    def create_renewal_offer(self, lease_id: int, new_rent: int, term_months: int) -> dict:
        """Send a tenant an offer to renew their lease.

        Args:
            lease_id: The active lease being renewed.
            new_rent: Offered monthly rent in whole dollars.
            term_months: Length of the new term in months.
        """
        self._active_lease(lease_id)
        if new_rent <= 0 or term_months <= 0:
            raise ToolError("new_rent and term_months must be positive")
        cur = self.db.execute("INSERT INTO renewal_offers (lease_id, new_rent, term_months, created) VALUES (?,?,?, '2026-11-30')",
                              (lease_id, new_rent, term_months))
        return {"offer_id": cur.lastrowid, "lease_id": lease_id, "new_rent": new_rent, "term_months": term_months}

    @tool
    def issue_non_renewal(self, lease_id: int, reason: str) -> dict:
        """Serve a notice that a lease will not be renewed.

        Args:
            lease_id: The active lease.
            reason: "late_payments" or "property_sale".
        """
        if reason not in REASONS:
            raise ToolError(f"reason must be one of {', '.join(REASONS)}, got {reason!r}")
        self._active_lease(lease_id)
        cur = self.db.execute("INSERT INTO non_renewals (lease_id, reason, created) VALUES (?,?, '2026-11-30')", (lease_id, reason))
        return {"notice_id": cur.lastrowid, "lease_id": lease_id, "reason": reason}

    def criteria(self, final_response: str) -> list[Criterion]:
        rise = self.reference.query("SELECT sum(o.new_rent - l.monthly_rent) AS r FROM renewal_offers o "
                                    "JOIN leases l ON l.id = o.lease_id")[0]["r"] or 0
        return [
            self.tables_match("renewal_offers", key="lease_id", criterion="offers_for_exactly_the_qualifying_leases",
                              weight=2.0),
            self.tables_match("renewal_offers", key="lease_id", columns="new_rent", criterion="offered_rents_follow_caps",
                              weight=2.0),
            self.tables_match("renewal_offers", key="lease_id", columns="term_months", criterion="offer_term_as_requested",
                              weight=0.5),
            self.tables_match("non_renewals", key="lease_id", criterion="non_renewals_for_the_right_leases"),
            self.tables_match("non_renewals", key="lease_id", columns="reason", criterion="non_renewal_reasons"),
            self.file_matches(self.params["report_name"], as_="md", key="lease_id", tolerance=0.5,
                              columns=["tenant", "current_rent", "new_rent"], criterion="summary_table_written"),
            self.answer_states(rise, tolerance=0.5, criterion="rent_roll_increase_reported"),
        ]
