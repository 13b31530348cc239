"""Tools and verifier for restaurant_supply/waste_reconciliation."""
import csv
import io
import json
from datetime import date, timedelta

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


def _window(date_from: str, date_to: str) -> tuple[str, str]:
    for value in (date_from, date_to):
        if value:
            try:
                date.fromisoformat(value)
            except ValueError:
                raise ToolError(f"dates are YYYY-MM-DD; {value!r} is not one") from None
    return date_from or "0000-01-01", date_to or "9999-12-31"


class WasteReconciliationEnv(WorkspaceEnvironment):
    @tool
    def list_items(self, page: int = 1) -> dict:
        """Stock items with their unit of measure (kg, l or each) and cost per unit, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, code, name, unit, unit_cost FROM items ORDER BY id", page=page)

    @tool
    def list_stock_counts(self, count_date: str, page: int = 1) -> dict:
        """Stocktake quantities recorded on one date, 20 per page.

        Args:
            count_date: The stocktake date, YYYY-MM-DD.
            page: 1-based page number.
        """
        lo, _ = _window(count_date, "")
        return self.query_page("SELECT item_id, count_date, quantity FROM stock_counts WHERE count_date = ? ORDER BY item_id", (lo,), page)

    @tool
    def list_deliveries(self, page: int = 1, date_from: str = "", date_to: str = "") -> dict:
        """Deliveries booked in, by invoice, 20 per page.

        Args:
            page: 1-based page number.
            date_from: First delivery date to include (YYYY-MM-DD), or empty.
            date_to: Last delivery date to include (YYYY-MM-DD), or empty.
        """
        lo, hi = _window(date_from, date_to)
        return self.query_page("SELECT invoice_no, item_id, delivered_on, quantity FROM deliveries "
                               "WHERE delivered_on BETWEEN ? AND ? ORDER BY id", (lo, hi), page)

    @tool
    def list_sales(self, page: int = 1, date_from: str = "", date_to: str = "") -> dict:
        """Portions sold per dish and day, 20 per page.

        Args:
            page: 1-based page number.
            date_from: First sale date to include (YYYY-MM-DD), or empty.
            date_to: Last sale date to include (YYYY-MM-DD), or empty.
        """
        lo, hi = _window(date_from, date_to)
        return self.query_page("SELECT dish_id, sale_date, portions FROM sales WHERE sale_date BETWEEN ? AND ? ORDER BY id", (lo, hi), page)

    @tool
    def list_recipe_lines(self, page: int = 1) -> dict:
        """Recipe lines: how much of each item one portion of a dish uses (in the item's unit), 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT dish_id, item_id, quantity FROM recipe_lines ORDER BY id", page=page)

    @tool
    def list_waste(self, page: int = 1, date_from: str = "", date_to: str = "") -> dict:
        """Waste log entries, 20 per page.

        Args:
            page: 1-based page number.
            date_from: First date to include (YYYY-MM-DD), or empty.
            date_to: Last date to include (YYYY-MM-DD), or empty.
        """
        lo, hi = _window(date_from, date_to)
        return self.query_page("SELECT entry_no, item_id, logged_on, quantity, reason FROM waste_log "
                               "WHERE logged_on BETWEEN ? AND ? ORDER BY id", (lo, hi), page)

    @tool
    def record_staff_meal(self, item_id: int, quantity: float, note: str = "") -> dict:
        """Record stock used for a staff meal.

        Args:
            item_id: The item used.
            quantity: Amount used, in the item's own unit (kg, l or each).
            note: Free text, e.g. the day.
        """
        self.require_row("items", item_id, "use list_items")
        if quantity <= 0:
            raise ToolError("quantity must be positive, in the item's unit")
        meal = self.db.execute("INSERT INTO staff_meals (item_id, quantity, note) VALUES (?,?,?)", (item_id, quantity, note))
        return {"staff_meal_id": meal.lastrowid, "item_id": item_id, "quantity": quantity}

    @tool
    def open_case(self, item_id: int, unexplained_qty: float, value: float) -> dict:
        """Open a loss investigation case for an item; returns the case id.

        Args:
            item_id: The item with the unexplained loss.
            unexplained_qty: The missing quantity, in the item's unit.
            value: What the missing quantity is worth at cost, in pounds.
        """
        self.require_row("items", item_id, "use list_items")
        if self.query("SELECT 1 FROM cases WHERE item_id = ?", (item_id,)):
            raise ToolError(f"item {item_id} already has an open case")
        case = self.db.execute("INSERT INTO cases (item_id, unexplained_qty, value) VALUES (?,?,?)", (item_id, unexplained_qty, value))
        return {"case_id": case.lastrowid, "item_id": item_id}

    # --- verifier --------------------------------------------------------------------------------
    def _losses(self) -> tuple[dict, dict]:
        f = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        monday = date.fromisoformat(f["monday"])
        sunday_before, last_day = (monday - timedelta(days=1)).isoformat(), (monday + timedelta(days=6)).isoformat()
        week = (monday.isoformat(), last_day)
        balance = {}
        for c in self.query("SELECT item_id, count_date, quantity FROM stock_counts"):
            sign = 1 if c["count_date"] == sunday_before else -1  # opening adds, the closing count is what we have
            balance[c["item_id"]] = balance.get(c["item_id"], 0.0) + sign * c["quantity"]
        for d in self.query("SELECT * FROM deliveries WHERE delivered_on BETWEEN ? AND ? AND invoice_no != ?", week + (f["returned_invoice"],)):
            balance[d["item_id"]] += d["quantity"]
        per_portion = {}
        for line in self.query("SELECT * FROM recipe_lines"):
            per_portion.setdefault(line["dish_id"], []).append((line["item_id"], line["quantity"]))
        for s in self.query("SELECT * FROM sales WHERE sale_date BETWEEN ? AND ?", week):
            for iid, q in per_portion.get(s["dish_id"], []):
                balance[iid] -= q * s["portions"]
        for w in self.query("SELECT * FROM waste_log WHERE logged_on BETWEEN ? AND ? AND entry_no != ?", week + (f["duplicate_entry"],)):
            balance[w["item_id"]] -= w["quantity"]
        for iid, q in f["meals"]:
            balance[iid] -= q
        items = {i["id"]: i for i in self.query("SELECT * FROM items")}
        losses = {iid: {"code": items[iid]["code"], "name": items[iid]["name"], "qty": q, "value": q * items[iid]["unit_cost"]}
                  for iid, q in balance.items()}
        return losses, f

    def criteria(self, final_response: str) -> list[Criterion]:
        losses, f = self._losses()
        flagged = {iid: l for iid, l in losses.items() if l["value"] > self.params["threshold"]}
        cases = {c["id"]: c for c in self.query("SELECT * FROM cases")}
        by_item = {c["item_id"]: c for c in cases.values()}
        amounts_ok = all(i in by_item and abs(by_item[i]["unexplained_qty"] - l["qty"]) < 0.002
                         and abs(by_item[i]["value"] - l["value"]) < 0.015 for i, l in flagged.items())
        meals_want = sorted((iid, round(q, 3)) for iid, q in f["meals"])
        meals_got = sorted((m["item_id"], round(m["quantity"], 3)) for m in self.query("SELECT item_id, quantity FROM staff_meals"))

        csv_ok, note = False, f"{self.params['report_name']} not found"
        path = self.workspace / self.params["report_name"]
        if path.is_file():
            try:
                table = list(csv.DictReader(io.StringIO(path.read_text().strip())))
                seen = {}
                for row in table:
                    case = cases.get(int(row["case_id"]))
                    seen[row["item_code"].strip()] = (case is not None and losses[case["item_id"]]["code"] == row["item_code"].strip(),
                                                      float(row["unexplained_qty"]), float(row["value"]))
                csv_ok = len(table) == len(flagged) and all(
                    l["code"] in seen and seen[l["code"]][0] and abs(seen[l["code"]][1] - l["qty"]) < 0.002
                    and abs(seen[l["code"]][2] - l["value"]) < 0.015 for l in flagged.values())
                note = f"{len(table)} rows for {len(flagged)} expected cases"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                note = f"unreadable: {exc}"
        worst = max(flagged.values(), key=lambda l: l["value"])
        answer = final_response.lower()
        named_ok = worst["name"].lower() in answer or worst["code"].lower() in answer
        return [
            Criterion("staff_meals_recorded", meals_got == meals_want, 1.0, f"{len(meals_got)} recorded, {len(meals_want)} in the notebook"),
            Criterion("cases_for_exactly_the_material_losses", set(by_item) == set(flagged), 2.0, f"{len(by_item)} cases, {len(flagged)} expected"),
            Criterion("case_amounts_correct", amounts_ok, 1.0, "loss quantity and value at cost"),
            Criterion("variance_report_written", csv_ok, 1.0, note),
            Criterion("largest_loss_named", named_ok, 1.0, f"expected {worst['name']} ({worst['code']})"),
        ]
