from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

SERVICES = ("express", "standard", "economy")


class SlaEnv(WorkspaceEnvironment):
    @tool
    def list_customers(self, page: int = 1) -> dict:
        """List customers with their account tier, 20 per page."""
        return self.query_page("SELECT id, name, tier FROM customers ORDER BY id", page=page)

    @tool
    def list_deliveries(self, page: int = 1, service: str = "") -> dict:
        """List deliveries (tracking number, customer, service, region, pickup and delivery times, fee), 50 per page.

        Args:
            service: Only this service level ("express", "standard" or "economy") when non-empty.
        """
        if service and service not in SERVICES:
            raise ToolError(f"service must be one of {', '.join(SERVICES)}, got {service!r}")
        sql = "SELECT id, tracking_no, customer_id, service, region, picked_up_at, delivered_at, fee FROM deliveries"
        where, args = (" WHERE service = ?", (service,)) if service else ("", ())
        return self.query_page(sql + where + " ORDER BY id", args, page, page_size=50)

    @tool
    def log_breach(self, delivery_id: int, note: str = "") -> dict:
        """Record that a delivery missed its service-level promise; returns the breach id.

        Args:
            delivery_id: The delivery's numeric id.
            note: Optional short explanation.
        """
        self.require_row("deliveries", delivery_id, "use list_deliveries", what="delivery")
        if self.query("SELECT 1 FROM breaches WHERE delivery_id = ?", (delivery_id,)):
            raise ToolError(f"a breach is already logged for delivery {delivery_id}")
        cur = self.db.execute("INSERT INTO breaches (delivery_id, note) VALUES (?, ?)", (delivery_id, note))
        return {"breach_id": cur.lastrowid, "delivery_id": delivery_id}

    @tool
    def issue_credit(self, breach_id: int, amount: float) -> dict:
        """Issue a service credit to the customer for a logged breach; returns the credit id.

        Args:
            breach_id: The id returned by log_breach.
            amount: Credit amount in currency, greater than zero.
        """
        self.require_row("breaches", breach_id, "log_breach returns the id", what="breach")
        if amount <= 0:
            raise ToolError("amount must be greater than zero")
        if self.query("SELECT 1 FROM credits WHERE breach_id = ?", (breach_id,)):
            raise ToolError(f"breach {breach_id} already has a credit")
        cur = self.db.execute("INSERT INTO credits (breach_id, amount) VALUES (?, ?)", (breach_id, round(amount, 2)))
        return {"credit_id": cur.lastrowid, "breach_id": breach_id, "amount": round(amount, 2)}

    # The generator's fixed cases: delivery 1 crosses a public holiday (on time), 4 is the premium contract's
    # (late), 3 is storm-hit (exempt).
    def criteria(self, final_response: str) -> list[Criterion]:
        total = self.reference.query("SELECT coalesce(sum(amount), 0) AS t FROM credits")[0]["t"]
        return [
            self.tables_match("breaches", key="delivery_id", weight=2.0, criterion="exactly_the_breaches_logged"),
            self.tables_match("breaches", key="delivery_id", where="delivery_id IN (1, 4)",
                              criterion="business_days_and_holidays_counted"),
            self.tables_match("breaches", key="delivery_id", where="delivery_id = 3", criterion="force_majeure_exempt"),
            self.tables_match("credits c JOIN breaches b ON b.id = c.breach_id", key="b.delivery_id",
                              columns="c.amount", tolerance=0.011, criterion="gold_credits_issued"),
            self.file_matches(self.params["report_name"], as_="json", criterion="summary_file_written"),
            self.answer_states(round(total, 2), tolerance=0.011, criterion="credit_total_reported"),
        ]
