import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class VacancyTurnoverEnv(WorkspaceEnvironment):
    @tool
    def list_leases(self, page: int = 1, move_out_month: str = "") -> dict:
        """List leases with tenant, dates, deposit and pet addendum flag, 20 per page.

        Args:
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

    def criteria(self, final_response: str) -> list[Criterion]:
        settlements = "deposit_settlements s LEFT JOIN work_orders o ON o.id = s.work_order_id"
        total = self.reference.query("SELECT sum(refund) AS t FROM deposit_settlements")[0]["t"] or 0.0
        return [
            self.tables_match("work_orders", key="unit_id", criterion="one_work_order_per_vacated_unit"),
            self.tables_match("work_orders", key="unit_id", columns="estimated_cost", tolerance=0.01,
                              criterion="work_order_costs_cover_all_findings"),
            self.tables_match(settlements, key="s.lease_id", columns="o.unit_id",
                              criterion="settlements_linked_to_unit_work_orders"),
            self.tables_match("deposit_settlements", key="lease_id", columns="deduction", tolerance=0.01, weight=2.0,
                              criterion="deductions_follow_clauses"),
            self.file_matches(self.params["report_name"], key="lease_id", columns=["unit", "deduction", "refund"],
                              criterion="settlement_register_written"),
            self.answer_states(round(total, 2), criterion="total_refund_reported"),
        ]
