"""Tools and verifier for energy_metering/demand_response."""
import csv
import io
import json
import re
from datetime import date

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

TIERS = ("gold", "silver")
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]


class DemandResponseEnv(WorkspaceEnvironment):
    @tool
    def list_customers(self, page: int = 1) -> dict:
        """Customer accounts with their meter type as recorded; 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, account_no, name, meter_type, postcode FROM customers ORDER BY id", page=page)

    @tool
    def list_peak_readings(self, page: int = 1, customer_id: int = 0, date_from: str = "", date_to: str = "") -> dict:
        """Evening peak consumption per hour (17 and 18), in kWh; 20 per page, by customer then date.

        Args:
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def criteria(self, final_response: str) -> list[Criterion]:
        f = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        daily = {}
        for r in self.query("SELECT * FROM peak_readings WHERE reading_date BETWEEN ? AND ? AND reading_date != ?",
                            (f["start"], f["end"], f["holiday"])):
            weekday = date.fromisoformat(r["reading_date"]).weekday()
            if weekday < 5 and weekday != WEEKDAYS.index(self.params["excluded_weekday"]):
                key = (r["customer_id"], r["reading_date"])
                daily[key] = daily.get(key, 0) + r["kwh"]
        per = {}
        for (cid, _), total in daily.items():
            per.setdefault(cid, []).append(total)
        customers = {c["id"]: c for c in self.query("SELECT * FROM customers")}
        ranked = []
        for cid, days in per.items():
            smart = customers[cid]["meter_type"] == "smart" or cid in f["now_smart"]
            avg = sum(days) / len(days)
            area = re.match(r"[A-Z]+", customers[cid]["postcode"]).group(0)
            if smart and avg >= f["min_peak"] and cid not in f["excluded"] and area != self.params["excluded_area"]:
                ranked.append((-round(avg * f["share"] / 100, 2), customers[cid]["account_no"], cid, avg))
        ranked.sort()
        left, want = f["capacity"], {}
        for neg, account, cid, avg in ranked:
            if -neg <= left + 1e-9:
                left -= -neg
                want[cid] = {"account": account, "avg": avg, "flex": -neg, "tier": "gold" if -neg >= f["gold_from"] else "silver"}
        got = {e["customer_id"]: e for e in self.query("SELECT * FROM enrolments")}
        sheet_name = self.params["sheet_name"]
        sheet_ok, info = False, f"{sheet_name} not found"
        path = self.workspace / sheet_name
        if path.is_file():
            try:
                sheet = {r["account_no"].strip(): r for r in csv.DictReader(io.StringIO(path.read_text().strip()))}
                sheet_ok = set(sheet) == {w["account"] for w in want.values()} and all(
                    abs(float(sheet[w["account"]]["avg_peak_kwh"]) - w["avg"]) < 0.006 and
                    abs(float(sheet[w["account"]]["flexible_kwh"]) - w["flex"]) < 0.006 and
                    sheet[w["account"]]["tier"].strip().lower() == w["tier"] for w in want.values())
                info = f"{len(sheet)} rows, {len(want)} expected"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                info = f"could not read it: {exc}"
        total = round(sum(w["flex"] for w in want.values()), 2)
        said = [float(x) for x in re.findall(r"\d+\.\d+", final_response)]
        return [
            Criterion("exactly_the_right_customers_enrolled", set(got) == set(want), 2.0, f"{len(got)} enrolled, {len(want)} expected"),
            Criterion("tiers_and_loads_correct", all(k in got and got[k]["tier"] == w["tier"] and abs(got[k]["flexible_kwh"] - w["flex"]) < 0.006
                                                     for k, w in want.items()), 1.0, f"share of the weekday average peak without {self.params['excluded_weekday']}s, tier threshold"),
            Criterion("welcome_packs_sent", bool(got) and all(e["welcome_sent"] for e in got.values()), 1.0, "every enrolment welcomed"),
            Criterion("notes_honoured", not (set(f["excluded"]) & set(got)) and all(c in got for c in f["now_smart"])
                      and not any(re.match(r"[A-Z]+", customers[c]["postcode"]).group(0) == self.params["excluded_area"] for c in got), 1.0,
                      "priority register, opt-out and the excluded postcode area left out, exchanged meter counted as smart"),
            Criterion("enrolment_sheet_written", sheet_ok, 1.0, info),
            Criterion("total_flexible_load_reported", any(abs(x - total) < 0.011 for x in said), 1.0, f"expected {total:.2f}"),
        ]
