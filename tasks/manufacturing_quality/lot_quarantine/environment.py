from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

CAUSE_TYPES = ("supplier_notice", "defect_rate")


class LotQuarantineEnv(WorkspaceEnvironment):
    @tool
    def list_suppliers(self, page: int = 1) -> dict:
        """List approved suppliers, 20 per page."""
        return self.query_page("SELECT id, name, country FROM suppliers ORDER BY id", page=page)

    @tool
    def list_material_lots(self, supplier_id: int, page: int = 1) -> dict:
        """List the incoming material lots received from one supplier (lot number, part, date received), 20 per page.

        Args:
            supplier_id: The supplier's id.
        """
        self.require_row("suppliers", supplier_id, "use list_suppliers")
        return self.query_page("SELECT id, lot_no, supplier_id, part, received, quantity FROM lots WHERE supplier_id = ? ORDER BY received, id",
                               (supplier_id,), page)

    @tool
    def list_lot_usage(self, lot_id: int, page: int = 1) -> dict:
        """List the finished batches that consumed a material lot, with each batch's status, 20 per page.

        Args:
            lot_id: The material lot's id.
        """
        self.require_row("lots", lot_id, what="material lot")
        return self.query_page("SELECT b.id AS batch_id, b.batch_no, b.product, b.status FROM batch_lots u JOIN batches b "
                               "ON b.id = u.batch_id WHERE u.lot_id = ? ORDER BY b.id", (lot_id,), page)

    @tool
    def list_batches(self, page: int = 1) -> dict:
        """List finished batches (batch number, product, production date, line, status), 20 per page."""
        return self.query_page("SELECT id, batch_no, product, produced, line, status FROM batches ORDER BY id", page=page)

    @tool
    def list_inspections(self, page: int = 1) -> dict:
        """List final-inspection records (batch, date, units inspected, defect code, defects found), 50 per page."""
        return self.query_page("SELECT id, batch_id, inspected_on, units, defect_code, defects FROM inspections ORDER BY id",
                               page=page, page_size=50)

    @tool
    def open_hold(self, cause_type: str, reference: str) -> dict:
        """Open a quality hold for one cause; returns its id.

        Args:
            cause_type: "supplier_notice" or "defect_rate".
            reference: The supplier's name for a supplier notice, or a short description for a defect-rate hold.
        """
        if cause_type not in CAUSE_TYPES:
            raise ToolError(f"cause_type must be one of {', '.join(CAUSE_TYPES)}, got {cause_type!r}")
        cur = self.db.execute("INSERT INTO holds (cause_type, reference, opened) VALUES (?,?, '2026-11-30')", (cause_type, reference.strip()))
        return {"hold_id": cur.lastrowid, "cause_type": cause_type, "reference": reference.strip()}

    def _hold_action(self, hold_id: int, batch_id: int, action: str, shipped: bool) -> dict:
        self.require_row("holds", hold_id, "open one with open_hold")
        batch = self.require_row("batches", batch_id, "use list_batches", what="batch")
        if (batch["status"] == "shipped") != shipped:
            raise ToolError(f"batch {batch_id} is {batch['status']}: " + (
                "shipped batches get a customer notification instead" if batch["status"] == "shipped" else "only shipped batches need a customer notification"))
        if self.query("SELECT id FROM hold_actions WHERE batch_id = ?", (batch_id,)):
            raise ToolError(f"batch {batch_id} is already under a hold")
        cur = self.db.execute("INSERT INTO hold_actions (hold_id, batch_id, action) VALUES (?,?,?)", (hold_id, batch_id, action))
        if action == "quarantined":
            self.db.execute("UPDATE batches SET status = 'quarantined' WHERE id = ?", (batch_id,))
        return {"action_id": cur.lastrowid, "hold_id": hold_id, "batch_id": batch_id, "action": action}

    @tool
    def quarantine_batch(self, hold_id: int, batch_id: int) -> dict:
        """Quarantine a batch that is still on site, under a hold.

        Args:
            hold_id: The hold's id from open_hold.
            batch_id: The batch's id.
        """
        return self._hold_action(hold_id, batch_id, "quarantined", shipped=False)

    @tool
    def notify_customer(self, hold_id: int, batch_id: int) -> dict:
        """Raise a customer notification for a batch that has already shipped, under a hold.

        Args:
            hold_id: The hold's id from open_hold.
            batch_id: The shipped batch's id.
        """
        return self._hold_action(hold_id, batch_id, "customer notified", shipped=True)

    def criteria(self, final_response: str) -> list[Criterion]:
        # A defect-rate hold's reference is free text; a supplier hold's is the supplier's name.
        supplier = "CASE WHEN h.cause_type = 'supplier_notice' THEN h.reference ELSE '' END AS supplier"
        holds = f"(SELECT h.cause_type, {supplier} FROM holds h)"
        contained = f"(SELECT b.batch_no, a.action, h.cause_type, {supplier} FROM hold_actions a " \
                    "JOIN batches b ON b.id = a.batch_id JOIN holds h ON h.id = a.hold_id)"
        quarantined = self.reference.query("SELECT count(*) AS n FROM hold_actions WHERE action = 'quarantined'")
        return [
            self.tables_match(holds, key=["cause_type", "supplier"], criterion="one_hold_per_cause"),
            self.tables_match(contained, key="batch_no", weight=2.0,
                              criterion="exactly_the_affected_batches_contained"),
            self.tables_match(contained, key="batch_no", columns="action",
                              criterion="shipped_batches_notified_not_quarantined"),
            self.tables_match(contained, key="batch_no", columns=["cause_type", "supplier"],
                              criterion="batches_under_the_right_hold"),
            self.file_matches(self.params["report_name"], key="batch_no", criterion="report_written"),
            self.answer_states(quarantined[0]["n"], criterion="quarantine_count_reported"),
        ]
