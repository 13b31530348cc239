"""Tools and verifier for real_estate/vacancy_turnover."""
import csv
import io
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class VacancyTurnoverEnv(WorkspaceEnvironment):
    @tool
    def list_leases(self, page: int = 1, move_out_month: str = "") -> dict:
        """List leases with tenant, dates, deposit and pet addendum flag, 20 per page.

        Args:
            page: 1-based page number.
            move_out_month: Only leases whose move-out date falls in this month, as "YYYY-MM"; empty for all.
        """
        if move_out_month and not re.fullmatch(r"\d{4}-\d{2}", move_out_month):
            raise ToolError(f"move_out_month must look like 2026-11, got {move_out_month!r}")
        sql = "SELECT id, unit_id, tenant, start_date, move_out_date, deposit, pet_addendum FROM leases"
        args: tuple = ()
        if move_out_month:
            sql += " WHERE move_out_date LIKE ?"
            args = (move_out_month + "-%",)
        return self.query_page(sql + " ORDER BY id", args, page)

    @tool
    def get_unit(self, unit_id: int) -> dict:
        """Get one unit: its code, building code and name, bedrooms and floor area.

        Args:
            unit_id: The unit's numeric id.
        """
        return self.require_row("units", unit_id)

    @tool
    def list_inspection_items(self, lease_id: int, page: int = 1) -> dict:
        """List the move-out inspection findings recorded for one lease, 20 per page.

        Args:
            lease_id: The lease's numeric id.
            page: 1-based page number.
        """
        self.require_row("leases", lease_id, "use list_leases")
        return self.query_page("SELECT id, area, finding, category, repair_cost FROM inspection_items WHERE lease_id = ? "
                               "ORDER BY id", (lease_id,), page)

    @tool
    def create_work_order(self, unit_id: int, estimated_cost: float) -> dict:
        """Open a make-ready work order for a vacated unit; returns the new work order's id.

        Args:
            unit_id: The unit to prepare for the next tenant.
            estimated_cost: Estimated cost of all the repairs, in dollars.
        """
        self.require_row("units", unit_id)
        if estimated_cost < 0:
            raise ToolError("estimated_cost cannot be negative")
        cur = self.db.execute("INSERT INTO work_orders (unit_id, estimated_cost, status) VALUES (?,?, 'open')",
                              (unit_id, round(float(estimated_cost), 2)))
        return {"work_order_id": cur.lastrowid, "unit_id": unit_id, "status": "open"}

    @tool
    def settle_deposit(self, lease_id: int, deduction: float, work_order_id: int) -> dict:
        """Record a deposit settlement: what is kept, what is refunded, and the related work order.

        Args:
            lease_id: The lease whose deposit is being settled.
            deduction: Amount kept from the deposit, in dollars (0 up to the deposit).
            work_order_id: The make-ready work order opened for the lease's unit.
        """
        lease = self.require_row("leases", lease_id, "use list_leases")
        self.require_row("work_orders", work_order_id, "create the work order first")
        if self.query("SELECT id FROM deposit_settlements WHERE lease_id = ?", (lease_id,)):
            raise ToolError(f"lease {lease_id} already has a deposit settlement")
        deposit = lease["deposit"]
        if deduction < 0 or deduction > deposit + 1e-9:
            raise ToolError(f"deduction must be between 0 and the deposit ({deposit:.2f})")
        refund = round(deposit - deduction, 2)
        cur = self.db.execute("INSERT INTO deposit_settlements (lease_id, deduction, refund, work_order_id) VALUES (?,?,?,?)",
                              (lease_id, round(float(deduction), 2), refund, work_order_id))
        return {"settlement_id": cur.lastrowid, "lease_id": lease_id, "refund": refund}

    # --- verifier --------------------------------------------------------------------------------
    def _expected(self) -> dict[int, dict]:
        rules = json.loads(self.query("SELECT value FROM _verifier_facts WHERE key = 'rules'")[0]["value"])
        out = {}
        for lease in self.query("SELECT l.*, u.building FROM leases l JOIN units u ON u.id = l.unit_id "
                                "WHERE l.move_out_date LIKE '2026-11-%'"):
            found = self.query("SELECT area, category, repair_cost FROM inspection_items WHERE lease_id = ?", (lease["id"],))
            charge = 0.0
            for item in found:
                if item["category"] == "damage":
                    share = 1.0 if item["area"] != "floor" or lease["pet_addendum"] else rules["floor_share"] / 100
                    charge += item["repair_cost"] * share
                elif item["category"] == "missing" and lease["building"] != rules["waived_building"]:
                    charge += item["repair_cost"]
            if lease["start_date"] >= rules["clause_date"] and any(i["category"] == "cleaning" for i in found):
                charge += rules["cleaning_fee"]
            deduction = round(min(charge, lease["deposit"] * self.params["max_keep_pct"] / 100), 2)
            out[lease["id"]] = {"unit_id": lease["unit_id"], "deduction": deduction,
                                "refund": round(lease["deposit"] - deduction, 2),
                                "work_cost": round(sum(i["repair_cost"] for i in found), 2)}
        return out

    def criteria(self, final_response: str) -> list[Criterion]:
        expected = self._expected()
        orders = self.query("SELECT id, unit_id, estimated_cost FROM work_orders")
        by_unit: dict[int, list] = {}
        for o in orders:
            by_unit.setdefault(o["unit_id"], []).append(o)
        want_units = {e["unit_id"] for e in expected.values()}
        orders_ok = set(by_unit) == want_units and all(len(v) == 1 for v in by_unit.values())
        costs_ok = orders_ok and all(abs(by_unit[e["unit_id"]][0]["estimated_cost"] - e["work_cost"]) < 0.01
                                     for e in expected.values())
        settled = {s["lease_id"]: s for s in self.query("SELECT * FROM deposit_settlements")}
        order_unit = {o["id"]: o["unit_id"] for o in orders}
        linked = set(settled) == set(expected) and all(order_unit.get(settled[l]["work_order_id"]) == e["unit_id"]
                                                        for l, e in expected.items())
        wrong = [l for l, e in expected.items() if l not in settled or abs(settled[l]["deduction"] - e["deduction"]) >= 0.01]
        extra = set(settled) - set(expected)
        codes = {u["id"]: u["code"] for u in self.query("SELECT id, code FROM units")}
        report_name = self.params["report_name"]
        report_ok, detail = False, f"{report_name} not found"
        path = self.workspace / report_name
        if path.is_file():
            try:
                rows = list(csv.DictReader(io.StringIO(path.read_text().strip())))
                got = {int(r["lease_id"]): (r["unit"].strip(), round(float(r["deduction"]), 2), round(float(r["refund"]), 2)) for r in rows}
                want = {l: (codes[e["unit_id"]], e["deduction"], e["refund"]) for l, e in expected.items()}
                report_ok = got == want and len(rows) == len(want)
                detail = "matches the expected settlements" if report_ok else f"{len(rows)} rows; {len(want)} expected"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                detail = f"cannot parse the register: {exc}"
        total = round(sum(e["refund"] for e in expected.values()), 2)
        numbers = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*(?:\.\d+)?", final_response)]
        total_ok = any(abs(n - total) < 0.01 for n in numbers)
        return [
            Criterion("one_work_order_per_vacated_unit", orders_ok, 1.0, f"{len(by_unit)} units with orders, {len(want_units)} expected"),
            Criterion("work_order_costs_cover_all_findings", costs_ok, 1.0, "estimated cost = sum of every finding's repair cost"),
            Criterion("settlements_linked_to_unit_work_orders", linked, 1.0, "each November lease settled with its unit's order"),
            Criterion("deductions_follow_clauses", not wrong and not extra and bool(settled), 2.0,
                      f"{len(wrong)} deductions wrong (at most {self.params['max_keep_pct']}% kept), {len(extra)} leases settled that are out of scope"),
            Criterion("settlement_register_written", report_ok, 1.0, detail),
            Criterion("total_refund_reported", total_ok, 1.0, f"expected total refund {total:.2f}"),
        ]
