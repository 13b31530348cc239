"""Tools and verifier for energy_metering/tariff_billing."""
import csv
import io
import json
import re
from datetime import date

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class TariffBillingEnv(WorkspaceEnvironment):
    @tool
    def list_customers(self, page: int = 1, status: str = "") -> dict:
        """List customer accounts with their tariff and current meter, 20 per page.

        Args:
            page: 1-based page number.
            status: Only accounts with this status ("live" or "closed") when non-empty.
        """
        sql = "SELECT id, account_no, name, tariff_code, meter_id, status FROM customers"
        if status:
            return self.query_page(sql + " WHERE status = ? ORDER BY id", (status,), page)
        return self.query_page(sql + " ORDER BY id", page=page)

    @tool
    def list_tariffs(self, page: int = 1) -> dict:
        """List tariffs with their unit rate (pence per kWh) and standing charge (pence per day).

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT code, name, unit_rate_pence, standing_pence_per_day FROM tariffs ORDER BY code", page=page)

    @tool
    def list_readings(self, page: int = 1, meter_id: str = "", read_date: str = "") -> dict:
        """List meter register readings (kWh, read at midnight starting the date), 20 per page.

        Args:
            page: 1-based page number.
            meter_id: Only this meter's readings when non-empty.
            read_date: Only readings dated this day (YYYY-MM-DD) when non-empty.
        """
        if read_date:
            try:
                date.fromisoformat(read_date)
            except ValueError:
                raise ToolError(f"read_date must be YYYY-MM-DD, got {read_date!r}") from None
        clauses, params = [], []
        if meter_id:
            clauses.append("meter_id = ?")
            params.append(meter_id)
        if read_date:
            clauses.append("read_date = ?")
            params.append(read_date)
        where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
        return self.query_page("SELECT meter_id, read_date, register_kwh FROM readings" + where +
                               " ORDER BY read_date, meter_id", tuple(params), page)

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

    # --- verifier --------------------------------------------------------------------------------
    def _expected(self) -> tuple[dict, dict]:
        f = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        registers: dict[str, dict[str, int]] = {}
        for r in self.query("SELECT meter_id, read_date, register_kwh FROM readings"):
            registers.setdefault(r["meter_id"], {})[r["read_date"]] = r["register_kwh"]

        def used(meter: str, a: str, b: str) -> int:
            series = registers[meter]
            lo, hi = max(a, min(series)), min(b, max(series))
            return series[hi] - series[lo] if lo < hi else 0

        tariffs = {t["code"]: t for t in self.query("SELECT * FROM tariffs")}
        days = (date.fromisoformat(f["end"]) - date.fromisoformat(f["start"])).days
        expected = {}
        for c in self.query("SELECT * FROM customers WHERE status = 'live'"):
            if tariffs[c["tariff_code"]]["name"] == self.params["skipped_tariff"]:
                continue  # billed in the partner's system this month
            meters = [c["meter_id"]] + ([f["old_meter"]] if c["id"] == f["swapped"] else [])
            t = tariffs[c["tariff_code"]]
            if c["tariff_code"] == f["changed"]:
                before = sum(used(m, f["start"], f["change_day"]) for m in meters)
                after = sum(used(m, f["change_day"], f["end"]) for m in meters)
                pence = before * t["unit_rate_pence"] + after * f["new_rate"]
            else:
                before = sum(used(m, f["start"], f["end"]) for m in meters)
                after, pence = 0, before * t["unit_rate_pence"]
            standing = 0.0 if c["account_no"] in f["hardship"] else round(days * t["standing_pence_per_day"] / 100, 2)
            energy = round(pence / 100 * (100 - self.params["discount_pct"]) / 100, 2)
            expected[c["id"]] = {"account_no": c["account_no"], "kwh": before + after, "energy": energy,
                                 "standing": standing, "total": round(energy + standing, 2)}
        return expected, f

    def criteria(self, final_response: str) -> list[Criterion]:
        expected, f = self._expected()
        bills = {b["customer_id"]: b for b in self.query("SELECT * FROM bills")}

        def close(a, b):
            return a is not None and abs(float(a) - b) <= 0.011

        everyone = set(bills) == set(expected)
        changed_ids = {c["id"] for c in self.query("SELECT id FROM customers WHERE tariff_code = ? AND status = 'live'", (f["changed"],))}
        plain_ok = all(k in bills and bills[k]["kwh"] == e["kwh"] and close(bills[k]["energy_charge"], e["energy"])
                       for k, e in expected.items() if k not in changed_ids)
        split_ok = all(k in bills and close(bills[k]["energy_charge"], expected[k]["energy"]) for k in changed_ids)
        standing_ok = all(k in bills and close(bills[k]["standing_charge"], e["standing"]) for k, e in expected.items())
        swap = expected[f["swapped"]]
        swap_ok = f["swapped"] in bills and bills[f["swapped"]]["kwh"] == swap["kwh"]

        report_ok, detail = False, f"{self.params['bills_name']} not found"
        path = self.workspace / self.params["bills_name"]
        if path.is_file():
            try:
                rows = list(csv.DictReader(io.StringIO(path.read_text().strip())))
                got = {r["account_no"].strip(): r for r in rows}
                want = {e["account_no"]: e for e in expected.values()}
                report_ok = len(rows) == len(want) and set(got) == set(want) and all(
                    int(float(got[a]["kwh"])) == e["kwh"] and close(got[a]["energy_charge"], e["energy"])
                    and close(got[a]["standing_charge"], e["standing"]) and close(got[a]["total"], e["total"])
                    for a, e in want.items())
                detail = "matches the expected bills" if report_ok else f"{len(rows)} rows; differs from the {len(want)} expected bills"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                detail = f"cannot parse the report: {exc}"
        grand = round(sum(e["total"] for e in expected.values()), 2)
        slack = 0.011 * (len(changed_ids) + 1)  # per-segment rounding may move each repriced bill by a penny
        amounts = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.\d{2}", final_response)]
        return [
            Criterion("one_bill_per_live_account", everyone, 2.0, f"{len(bills)} bills, {len(expected)} live accounts not on {self.params['skipped_tariff']}"),
            Criterion("energy_charges_correct", plain_ok, 1.0, f"closing minus opening register at the tariff rate, less {self.params['discount_pct']}%"),
            Criterion("price_change_split_at_effective_date", split_ok, 1.0, f"tariff {f['changed']} repriced from {f['change_day']}"),
            Criterion("standing_charges_and_waivers", standing_ok, 1.0, "days x daily charge, waived for the support scheme"),
            Criterion("meter_exchange_consumption", swap_ok, 1.0, "old and new meter registers both billed"),
            Criterion("report_written", report_ok, 1.0, detail),
            Criterion("total_billed_reported", any(abs(a - grand) <= slack for a in amounts), 1.0, f"expected {grand:.2f}"),
        ]
