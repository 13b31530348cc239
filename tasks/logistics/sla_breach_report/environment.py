"""Tools and verifier for logistics/sla_breach_report."""
import datetime as dt
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

SERVICES = ("express", "standard", "economy")


class SlaEnv(WorkspaceEnvironment):
    @tool
    def list_customers(self, page: int = 1) -> dict:
        """List customers with their account tier, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, name, tier FROM customers ORDER BY id", page=page)

    @tool
    def list_deliveries(self, page: int = 1, service: str = "") -> dict:
        """List deliveries (tracking number, customer, service, region, pickup and delivery times, fee), 50 per page.

        Args:
            page: 1-based page number.
            service: Only this service level ("express", "standard" or "economy") when non-empty.
        """
        if service and service not in SERVICES:
            raise ToolError(f"service must be one of {', '.join(SERVICES)}, got {service!r}")
        sql = "SELECT id, tracking_no, customer_id, service, region, picked_up_at, delivered_at, fee FROM deliveries"
        if service:
            return self.query_page(sql + " WHERE service = ? ORDER BY id", (service,), page, page_size=50)
        return self.query_page(sql + " ORDER BY id", page=page, page_size=50)

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

    # --- verifier --------------------------------------------------------------------------------
    def expected(self, facts: dict) -> dict[int, tuple[str, float]]:
        """delivery id -> (service, credit due) for every breach."""
        holidays = {dt.date.fromisoformat(h) for h in facts["holidays"]}
        cutoff = dt.datetime.fromisoformat(facts["cutoff"])
        region, storm_from, storm_to = facts["storm"]
        tiers = {c["id"]: c["tier"] for c in self.query("SELECT id, tier FROM customers")}
        out = {}
        for d in self.query("SELECT * FROM deliveries"):
            picked = dt.datetime.fromisoformat(d["picked_up_at"])
            if d["region"] == region and storm_from <= picked.date().isoformat() <= storm_to:
                continue
            if d["region"] == self.params["excluded_region"]:
                continue  # audited separately
            if d["service"] == "express":
                promise = picked + dt.timedelta(hours=24)
            else:
                n = 2 if (d["service"] == "standard" and d["customer_id"] == facts["premium"]) else {"standard": 3, "economy": 5}[d["service"]]
                day = picked.date()
                while n:
                    day += dt.timedelta(days=1)
                    n -= day.weekday() < 5 and day not in holidays
                promise = dt.datetime.combine(day, dt.time(23, 59, 59))
            arrived = dt.datetime.fromisoformat(d["delivered_at"]) if d["delivered_at"] else None
            if (arrived and arrived > promise) or (arrived is None and cutoff > promise):
                eligible = tiers[d["customer_id"]] == "Gold" and d["fee"] >= self.params["min_fee"]
                credit = round(d["fee"] * facts["credit_pct"] / 100, 2) if eligible else 0.0
                out[d["id"]] = (d["service"], credit)
        return out

    def criteria(self, final_response: str) -> list[Criterion]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        want = self.expected(facts)
        logged = {b["delivery_id"]: b["id"] for b in self.query("SELECT * FROM breaches")}
        credits = {r["delivery_id"]: r["amount"] for r in self.query(
            "SELECT b.delivery_id, c.amount FROM credits c JOIN breaches b ON b.id = c.breach_id")}
        owed = {i: c for i, (_, c) in want.items() if c > 0}
        credits_ok = credits.keys() == owed.keys() and all(abs(credits[i] - c) < 0.011 for i, c in owed.items())

        counts = {s: sum(1 for v in want.values() if v[0] == s) for s in SERVICES}
        report_name = self.params["report_name"]
        summary_ok, detail = False, f"{report_name} not found"
        path = self.workspace / report_name
        if path.is_file():
            try:
                data = json.loads(path.read_text())
                summary_ok = {s: int(data.get(s, -1)) for s in SERVICES} == counts
                detail = "matches the breach counts" if summary_ok else f"expected {counts}"
            except (ValueError, TypeError, AttributeError) as exc:
                detail = f"cannot parse the file: {exc}"
        total = round(sum(owed.values()), 2)
        numbers = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.\d+", final_response)]
        return [
            Criterion("exactly_the_breaches_logged", set(logged) == set(want), 2.0, f"{len(logged)} logged, {len(want)} expected ({self.params['excluded_region']} left out)"),
            Criterion("business_days_and_holidays_counted", 1 not in logged and 4 in logged, 1.0,
                      "a standard delivery across a public holiday is on time; the premium contract's is late"),
            Criterion("force_majeure_exempt", 3 not in logged, 1.0, "storm-region deliveries in the window are exempt"),
            Criterion("gold_credits_issued", credits_ok, 1.0, f"{len(credits)} credits, {len(owed)} expected (fees of at least {self.params['min_fee']})"),
            Criterion("summary_file_written", summary_ok, 1.0, detail),
            Criterion("credit_total_reported", any(abs(n - total) < 0.011 for n in numbers), 1.0, f"expected {total:.2f}"),
        ]
