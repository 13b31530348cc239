import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

TIERS = ("gold", "silver")


class DemandResponseEnv(WorkspaceEnvironment):
    @tool
    def list_customers(self, page: int = 1) -> dict:
        """Customer accounts with their meter type as recorded; 20 per page."""
        return self.query_page("SELECT id, account_no, name, meter_type, postcode FROM customers ORDER BY id", page=page)

    @tool
    def list_peak_readings(self, page: int = 1, customer_id: int = 0, date_from: str = "", date_to: str = "") -> dict:
        """Evening peak consumption per hour (17 and 18), in kWh, as customer_id, reading_date, hour and kwh; 20 per page,
        by customer then date.

        Args:
            customer_id: Only this customer's readings when non-zero.
            date_from: First date to include (YYYY-MM-DD) when non-empty.
            date_to: Last date to include (YYYY-MM-DD) when non-empty.
        """
        bad = [v for v in (date_from, date_to) if v and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", v)]
        if bad:
            raise ToolError(f"dates must be YYYY-MM-DD, got {bad[0]!r}")
        where = "(? = 0 OR customer_id = ?) AND reading_date >= ? AND reading_date <= ?"
        args = (customer_id, customer_id, date_from or "0000", date_to or "9999")
        return self.query_page(f"SELECT customer_id, reading_date, hour, kwh FROM peak_readings WHERE {where} ORDER BY id", args, page)

    @tool
    def enrol_customer(self, customer_id: int, tier: str, flexible_kwh: float) -> dict:
        """Enrol a customer in the programme; returns the enrolment id.

        Args:
            customer_id: The customer's numeric id.
            tier: "gold" or "silver".
            flexible_kwh: The flexible load committed, in kWh.
        """
        if tier not in TIERS:
            raise ToolError(f"tier must be one of {TIERS}")
        self.require_row("customers", customer_id, "use list_customers")
        if self.query("SELECT 1 FROM enrolments WHERE customer_id = ?", (customer_id,)):
            raise ToolError(f"customer {customer_id} is already enrolled")
        if flexible_kwh <= 0:
            raise ToolError("flexible_kwh must be positive")
        row = self.db.execute("INSERT INTO enrolments (customer_id, tier, flexible_kwh, welcome_sent) VALUES (?,?,?,0)",
                              (customer_id, tier, flexible_kwh))
        return {"enrolment_id": row.lastrowid, "customer_id": customer_id, "tier": tier}

    @tool
    def send_welcome_pack(self, enrolment_id: int) -> dict:
        """Send the programme welcome pack for an enrolment.

        Args:
            enrolment_id: The id returned by enrol_customer.
        """
        self.require_row("enrolments", enrolment_id, "enrol the customer first")
        self.db.execute("UPDATE enrolments SET welcome_sent = 1 WHERE id = ?", (enrolment_id,))
        return {"enrolment_id": enrolment_id, "welcome_sent": True}

    def criteria(self, final_response: str) -> list[Criterion]:
        enrolled = "enrolments e JOIN customers c ON c.id = e.customer_id"
        # The customers the notes name (generator.py's cases 1, 2 and 4) and those in the excluded area.
        noted = f"c.id IN (1, 2, 4) OR c.postcode GLOB '{self.params['excluded_area']}[0-9]*'"
        welcomed = self.query("SELECT count(*) AS n, coalesce(sum(welcome_sent), 0) AS sent FROM enrolments")[0]
        total = self.reference.query("SELECT coalesce(sum(flexible_kwh), 0) AS t FROM enrolments")[0]["t"]
        return [
            self.tables_match(enrolled, key="c.account_no", weight=2.0,
                              criterion="exactly_the_right_customers_enrolled"),
            self.tables_match(enrolled, key="c.account_no", columns=["e.tier", "e.flexible_kwh"], tolerance=0.006,
                              criterion="tiers_and_loads_correct"),
            Criterion("welcome_packs_sent", 0 < welcomed["n"] == welcomed["sent"], 1.0,
                      f"{welcomed['sent']} of {welcomed['n']} enrolments welcomed"),
            self.tables_match(enrolled, key="c.account_no", where=noted, criterion="notes_honoured"),
            self.file_matches(self.params["sheet_name"], key="account_no", tolerance=0.006,
                              criterion="enrolment_sheet_written"),
            self.answer_states(round(total, 2), tolerance=0.011, criterion="total_flexible_load_reported"),
        ]
