"""Tools and verifier for restaurant_supply/weekly_produce_order."""
import csv
import io
import json
import re
from collections import defaultdict
from datetime import date, timedelta

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class ProduceOrderEnv(WorkspaceEnvironment):
    @tool
    def list_ingredients(self, page: int = 1, category: str = "") -> dict:
        """List stocked ingredients with pack size, pack price, supplier and walk-in stock, 20 per page.

        Args:
            page: 1-based page number.
            category: Only this category ("produce", "dairy", "dry goods", "protein") when non-empty.
        """
        sql = "SELECT id, code, name, category, supplier, pack_grams, pack_price, on_hand_grams FROM ingredients"
        if category:
            return self.query_page(sql + " WHERE category = ? ORDER BY id", (category,), page)
        return self.query_page(sql + " ORDER BY id", page=page)

    @tool
    def list_dishes(self, page: int = 1) -> dict:
        """List the dishes on the menu, 20 per page.

        Args:
            page: 1-based page number.
        """
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
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def _expected(self) -> tuple[dict, dict]:
        f = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        start = date.fromisoformat(f["week_start"])
        end = (start + timedelta(days=6)).isoformat()
        recipes = defaultdict(list)
        for line in self.query("SELECT dish_id, ingredient_id, grams_per_cover FROM recipe_lines"):
            iid = f["swap"] if line["ingredient_id"] == f["removed"] else line["ingredient_id"]
            recipes[line["dish_id"]].append((iid, line["grams_per_cover"]))
        usage = defaultdict(int)
        for row in self.query("SELECT * FROM forecast WHERE service_date BETWEEN ? AND ?", (start.isoformat(), end)):
            if row["dish_id"] == f["retired_dish"] and row["service_date"] >= f["retire_day"]:
                continue
            for iid, grams in recipes[row["dish_id"]]:
                usage[iid] += grams * row["covers"]
        expected = {}
        for ing in self.query("SELECT * FROM ingredients WHERE category = 'produce'"):
            shortfall = usage[ing["id"]] * (100 + self.params["buffer_pct"]) - ing["on_hand_grams"] * 100  # in 1/100 g
            if shortfall > 0:
                packs = -(-shortfall // (ing["pack_grams"] * 100))
                expected[ing["id"]] = {"code": ing["code"], "name": ing["name"], "supplier": ing["supplier"],
                                       "packs": packs, "cost": round(packs * ing["pack_price"], 2)}
        return expected, f

    def criteria(self, final_response: str) -> list[Criterion]:
        expected, facts = self._expected()
        lines = self.query("SELECT l.ingredient_id, l.packs, o.supplier, o.id AS order_id, i.supplier AS own_supplier "
                           "FROM order_lines l JOIN orders o ON o.id = l.order_id JOIN ingredients i ON i.id = l.ingredient_id")
        by_ing = defaultdict(list)
        for line in lines:
            by_ing[line["ingredient_id"]].append(line)
        right_items = set(by_ing) == set(expected) and all(len(v) == 1 for v in by_ing.values())
        packs_ok = all(len(by_ing.get(i, [])) == 1 and by_ing[i][0]["packs"] == e["packs"] for i, e in expected.items())
        used_orders = {line["order_id"] for line in lines}
        suppliers_used = [o["supplier"] for o in self.query("SELECT id, supplier FROM orders") if o["id"] in used_orders]
        grouped = (all(line["supplier"] == line["own_supplier"] for line in lines)
                   and len(suppliers_used) == len(set(suppliers_used)))
        swap_ok = facts["removed"] not in by_ing and facts["swap"] in by_ing

        report_ok, detail = False, f"{self.params['report_name']} not found"
        path = self.workspace / self.params["report_name"]
        if path.is_file():
            try:
                rows = list(csv.DictReader(io.StringIO(path.read_text().strip())))
                got = {r["code"].strip(): (r["supplier"].strip(), int(float(r["packs"])), round(float(r["cost"]), 2)) for r in rows}
                want = {e["code"]: (e["supplier"], e["packs"], e["cost"]) for e in expected.values()}
                report_ok = got == want and len(rows) == len(want)
                detail = "matches the expected order" if report_ok else f"{len(rows)} rows; differs from the {len(want)} expected"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                detail = f"cannot parse the report: {exc}"
        total = round(sum(e["cost"] for e in expected.values()), 2)
        amounts = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.\d{2}", final_response)]
        return [
            Criterion("ordered_exactly_the_needed_produce", right_items, 2.0, f"{len(by_ing)} items ordered, {len(expected)} expected"),
            Criterion("pack_counts_correct", packs_ok, 2.0, "usage plus allowance, less stock, rounded up to packs"),
            Criterion("one_order_per_supplier", grouped, 1.0, "each line on its own supplier's single order"),
            Criterion("allergen_swap_applied", swap_ok, 1.0, "the removed allergen item replaced by its substitute"),
            Criterion("report_written", report_ok, 1.0, detail),
            Criterion("total_value_reported", any(abs(a - total) < 0.01 for a in amounts), 1.0, f"expected {total:.2f}"),
        ]
