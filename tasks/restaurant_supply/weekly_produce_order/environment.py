from datetime import date

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class ProduceOrderEnv(WorkspaceEnvironment):
    @tool
    def list_ingredients(self, page: int = 1, category: str = "") -> dict:
        """List stocked ingredients with pack size, pack price, supplier and walk-in stock, 20 per page.

        Args:
            category: Only this category ("produce", "dairy", "dry goods", "protein") when non-empty.
        """
        sql = "SELECT id, code, name, category, supplier, pack_grams, pack_price, on_hand_grams FROM ingredients"
        if category:
            return self.query_page(sql + " WHERE category = ? ORDER BY id", (category,), page)
        return self.query_page(sql + " ORDER BY id", page=page)

    @tool
    def list_dishes(self, page: int = 1) -> dict:
        """List the dishes on the menu, 20 per page."""
        return self.query_page("SELECT id, name, section FROM dishes ORDER BY id", page=page)

    @tool
    def get_recipe(self, dish_id: int) -> dict:
        """Get a dish's recipe: each ingredient and its grams per cover.

        Args:
            dish_id: The dish's numeric id.
        """
        dish = self.require_row("dishes", dish_id, "list_dishes shows the menu", what="dish")
        lines = self.query("SELECT ingredient_id, grams_per_cover FROM recipe_lines WHERE dish_id = ? ORDER BY id", (dish_id,))
        return {"dish_id": dish_id, "name": dish["name"], "lines": lines}

    @tool
    def list_forecast(self, page: int = 1, date_from: str = "", date_to: str = "") -> dict:
        """List forecast covers per dish and service date, 20 per page.

        Args:
            date_from: Earliest service date (YYYY-MM-DD, inclusive) when non-empty.
            date_to: Latest service date (YYYY-MM-DD, inclusive) when non-empty.
        """
        for value in (date_from, date_to):
            if value:
                try:
                    date.fromisoformat(value)
                except ValueError:
                    raise ToolError(f"dates must be YYYY-MM-DD, got {value!r}") from None
        return self.query_page("SELECT service_date, dish_id, covers FROM forecast WHERE service_date >= ? AND service_date <= ? "
                               "ORDER BY service_date, dish_id", (date_from or "0000", date_to or "9999"), page)

    @tool
    def create_order(self, supplier: str) -> dict:
        """Open an empty purchase order for one supplier; returns its id.

        Args:
            supplier: The supplier's name exactly as listed on its ingredients.
        """
        if not self.query("SELECT 1 FROM ingredients WHERE supplier = ?", (supplier,)):
            raise ToolError(f"unknown supplier {supplier!r}; use a supplier name from list_ingredients")
        cur = self.db.execute("INSERT INTO orders (supplier, status) VALUES (?, 'open')", (supplier,))
        return {"order_id": cur.lastrowid, "supplier": supplier}

    @tool
    def add_order_line(self, order_id: int, ingredient_id: int, packs: int) -> dict:
        """Add whole packs of one ingredient to an open order.

        Args:
            order_id: The id returned by create_order.
            ingredient_id: The ingredient to order.
            packs: Number of whole packs (at least 1).
        """
        self.require_row("orders", order_id, "open one with create_order first")
        self.require_row("ingredients", ingredient_id, "use list_ingredients")
        if packs < 1:
            raise ToolError(f"packs must be at least 1, got {packs}")
        cur = self.db.execute("INSERT INTO order_lines (order_id, ingredient_id, packs) VALUES (?,?,?)",
                              (order_id, ingredient_id, packs))
        return {"line_id": cur.lastrowid, "order_id": order_id, "ingredient_id": ingredient_id, "packs": packs}

    def criteria(self, final_response: str) -> list[Criterion]:
        facts = self.facts
        ordered = {r["ingredient_id"] for r in self.query("SELECT ingredient_id FROM order_lines")}
        lines = "order_lines l JOIN orders o ON o.id = l.order_id"
        own_supplier = self.tables_match(lines, key="l.ingredient_id", columns="o.supplier")
        one_each = self.tables_match("orders o", key="o.supplier",
                                     where="EXISTS (SELECT 1 FROM order_lines l WHERE l.order_id = o.id)")
        total = self.reference.query("SELECT sum(round(l.packs * i.pack_price, 2)) AS t FROM order_lines l "
                                     "JOIN ingredients i ON i.id = l.ingredient_id")[0]["t"] or 0.0
        return [
            self.tables_match("order_lines", key="ingredient_id", criterion="ordered_exactly_the_needed_produce",
                              weight=2.0),
            self.tables_match("order_lines", key="ingredient_id", columns="packs", criterion="pack_counts_correct",
                              weight=2.0),
            Criterion("one_order_per_supplier", own_supplier.passed and one_each.passed, 1.0,
                      f"lines: {own_supplier.detail}; orders: {one_each.detail}"),
            Criterion("allergen_swap_applied", facts["removed"] not in ordered and facts["swap"] in ordered, 1.0,
                      "the removed allergen item replaced by its substitute"),
            self.file_matches(self.params["report_name"], key="code", columns=["supplier", "packs", "cost"]),
            self.answer_states(round(total, 2), criterion="total_value_reported"),
        ]
