from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool
from progagent_lib.task.criteria import parse_rows


class SupplierPriceReviewEnv(WorkspaceEnvironment):
    @tool
    def list_items(self, page: int = 1) -> dict:
        """Items we buy: unit of measure, weekly usage in that unit and current supplier; 20 per page."""
        return self.query_page("SELECT id, code, name, unit, weekly_usage, supplier_id FROM items ORDER BY id", page=page)

    @tool
    def list_suppliers(self, page: int = 1) -> dict:
        """Suppliers and their delivery days; 20 per page."""
        return self.query_page("SELECT id, name, delivery_days FROM suppliers ORDER BY id", page=page)

    @tool
    def list_quotes(self, page: int = 1, item_id: int = 0) -> dict:
        """Supplier quotes: pack description, price per pack and how long the quote is valid; 20 per page.

        Args:
            item_id: Only quotes for this item when non-zero.
        """
        return self.query_page("SELECT id, supplier_id, item_id, pack, pack_price, valid_until FROM quotes "
                               "WHERE ? = 0 OR item_id = ? ORDER BY id", (item_id, item_id), page)

    @tool
    def switch_supplier(self, item_id: int, supplier_id: int) -> dict:
        """Move an item to a different supplier; returns the change record.

        Args:
            item_id: The item to move.
            supplier_id: Its new supplier.
        """
        item = self.require_row("items", item_id, "use list_items")
        if not self.query("SELECT 1 FROM quotes WHERE item_id = ? AND supplier_id = ?", (item_id, supplier_id)):
            raise ToolError(f"supplier {supplier_id} has not quoted for item {item_id}")
        if item["supplier_id"] == supplier_id:
            raise ToolError(f"item {item_id} is already with supplier {supplier_id}")
        change = self.db.execute("INSERT INTO supplier_changes (item_id, old_supplier_id, new_supplier_id) VALUES (?,?,?)",
                                 (item_id, item["supplier_id"], supplier_id))
        self.db.execute("UPDATE items SET supplier_id = ? WHERE id = ?", (supplier_id, item_id))
        return {"change_id": change.lastrowid, "item_id": item_id, "supplier_id": supplier_id}

    def criteria(self, final_response: str) -> list[Criterion]:
        failed = self.facts["failed"]
        to_failed = self.query("SELECT count(*) AS n FROM supplier_changes WHERE new_supplier_id = ?", (failed,))[0]["n"]
        name = self.params["report_name"]
        prices = ["old_unit_price", "new_unit_price"]
        sheet = self.file_matches(name, key="item_code", criterion="review_sheet_written",
                                  columns=["old_supplier", "new_supplier", *prices, "weekly_saving"],
                                  tolerance={**dict.fromkeys(prices, 0.00051), "weekly_saving": 0.015})
        moves = self.reference.query("SELECT count(*) AS n FROM supplier_changes")[0]["n"]
        total = sum(float(row["weekly_saving"]) for row in parse_rows(self.reference.read(name), "csv"))
        return [
            self.tables_match("supplier_changes", key="item_id", criterion="moved_exactly_the_worthwhile_items",
                              weight=2.0),
            self.tables_match("items", key="id", columns="supplier_id", criterion="moved_to_cheapest_valid_supplier"),
            Criterion("excluded_supplier_avoided", to_failed == 0, 1.0, "no move to the supplier that failed its audit"),
            sheet,
            self.answer_states(round(total, 2), tolerance=0.01 * (moves + 1), criterion="total_saving_reported"),
        ]
