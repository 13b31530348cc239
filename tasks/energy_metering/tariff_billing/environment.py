from datetime import date

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class TariffBillingEnv(WorkspaceEnvironment):
    @tool
    def list_customers(self, page: int = 1, status: str = "") -> dict:
        """List customer accounts with their tariff and current meter, 20 per page.

        Args:
            status: Only accounts with this status ("live" or "closed") when non-empty.
        """
        sql = "SELECT id, account_no, name, tariff_code, meter_id, status FROM customers"
        if status:
            return self.query_page(sql + " WHERE status = ? ORDER BY id", (status,), page)
        return self.query_page(sql + " ORDER BY id", page=page)

    @tool
    def list_tariffs(self, page: int = 1) -> dict:
        """List tariffs with their unit rate (pence per kWh) and standing charge (pence per day)."""
        return self.query_page("SELECT code, name, unit_rate_pence, standing_pence_per_day FROM tariffs ORDER BY code", page=page)

    @tool
    def list_readings(self, page: int = 1, meter_id: str = "", read_date: str = "") -> dict:
        """List meter register readings (kWh, read at midnight starting the date), 20 per page.

        Args:
            meter_id: Only this meter's readings when non-empty.
            read_date: Only readings dated this day (YYYY-MM-DD) when non-empty.
        """
        if read_date:
            try:
                date.fromisoformat(read_date)
            except ValueError:
                raise ToolError(f"read_date must be YYYY-MM-DD, got {read_date!r}") from None
        return self.query_page("SELECT meter_id, read_date, register_kwh FROM readings WHERE (? = '' OR meter_id = ?) "
                               "AND (? = '' OR read_date = ?) ORDER BY read_date, meter_id",
                               (meter_id, meter_id, read_date, read_date), page)

    @tool
    def create_bill(self, customer_id: int, kwh: int, energy_charge: float, standing_charge: float) -> dict:
        """Raise this period's bill for one account; returns the bill with its id.

        Args:
            customer_id: The account's numeric id.
            kwh: Energy used in the period, in whole kWh.
            energy_charge: Energy charge in pounds.
            standing_charge: Standing charge in pounds (0 when waived).
        """
        customer = self.require_row("customers", customer_id, "use list_customers")
        if customer["status"] != "live":
            raise ToolError(f"customer {customer_id} is {customer['status']}; only live accounts are billed")
        if kwh < 0 or energy_charge < 0 or standing_charge < 0:
            raise ToolError("kwh and charges cannot be negative")
        if self.query("SELECT id FROM bills WHERE customer_id = ?", (customer_id,)):
            raise ToolError(f"customer {customer_id} already has a bill this period")
        cur = self.db.execute("INSERT INTO bills (customer_id, kwh, energy_charge, standing_charge) VALUES (?,?,?,?)",
                              (customer_id, kwh, energy_charge, standing_charge))
        return {"bill_id": cur.lastrowid, "customer_id": customer_id, "total": round(energy_charge + standing_charge, 2)}

    def criteria(self, final_response: str) -> list[Criterion]:
        bills = "bills b JOIN customers c ON c.id = b.customer_id"
        # generator.py puts customers 1-3 on the repriced tariff and exchanges customer 2's meter.
        repriced = "c.tariff_code = (SELECT tariff_code FROM customers WHERE id = 1)"
        billed = self.reference.query(f"SELECT coalesce(sum(b.energy_charge + b.standing_charge), 0) AS total, "
                                      f"coalesce(sum({repriced}), 0) AS repriced FROM {bills}")[0]
        return [
            self.tables_match(bills, key="c.account_no", weight=2.0, criterion="one_bill_per_live_account"),
            self.tables_match(bills, key="c.account_no", columns=["b.kwh", "b.energy_charge"], where=f"NOT {repriced}",
                              tolerance=0.011, criterion="energy_charges_correct"),
            self.tables_match(bills, key="c.account_no", columns="b.energy_charge", where=repriced, tolerance=0.011,
                              criterion="price_change_split_at_effective_date"),
            self.tables_match(bills, key="c.account_no", columns="b.standing_charge", tolerance=0.011,
                              criterion="standing_charges_and_waivers"),
            self.tables_match(bills, key="c.account_no", columns="b.kwh", where="c.id = 2",
                              criterion="meter_exchange_consumption"),
            self.file_matches(self.params["bills_name"], key="account_no", tolerance=0.011),
            # per-segment rounding may move each repriced bill by a penny
            self.answer_states(round(billed["total"], 2), tolerance=0.011 * (billed["repriced"] + 1),
                               criterion="total_billed_reported"),
        ]
