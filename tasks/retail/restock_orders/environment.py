import json

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class RestockEnv(WorkspaceEnvironment):
    @tool
    def list_products(self, page: int = 1, category: str = "") -> dict:
        """List catalogue products with stock levels, 20 per page.

        Args:
            category: Only products of this category when non-empty.
        """
        sql = ("SELECT id, sku, name, category, on_hand, reorder_point, target_stock, unit_cost, "
               "preferred_supplier_id, backup_supplier_id FROM products")
        return self.query_page(sql + (" WHERE category = ?" if category else "") + " ORDER BY id", (category,) if category else (), page)

    @tool
    def get_supplier(self, supplier_id: int) -> dict:
        """Get one supplier's details, including its case pack size.

        Args:
            supplier_id: The supplier's numeric id.
        """
        return self.require_row("suppliers", supplier_id)

    @tool
    def list_sales(self, product_id: int, page: int = 1) -> dict:
        """List recorded sales of one product, 20 per page.

        Args:
            product_id: The product's numeric id.
        """
        return self.query_page("SELECT day, quantity FROM sales WHERE product_id = ? ORDER BY id", (product_id,), page)

    @tool
    def create_purchase_order(self, product_id: int, supplier_id: int, quantity: int) -> dict:
        """Place a purchase order; returns the new order with its id.

        Args:
            product_id: The product to order.
            supplier_id: The supplier that will ship it.
            quantity: Units to order (a positive integer).
        """
        product = self.require_row("products", product_id, "use list_products")
        self.require_row("suppliers", supplier_id)
        if quantity <= 0:
            raise ToolError(f"quantity must be positive, got {quantity}")
        cur = self.db.execute(
            "INSERT INTO purchase_orders (product_id, supplier_id, quantity, unit_cost, status) VALUES (?,?,?,?, 'open')",
            (product_id, supplier_id, quantity, product["unit_cost"]),
        )
        return {"order_id": cur.lastrowid, "product_id": product_id, "supplier_id": supplier_id, "quantity": quantity,
                "status": "open"}

    @tool
    def cancel_purchase_order(self, order_id: int) -> dict:
        """Cancel an open purchase order.

        Args:
            order_id: The id returned when the order was created.
        """
        if not self.query("SELECT id FROM purchase_orders WHERE id = ? AND status = 'open'", (order_id,)):
            raise ToolError(f"no open purchase order with id {order_id}")
        self.db.execute("UPDATE purchase_orders SET status = 'cancelled' WHERE id = ?", (order_id,))
        return {"order_id": order_id, "status": "cancelled"}

    def criteria(self, final_response: str) -> list[Criterion]:
        orders = "purchase_orders o JOIN products p ON p.id = o.product_id"
        facts = self.facts
        banned = self.query(
            f"SELECT count(*) AS n FROM {orders} WHERE o.status = 'open' AND (p.category = ? OR o.supplier_id = ? "
            f"OR p.sku IN (SELECT value FROM json_each(?)))",
            (self.params["excluded_category"], facts["suspended_supplier"], json.dumps(facts["discontinued"])))[0]["n"]
        total = self.reference.query("SELECT sum(round(quantity * unit_cost, 2)) AS t FROM purchase_orders "
                                     "WHERE status = 'open'")[0]["t"]
        return [
            self.tables_match(orders, key="p.sku", where="o.status = 'open'", weight=2.0,
                              criterion="orders_for_exactly_the_low_stock_products"),
            Criterion("notices_respected", banned == 0, 1.0,
                      f"{banned} orders for delisted or excluded products or with the suspended supplier"),
            self.tables_match(orders, key="p.sku", columns="o.supplier_id", where="o.status = 'open'",
                              criterion="correct_suppliers"),
            self.tables_match(orders, key="p.sku", columns="o.quantity", where="o.status = 'open'",
                              criterion="quantities_rounded_to_case_packs"),
            self.file_matches(self.params["report_name"], as_="csv", key="sku", criterion="report_written"),
            self.answer_states(round(total, 2), criterion="total_cost_reported"),
        ]
