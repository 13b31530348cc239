import datetime as dt

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class MarkdownEnv(WorkspaceEnvironment):
    @tool
    def list_products(self, page: int = 1, category: str = "") -> dict:
        """List catalogue lines with shelf price, unit cost, units on hand and date received, 20 per page.

        Args:
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

    def criteria(self, final_response: str) -> list[Criterion]:
        facts = self.facts
        changes = "price_changes c JOIN products p ON p.id = c.product_id"
        untouched = (facts["excluded_brand"], facts["seasonal"], self.params["held_category"])
        wrong = self.query(f"SELECT count(*) AS n FROM {changes} WHERE p.brand = ? OR p.category IN (?, ?)", untouched)
        value = self.reference.query(f"SELECT sum((p.price - c.new_price) * p.on_hand) AS v FROM {changes}")[0]["v"]
        return [
            self.tables_match("markdown_events e", key="e.effective_date", criterion="single_event_on_the_go_live_day",
                              where="EXISTS (SELECT 1 FROM price_changes c WHERE c.event_id = e.id)"),
            self.tables_match(changes, key="p.sku", criterion="exactly_the_aged_lines_marked_down", weight=2.0),
            self.tables_match(changes, key="p.sku", columns="c.new_price", tolerance=0.005, weight=2.0,
                              criterion="prices_follow_bands_rounding_and_cost_floor"),
            Criterion("exclusions_respected", wrong[0]["n"] == 0, 1.0,
                      "sale-or-return brand, seasonal and held categories untouched"),
            self.file_matches(self.params["report_name"], key="sku", criterion="report_written"),
            self.answer_states(round(value or 0.0, 2), tolerance=0.015, criterion="markdown_value_reported"),
        ]
