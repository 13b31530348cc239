"""Tools and verifier for fleet_maintenance/fuel_anomalies."""
import csv
import io
import json
import re
from datetime import datetime, timedelta

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

RULES = ("stolen_card", "wrong_fuel", "over_capacity", "odometer_rollback", "rapid_refill", "off_hours")


class FuelAnomalyEnv(WorkspaceEnvironment):
    @tool
    def list_vehicles(self, page: int = 1) -> dict:
        """List vehicles with fuel type, tank size (litres, as recorded) and assigned driver, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, unit_number, fuel_type, tank_litres, driver_id, depot FROM vehicles ORDER BY id", page=page)

    @tool
    def list_drivers(self, page: int = 1) -> dict:
        """List drivers with their fuel card number and card status, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, name, card_number, card_status FROM drivers ORDER BY id", page=page)

    @tool
    def list_transactions(self, card_number: str = "", page: int = 1) -> dict:
        """List fuel-card transactions in time order, 20 per page. Times are local, "YYYY-MM-DD HH:MM".

        Args:
            card_number: Only this card's transactions when non-empty.
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def expected(self) -> dict[int, tuple[str, str, float]]:
        f = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        vehicles = {v["unit_number"]: v for v in self.query("SELECT unit_number, fuel_type, tank_litres FROM vehicles")}
        last_odo, last_card = {}, {}
        out = {}
        for t in self.query("SELECT * FROM fuel_transactions ORDER BY txn_time, id"):
            when = datetime.strptime(t["txn_time"], "%Y-%m-%d %H:%M")
            v = vehicles.get(t["unit_number"])
            tank = f["aux"].get(t["unit_number"], v["tank_litres"]) if v else None
            rule, skip = None, self.params["skipped_rule"]
            if t["card_number"] == f["stolen_card"] and t["txn_time"] >= f["stolen_at"]:
                rule = "stolen_card"
            elif skip != "wrong_fuel" and v and t["fuel_type"] != v["fuel_type"]:
                rule = "wrong_fuel"
            elif skip != "over_capacity" and v and t["litres"] > tank:
                rule = "over_capacity"
            elif skip != "odometer_rollback" and v and t["unit_number"] in last_odo and t["odometer_km"] < last_odo[t["unit_number"]]:
                rule = "odometer_rollback"
            elif skip != "rapid_refill" and t["card_number"] in last_card and when - last_card[t["card_number"]] < timedelta(hours=f["window_hours"]):
                rule = "rapid_refill"
            elif (when.weekday() >= 5 or when.hour >= self.params["night_start"] or when.hour < 5) and t["card_number"] not in f["night_cards"]:
                rule = "off_hours"
            if v and t["odometer_km"] is not None:
                last_odo[t["unit_number"]] = t["odometer_km"]
            last_card[t["card_number"]] = when
            if rule:
                out[t["id"]] = (t["card_number"], rule, t["amount"])
        return out

    def criteria(self, final_response: str) -> list[Criterion]:
        expected = self.expected()
        f = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        flags = {r["transaction_id"]: r["rule"] for r in self.query("SELECT transaction_id, rule FROM anomaly_flags")}
        blocked = {r["card_number"] for r in self.query("SELECT card_number FROM drivers WHERE card_status = 'blocked'")}
        report_ok, detail = False, f"{self.params['report_name']} not found"
        path = self.workspace / self.params["report_name"]
        if path.is_file():
            try:
                rows = list(csv.DictReader(io.StringIO(path.read_text().strip())))
                got = {int(r["transaction_id"]): (r["card_number"].strip(), r["rule"].strip()) for r in rows}
                report_ok = got == {k: v[:2] for k, v in expected.items()} and len(rows) == len(expected)
                detail = "matches the expected anomalies" if report_ok else f"{len(rows)} rows, {len(expected)} expected"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                detail = f"cannot parse the report: {exc}"
        total = round(sum(v[2] for v in expected.values()), 2)
        money = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.\d{2}", final_response)]
        return [
            Criterion("exactly_the_anomalous_transactions_flagged", set(flags) == set(expected), 2.0,
                      f"{len(flags)} flagged, {len(expected)} expected"),
            Criterion("labels_follow_rule_order", set(flags) == set(expected) and all(flags[k] == v[1] for k, v in expected.items()), 1.0,
                      f"first rule broken, in the audit order, {self.params['skipped_rule']} skipped"),
            Criterion("stolen_card_blocked", blocked == {f["stolen_card"]}, 1.0, f"blocked: {sorted(blocked)}"),
            Criterion("report_written", report_ok, 1.0, detail),
            Criterion("flagged_total_reported", any(abs(m - total) < 0.01 for m in money), 1.0, f"expected {total:.2f}"),
        ]
