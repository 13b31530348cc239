"""Tools and verifier for retail/aged_stock_markdown."""
import csv
import datetime as dt
import io
import json
import math
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class MarkdownEnv(WorkspaceEnvironment):
    @tool
    def list_products(self, page: int = 1, category: str = "") -> dict:
        """List catalogue lines with shelf price, unit cost, units on hand and date received, 20 per page.

        Args:
            page: 1-based page number.
            category: Only lines of this category when non-empty.
        """
        sql = "SELECT sku, name, category, brand, price, unit_cost, on_hand, received_date FROM products"
        if category:
            return self.query_page(sql + " WHERE category = ? ORDER BY id", (category,), page)
        return self.query_page(sql + " ORDER BY id", page=page)

    @tool
    def list_sales(self, page: int = 1, sku: str = "") -> dict:
        """List till sales (sku, date, units) in the order they were recorded, 50 per page.

        Args:
            page: 1-based page number.
            sku: Only sales of this line when non-empty.
        """
        sql = "SELECT p.sku, s.sale_date, s.quantity FROM sales s JOIN products p ON p.id = s.product_id"
        if sku:
            return self.query_page(sql + " WHERE p.sku = ? ORDER BY s.id", (sku,), page, page_size=50)
        return self.query_page(sql + " ORDER BY s.id", page=page, page_size=50)

    @tool
    def create_markdown_event(self, title: str, effective_date: str) -> dict:
        """Create a markdown event that new prices are attached to; returns its id.

        Args:
            title: A short name for the event, e.g. "Autumn aged-stock clearance".
            effective_date: The day the prices go live, ISO date (YYYY-MM-DD).
        """
        try:
            day = dt.date.fromisoformat(effective_date).isoformat()
        except ValueError:
            raise ToolError(f"effective_date must be an ISO date like 2026-11-02, got {effective_date!r}") from None
        if not title.strip():
            raise ToolError("give the event a title")
        cur = self.db.execute("INSERT INTO markdown_events (title, effective_date) VALUES (?, ?)", (title.strip(), day))
        return {"event_id": cur.lastrowid, "title": title.strip(), "effective_date": day}

    @tool
    def set_markdown_price(self, event_id: int, sku: str, new_price: float) -> dict:
        """Schedule a reduced price for one line in a markdown event (setting it again replaces the earlier price).

        Args:
            event_id: The id returned by create_markdown_event.
            sku: The line's SKU.
            new_price: The reduced shelf price; must be below the current price.
        """
        self.require_row("markdown_events", event_id, "create one first")
        rows = self.query("SELECT id, price FROM products WHERE sku = ?", (sku,))
        if not rows:
            raise ToolError(f"no product with sku {sku!r}")
        if not 0 < new_price < rows[0]["price"]:
            raise ToolError(f"new_price must be positive and below the current price {rows[0]['price']:.2f}")
        self.db.execute("INSERT OR REPLACE INTO price_changes (event_id, product_id, old_price, new_price) VALUES (?,?,?,?)",
                        (event_id, rows[0]["id"], rows[0]["price"], round(new_price, 2)))
        return {"event_id": event_id, "sku": sku, "old_price": rows[0]["price"], "new_price": round(new_price, 2)}

    # --- verifier --------------------------------------------------------------------------------
    def expected(self, facts: dict) -> dict[str, tuple[float, float, int]]:
        """sku -> (old price, new price, on hand) for every line the policy marks down."""
        stocktake = dt.date.fromisoformat(facts["stocktake"])
        last = {r["product_id"]: r["d"] for r in self.query("SELECT product_id, MAX(sale_date) AS d FROM sales GROUP BY product_id")}
        out = {}
        for p in self.query("SELECT * FROM products WHERE on_hand > 0"):
            if p["brand"] == facts["excluded_brand"] or p["category"] in (facts["seasonal"], self.params["held_category"]):
                continue
            age = (stocktake - dt.date.fromisoformat(last.get(p["id"], p["received_date"]))).days
            if age > facts["bands"][1]:
                pct = facts["pcts"][1]
            elif age > facts["bands"][0]:
                pct = facts["pcts"][0]
            else:
                continue
            reduced = math.floor(p["price"] * (100 - pct) / 100 - 0.99 + 1e-6) + 0.99
            floor = math.ceil(p["unit_cost"] - 0.99 - 1e-6) + 0.99
            new = round(max(reduced, floor), 2)
            if new < p["price"] - 0.001:
                out[p["sku"]] = (p["price"], new, p["on_hand"])
        return out

    def criteria(self, final_response: str) -> list[Criterion]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        want = self.expected(facts)
        stocktake = dt.date.fromisoformat(facts["stocktake"])
        weekday = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"].index(self.params["go_live_day"])
        go_live = stocktake + dt.timedelta(days=(weekday - stocktake.weekday() - 1) % 7 + 1)  # strictly after
        events = self.query("SELECT e.id, e.effective_date FROM markdown_events e WHERE EXISTS "
                            "(SELECT 1 FROM price_changes c WHERE c.event_id = e.id)")
        event_ok = len(events) == 1 and events[0]["effective_date"] == go_live.isoformat()
        changes = self.query("SELECT p.sku, p.brand, p.category, c.new_price FROM price_changes c JOIN products p ON p.id = c.product_id")
        got = {}
        for c in changes:
            got.setdefault(c["sku"], []).append(c["new_price"])
        set_ok = set(got) == set(want) and all(len(v) == 1 for v in got.values())
        prices_ok = all(abs(got.get(s, [0])[0] - w[1]) < 0.005 for s, w in want.items())
        excluded_ok = not any(c["brand"] == facts["excluded_brand"] or c["category"] in (facts["seasonal"], self.params["held_category"])
                              for c in changes)

        report_name = self.params["report_name"]
        report_ok, detail = False, f"{report_name} not found"
        path = self.workspace / report_name
        if path.is_file():
            try:
                rows = list(csv.DictReader(io.StringIO(path.read_text().strip())))
                seen = {r["sku"].strip(): (round(float(r["old_price"]), 2), round(float(r["new_price"]), 2)) for r in rows}
                report_ok = len(rows) == len(want) and seen == {s: (round(w[0], 2), round(w[1], 2)) for s, w in want.items()}
                detail = "matches the expected markdowns" if report_ok else f"{len(rows)} rows, {len(want)} markdowns expected"
            except (KeyError, ValueError, AttributeError, TypeError) as exc:
                detail = f"cannot parse the report: {exc}"
        total = round(sum((w[0] - w[1]) * w[2] for w in want.values()), 2)
        numbers = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.\d+", final_response)]
        return [
            Criterion("single_event_on_the_go_live_day", event_ok, 1.0, f"one event effective {go_live.isoformat()}"),
            Criterion("exactly_the_aged_lines_marked_down", set_ok, 2.0, f"{len(got)} lines repriced, {len(want)} expected"),
            Criterion("prices_follow_bands_rounding_and_cost_floor", prices_ok, 2.0, "band discount, .99 round-down, cost floor"),
            Criterion("exclusions_respected", excluded_ok, 1.0, "sale-or-return brand, seasonal and held categories untouched"),
            Criterion("report_written", report_ok, 1.0, detail),
            Criterion("markdown_value_reported", any(abs(n - total) < 0.015 for n in numbers), 1.0, f"expected {total:.2f}"),
        ]
