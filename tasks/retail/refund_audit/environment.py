"""Tools and verifier for retail/refund_audit."""
import csv
import datetime as dt
import io
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class RefundAuditEnv(WorkspaceEnvironment):
    @tool
    def list_returns(self, page: int = 1) -> dict:
        """List processed returns (order, sku, units, date received, reason, condition, refund issued), 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page(
            "SELECT r.id AS return_id, o.order_no, r.sku, r.qty, r.return_date, r.reason, r.item_condition, r.refund_issued "
            "FROM returns r JOIN orders o ON o.id = r.order_id ORDER BY r.id", page=page)

    @tool
    def get_order(self, order_no: str) -> dict:
        """Get an order with its date, coupon percentage and lines (sku, units, unit price).

        Args:
            order_no: The order number, e.g. "W1230004".
        """
        rows = self.query("SELECT id, order_no, customer, order_date, coupon_pct FROM orders WHERE order_no = ?", (order_no.strip(),))
        if not rows:
            raise ToolError(f"no order {order_no!r}")
        order = rows[0]
        order["lines"] = self.query("SELECT sku, qty, unit_price FROM order_lines WHERE order_id = ?", (order.pop("id"),))
        return order

    @tool
    def get_product(self, sku: str) -> dict:
        """Get a product's name, category, final-sale flag and today's shelf price.

        Args:
            sku: The product's SKU.
        """
        rows = self.query("SELECT * FROM products WHERE sku = ?", (sku.strip(),))
        if not rows:
            raise ToolError(f"no product {sku!r}")
        return rows[0]

    @tool
    def flag_refund(self, return_id: int, correct_amount: float, note: str = "") -> dict:
        """Flag a return whose refund was wrong, with the amount it should have been (flagging again replaces it).

        Args:
            return_id: The return's id.
            correct_amount: The refund the policy allows, in currency (0 when none).
            note: Optional short explanation.
        """
        self.require_row("returns", return_id, "use list_returns")
        if correct_amount < 0:
            raise ToolError("correct_amount cannot be negative")
        self.db.execute("INSERT OR REPLACE INTO refund_flags (return_id, correct_amount, note) VALUES (?,?,?)",
                        (return_id, round(correct_amount, 2), note))
        return {"return_id": return_id, "correct_amount": round(correct_amount, 2), "flagged": True}

    @tool
    def unflag_refund(self, return_id: int) -> dict:
        """Withdraw a flag raised by mistake.

        Args:
            return_id: The return's id.
        """
        if not self.query("SELECT 1 FROM refund_flags WHERE return_id = ?", (return_id,)):
            raise ToolError(f"return {return_id} is not flagged")
        self.db.execute("DELETE FROM refund_flags WHERE return_id = ?", (return_id,))
        return {"return_id": return_id, "flagged": False}

    # --- verifier --------------------------------------------------------------------------------
    def correct_refunds(self) -> dict[int, tuple[float, float]]:
        """return id -> (refund issued, refund the policy allows)."""
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        year = facts["holiday_year"]
        season = (dt.date(year, 11, 15), dt.date(year, 12, 24))
        out = {}
        for r in self.query("SELECT r.*, o.order_date, o.coupon_pct, l.unit_price, p.category, p.final_sale FROM returns r "
                            "JOIN orders o ON o.id = r.order_id JOIN order_lines l ON l.order_id = r.order_id AND l.sku = r.sku "
                            "JOIN products p ON p.sku = r.sku"):
            placed, back = dt.date.fromisoformat(r["order_date"]), dt.date.fromisoformat(r["return_date"])
            last_day = placed + dt.timedelta(days=facts["window"])
            if season[0] <= placed <= season[1]:
                last_day = max(last_day, dt.date(year + 1, 1, 31))
            amount = r["qty"] * r["unit_price"] * (100 - r["coupon_pct"]) / 100
            if r["reason"] != "defective":
                if back > last_day or r["final_sale"]:
                    amount = 0.0
                elif r["category"] == "electronics" and r["item_condition"] == "opened":
                    amount *= (100 - self.params["restocking_fee_pct"]) / 100
            out[r["id"]] = (r["refund_issued"], round(amount + 1e-9, 2))
        return out

    def criteria(self, final_response: str) -> list[Criterion]:
        truth = self.correct_refunds()
        tolerance = max(0.01, self.params["tolerance"]) - 1e-9  # smaller differences are not flagged
        wrong = {i: v for i, v in truth.items() if abs(v[0] - v[1]) >= tolerance}
        flags = {f["return_id"]: f["correct_amount"] for f in self.query("SELECT * FROM refund_flags")}
        amounts_ok = all(i in flags and abs(flags[i] - v[1]) < 0.011 for i, v in wrong.items())
        report_name = self.params["report_name"]
        report_ok, detail = False, f"{report_name} not found"
        path = self.workspace / report_name
        if path.is_file():
            try:
                rows = list(csv.DictReader(io.StringIO(path.read_text().strip())))
                got = {int(float(r["return_id"])): (float(r["issued"]), float(r["correct"])) for r in rows}
                report_ok = len(rows) == len(wrong) and got.keys() == wrong.keys() and all(
                    abs(got[i][0] - v[0]) < 0.011 and abs(got[i][1] - v[1]) < 0.011 for i, v in wrong.items())
                detail = "lists exactly the wrong refunds" if report_ok else f"{len(rows)} rows, {len(wrong)} expected"
            except (KeyError, ValueError, AttributeError, TypeError) as exc:
                detail = f"cannot parse the file: {exc}"
        net = round(sum(v[0] - v[1] for v in wrong.values()), 2)
        numbers = [float(x.replace(",", "")) for x in re.findall(r"-?\d[\d,]*\.\d+", final_response)]
        return [
            Criterion("exactly_the_wrong_refunds_flagged", set(flags) == set(wrong), 2.0, f"{len(flags)} flagged, {len(wrong)} wrong by {self.params['tolerance']} or more"),
            Criterion("correct_amounts_recorded", amounts_ok, 2.0, "coupon, restocking fee, window and final-sale rules"),
            Criterion("restocking_fee_and_window_cases_flagged",
                      abs(flags.get(2, -1) - truth[2][1]) < 0.011 and abs(flags.get(4, -1)) < 0.011, 1.0,
                      "opened electronics refunded without the fee; a refund paid outside the window"),
            Criterion("holiday_and_defective_exceptions_not_flagged", not ({1, 3} & set(flags)), 1.0,
                      "holiday-season return in January and a late defective final-sale item were refunded rightly"),
            Criterion("audit_file_written", report_ok, 1.0, detail),
            Criterion("net_over_refund_reported", any(abs(n - net) < 0.011 for n in numbers), 1.0, f"expected {net:.2f}"),
        ]
