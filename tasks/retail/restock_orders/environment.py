"""Tools and verifier for retail/restock_orders."""
import csv
import io
import json
import math
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class RestockEnv(WorkspaceEnvironment):
    @tool
    def list_products(self, page: int = 1, category: str = "") -> dict:
        """List catalogue products with stock levels, 20 per page.

        Args:
            page: 1-based page number.
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
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def expected_orders(self) -> dict[str, dict]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        packs = {r["id"]: r["case_pack"] for r in self.query("SELECT id, case_pack FROM suppliers")}
        names = {r["id"]: r["name"] for r in self.query("SELECT id, name FROM suppliers")}
        expected = {}
        for p in self.query("SELECT * FROM products WHERE on_hand < reorder_point"):
            if p["sku"] in facts["discontinued"] or p["category"] == self.params["excluded_category"]:
                continue
            supplier = p["backup_supplier_id"] if p["preferred_supplier_id"] == facts["suspended_supplier"] else p["preferred_supplier_id"]
            need = math.ceil(p["target_stock"] * self.params["target_pct"] / 100) - p["on_hand"]
            quantity = math.ceil(need / packs[supplier]) * packs[supplier]
            expected[p["sku"]] = {"product_id": p["id"], "supplier_id": supplier, "supplier": names[supplier],
                                  "quantity": quantity, "cost": round(quantity * p["unit_cost"], 2)}
        return expected

    def criteria(self, final_response: str) -> list[Criterion]:
        expected = self.expected_orders()
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        orders = self.query(
            "SELECT p.sku, o.supplier_id, o.quantity FROM purchase_orders o JOIN products p ON p.id = o.product_id "
            "WHERE o.status = 'open'"
        )
        placed = {}
        for o in orders:
            placed.setdefault(o["sku"], []).append(o)
        single = all(len(v) == 1 for v in placed.values())
        right_set = set(placed) == set(expected)
        suppliers_ok = all(len(placed.get(s, [])) == 1 and placed[s][0]["supplier_id"] == e["supplier_id"] for s, e in expected.items())
        quantities_ok = all(len(placed.get(s, [])) == 1 and placed[s][0]["quantity"] == e["quantity"] for s, e in expected.items())
        excluded = {r["sku"] for r in self.query("SELECT sku FROM products WHERE category = ?", (self.params["excluded_category"],))}
        no_banned = not any(sku in facts["discontinued"] or sku in excluded for sku in placed) and not any(
            o["supplier_id"] == facts["suspended_supplier"] for o in orders)

        report_name = self.params["report_name"]
        report_ok, report_detail = False, f"{report_name} not found"
        path = self.workspace / report_name
        if path.is_file():
            try:
                rows = list(csv.DictReader(io.StringIO(path.read_text())))
                got = {r["sku"].strip(): (r["supplier"].strip(), int(float(r["quantity"])), round(float(r["cost"]), 2)) for r in rows}
                want = {s: (e["supplier"], e["quantity"], e["cost"]) for s, e in expected.items()}
                report_ok = got == want and len(rows) == len(want)
                report_detail = "matches the expected orders" if report_ok else f"{len(rows)} rows; differs from the expected orders"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                report_detail = f"cannot parse the report: {exc}"

        total = round(sum(e["cost"] for e in expected.values()), 2)
        numbers = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.\d{2}", final_response)]
        total_ok = any(abs(n - total) < 0.01 for n in numbers)
        return [
            Criterion("orders_for_exactly_the_low_stock_products", right_set and single, 2.0, f"{len(placed)} products ordered, {len(expected)} expected"),
            Criterion("notices_respected", no_banned, 1.0, "no orders for delisted or excluded products or with the suspended supplier"),
            Criterion("correct_suppliers", suppliers_ok, 1.0, "preferred supplier, or the backup where the preferred is on hold"),
            Criterion("quantities_rounded_to_case_packs", quantities_ok, 1.0, "the requested share of target minus on hand, rounded up to the case pack"),
            Criterion("report_written", report_ok, 1.0, report_detail),
            Criterion("total_cost_reported", total_ok, 1.0, f"expected total {total:.2f}"),
        ]
