from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

RULES = ("stolen_card", "wrong_fuel", "over_capacity", "odometer_rollback", "rapid_refill", "off_hours")


class FuelAnomalyEnv(WorkspaceEnvironment):
    @tool
    def list_vehicles(self, page: int = 1) -> dict:
        """List vehicles with fuel type, tank size (litres, as recorded) and assigned driver, 20 per page."""
        return self.query_page("SELECT id, unit_number, fuel_type, tank_litres, driver_id, depot FROM vehicles ORDER BY id", page=page)

    @tool
    def list_drivers(self, page: int = 1) -> dict:
        """List drivers with their fuel card number and card status, 20 per page."""
        return self.query_page("SELECT id, name, card_number, card_status FROM drivers ORDER BY id", page=page)

    @tool
    def list_transactions(self, card_number: str = "", page: int = 1) -> dict:
        """List fuel-card transactions in time order, 20 per page. Times are local, "YYYY-MM-DD HH:MM".

        Args:
            card_number: Only this card's transactions when non-empty.
        """
        sql = "SELECT id, card_number, unit_number, txn_time, station, fuel_type, litres, amount, odometer_km FROM fuel_transactions"
        where = " WHERE card_number = ?" if card_number else ""
        return self.query_page(sql + where + " ORDER BY txn_time, id", (card_number,) if card_number else (), page)

    @tool
    def flag_transaction(self, transaction_id: int, rule: str) -> dict:
        """Flag one transaction as anomalous under an audit rule; returns the flag id.

        Args:
            transaction_id: The transaction's id.
            rule: The audit rule code, e.g. "wrong_fuel".
        """
        if rule not in RULES:
            raise ToolError(f"unknown rule {rule!r}; use one of {', '.join(RULES)}")
        self.require_row("fuel_transactions", transaction_id, what="transaction")
        if self.query("SELECT id FROM anomaly_flags WHERE transaction_id = ?", (transaction_id,)):
            raise ToolError(f"transaction {transaction_id} is already flagged; one label per transaction")
        cur = self.db.execute("INSERT INTO anomaly_flags (transaction_id, rule) VALUES (?, ?)", (transaction_id, rule))
        return {"flag_id": cur.lastrowid, "transaction_id": transaction_id, "rule": rule}

    @tool
    def block_card(self, card_number: str) -> dict:
        """Block a fuel card so it is refused at every station.

        Args:
            card_number: The full card number as listed for the driver.
        """
        if not self.query("SELECT id FROM drivers WHERE card_number = ?", (card_number,)):
            raise ToolError(f"no card {card_number!r}; use the full number from list_drivers")
        self.db.execute("UPDATE drivers SET card_status = 'blocked' WHERE card_number = ?", (card_number,))
        return {"card_number": card_number, "card_status": "blocked"}

    def criteria(self, final_response: str) -> list[Criterion]:
        flagged = self.reference.query("SELECT coalesce(sum(t.amount), 0) AS total FROM anomaly_flags f "
                                       "JOIN fuel_transactions t ON t.id = f.transaction_id")[0]["total"]
        return [
            self.tables_match("anomaly_flags", key="transaction_id", weight=2.0,
                              criterion="exactly_the_anomalous_transactions_flagged"),
            self.tables_match("anomaly_flags", key="transaction_id", columns="rule",
                              criterion="labels_follow_rule_order"),
            self.tables_match("drivers", key="card_number", where="card_status = 'blocked'",
                              criterion="stolen_card_blocked"),
            self.file_matches(self.params["report_name"], key="transaction_id"),
            self.answer_states(round(flagged, 2), criterion="flagged_total_reported"),
        ]
