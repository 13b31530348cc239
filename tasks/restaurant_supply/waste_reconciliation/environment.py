from datetime import date

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool
from progagent_lib.task.criteria import parse_rows


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
        """Stock items with their unit of measure (kg, l or each) and cost per unit, 20 per page."""
        return self.query_page("SELECT id, code, name, unit, unit_cost FROM items ORDER BY id", page=page)

    @tool
    def list_stock_counts(self, count_date: str, page: int = 1) -> dict:
        """Stocktake quantities recorded on one date, 20 per page.

        Args:
            count_date: The stocktake date, YYYY-MM-DD.
        """
        lo, _ = _window(count_date, "")
        return self.query_page("SELECT item_id, count_date, quantity FROM stock_counts WHERE count_date = ? ORDER BY item_id", (lo,), page)

    @tool
    def list_deliveries(self, page: int = 1, date_from: str = "", date_to: str = "") -> dict:
        """Deliveries booked in, by invoice (invoice_no, item_id, delivered_on, quantity), 20 per page.

        Args:
            date_from: First delivery date to include (YYYY-MM-DD), or empty.
            date_to: Last delivery date to include (YYYY-MM-DD), or empty.
        """
        lo, hi = _window(date_from, date_to)
        return self.query_page("SELECT invoice_no, item_id, delivered_on, quantity FROM deliveries "
                               "WHERE delivered_on BETWEEN ? AND ? ORDER BY id", (lo, hi), page)

    @tool
    def list_sales(self, page: int = 1, date_from: str = "", date_to: str = "") -> dict:
        """Portions sold per dish and day (dish_id, sale_date, portions), 20 per page.

        Args:
            date_from: First sale date to include (YYYY-MM-DD), or empty.
            date_to: Last sale date to include (YYYY-MM-DD), or empty.
        """
        lo, hi = _window(date_from, date_to)
        return self.query_page("SELECT dish_id, sale_date, portions FROM sales WHERE sale_date BETWEEN ? AND ? ORDER BY id", (lo, hi), page)

    @tool
    def list_recipe_lines(self, page: int = 1) -> dict:
        """Recipe lines: how much of each item one portion of a dish uses (in the item's unit), 20 per page."""
        return self.query_page("SELECT dish_id, item_id, quantity FROM recipe_lines ORDER BY id", page=page)

    @tool
    def list_waste(self, page: int = 1, date_from: str = "", date_to: str = "") -> dict:
        """Waste log entries (entry_no, item_id, logged_on, quantity, reason), 20 per page.

        Args:
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

    def criteria(self, final_response: str) -> list[Criterion]:
        name = self.params["report_name"]
        report = self.file_matches(name, key="item_code", columns=["unexplained_qty", "value"], tolerance=0.015,
                                   criterion="variance_report_written")
        own = {str(c["id"]): c["code"]
               for c in self.query("SELECT c.id, i.code FROM cases c JOIN items i ON i.id = c.item_id")}
        rows = parse_rows(self.read_workspace(name), "csv") if report.passed else []
        unlinked = [r["item_code"] for r in rows if own.get(r.get("case_id", "").strip()) != r["item_code"].strip()]
        worst = self.reference.query("SELECT i.name, i.code FROM cases c JOIN items i ON i.id = c.item_id "
                                     "ORDER BY c.value DESC LIMIT 1")[0]
        named = any(worst[k].casefold() in final_response.casefold() for k in ("name", "code"))
        return [
            self.tables_match("staff_meals", key=(), columns=["item_id", "quantity"], tolerance=0.0005,
                              criterion="staff_meals_recorded"),
            self.tables_match("cases", key="item_id", criterion="cases_for_exactly_the_material_losses", weight=2.0),
            self.tables_match("cases", key="item_id", columns=["unexplained_qty", "value"],
                              tolerance={"unexplained_qty": 0.002, "value": 0.015}, criterion="case_amounts_correct"),
            Criterion(report.name, report.passed and not unlinked, 1.0,
                      f"rows whose case_id is not their item's case: {unlinked[:4]}" if unlinked else report.detail),
            Criterion("largest_loss_named", named, 1.0, f"expected {worst['name']} ({worst['code']})"),
        ]
