"""Tools and verifier for restaurant_supply/supplier_price_review."""
import csv
import io
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class SupplierPriceReviewEnv(WorkspaceEnvironment):
    @tool
    def list_items(self, page: int = 1) -> dict:
        """Items we buy: unit of measure, weekly usage in that unit and current supplier; 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, code, name, unit, weekly_usage, supplier_id FROM items ORDER BY id", page=page)

    @tool
    def list_suppliers(self, page: int = 1) -> dict:
        """Suppliers and their delivery days; 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, name, delivery_days FROM suppliers ORDER BY id", page=page)

    @tool
    def list_quotes(self, page: int = 1, item_id: int = 0) -> dict:
        """Supplier quotes: pack description, price per pack and how long the quote is valid; 20 per page.

        Args:
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def moves(self) -> dict:
        f = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        units = {r["quote_id"]: r["units"] for r in self.query("SELECT * FROM _pack_units")}
        originals = {c["item_id"]: c["old_supplier_id"] for c in self.query("SELECT * FROM supplier_changes ORDER BY id DESC")}
        names = {s["id"]: s["name"] for s in self.query("SELECT * FROM suppliers")}
        per_item = {}
        for q in self.query("SELECT * FROM quotes"):
            per_item.setdefault(q["item_id"], []).append((q["pack_price"] / units[q["id"]], q["supplier_id"], q["valid_until"]))
        result = {}
        for item in self.query("SELECT * FROM items"):
            current = originals.get(item["id"], item["supplier_id"])
            offers = per_item[item["id"]]
            old_price = next(p for p, s, _ in offers if s == current)
            usable = [(p, s) for p, s, until in offers if until >= f["review"] and s != f["failed"]]
            best_price, best = min(usable)
            if best != current and best_price <= old_price * (1 - self.params["min_saving"] / 100):
                result[item["id"]] = {"code": item["code"], "old": names[current], "new_id": best, "new": names[best],
                                      "old_price": old_price, "new_price": best_price,
                                      "saving": round(item["weekly_usage"] * (old_price - best_price), 2)}
        return result

    def criteria(self, final_response: str) -> list[Criterion]:
        want = self.moves()
        made = self.query("SELECT * FROM supplier_changes")
        final = {i["id"]: i["supplier_id"] for i in self.query("SELECT id, supplier_id FROM items")}
        moved = {c["item_id"] for c in made}
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        review_ok, info = False, f"{self.params['report_name']} not found"
        path = self.workspace / self.params["report_name"]
        if path.is_file():
            try:
                sheet = {r["item_code"].strip(): r for r in csv.DictReader(io.StringIO(path.read_text().strip()))}
                review_ok = set(sheet) == {w["code"] for w in want.values()} and all(
                    sheet[w["code"]]["old_supplier"].strip() == w["old"] and sheet[w["code"]]["new_supplier"].strip() == w["new"]
                    and abs(float(sheet[w["code"]]["old_unit_price"]) - w["old_price"]) < 0.00051
                    and abs(float(sheet[w["code"]]["new_unit_price"]) - w["new_price"]) < 0.00051
                    and abs(float(sheet[w["code"]]["weekly_saving"]) - w["saving"]) < 0.015 for w in want.values())
                info = f"{len(sheet)} rows, {len(want)} expected"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                info = f"could not read it: {exc}"
        total = round(sum(w["saving"] for w in want.values()), 2)
        said = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.\d\d\b", final_response)]
        return [
            Criterion("moved_exactly_the_worthwhile_items", moved == set(want) and len(made) == len(want), 2.0,
                      f"{len(moved)} moved, {len(want)} expected"),
            Criterion("moved_to_cheapest_valid_supplier", all(final[i] == w["new_id"] for i, w in want.items()), 1.0,
                      "per-unit comparison over valid quotes"),
            Criterion("excluded_supplier_avoided", facts["failed"] not in {c["new_supplier_id"] for c in made}, 1.0,
                      "no move to the supplier that failed its audit"),
            Criterion("review_sheet_written", review_ok, 1.0, info),
            Criterion("total_saving_reported", any(abs(x - total) <= 0.01 * (len(want) + 1) for x in said), 1.0, f"expected {total:.2f}"),
        ]
