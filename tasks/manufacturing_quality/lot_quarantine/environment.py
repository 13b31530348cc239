"""Tools and verifier for manufacturing_quality/lot_quarantine."""
import csv
import io
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

CAUSE_TYPES = ("supplier_notice", "defect_rate")


class LotQuarantineEnv(WorkspaceEnvironment):
    @tool
    def list_suppliers(self, page: int = 1) -> dict:
        """List approved suppliers, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, name, country FROM suppliers ORDER BY id", page=page)

    @tool
    def list_material_lots(self, supplier_id: int, page: int = 1) -> dict:
        """List the incoming material lots received from one supplier (lot number, part, date received), 20 per page.

        Args:
            supplier_id: The supplier's id.
            page: 1-based page number.
        """
        self.require_row("suppliers", supplier_id, "use list_suppliers")
        return self.query_page("SELECT id, lot_no, supplier_id, part, received, quantity FROM lots WHERE supplier_id = ? ORDER BY received, id",
                               (supplier_id,), page)

    @tool
    def list_lot_usage(self, lot_id: int, page: int = 1) -> dict:
        """List the finished batches that consumed a material lot, with each batch's status, 20 per page.

        Args:
            lot_id: The material lot's id.
            page: 1-based page number.
        """
        self.require_row("lots", lot_id, what="material lot")
        return self.query_page("SELECT b.id AS batch_id, b.batch_no, b.product, b.status FROM batch_lots u JOIN batches b "
                               "ON b.id = u.batch_id WHERE u.lot_id = ? ORDER BY b.id", (lot_id,), page)

    @tool
    def list_batches(self, page: int = 1) -> dict:
        """List finished batches (batch number, product, production date, line, status), 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, batch_no, product, produced, line, status FROM batches ORDER BY id", page=page)

    @tool
    def list_inspections(self, page: int = 1) -> dict:
        """List final-inspection records (batch, date, units inspected, defect code, defects found), 50 per page.

        Args:
            page: 1-based page number.
        """
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

    # --- verifier --------------------------------------------------------------------------------
    def criteria(self, final_response: str) -> list[Criterion]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        expected = {k: tuple(v) for k, v in facts["expected"].items()}
        supplier = facts["supplier"]
        holds = self.query("SELECT id, cause_type, reference FROM holds")
        acted = {r["batch_no"]: r for r in self.query(
            "SELECT b.batch_no, a.action, h.cause_type, h.reference FROM hold_actions a JOIN batches b ON b.id = a.batch_id "
            "JOIN holds h ON h.id = a.hold_id")}
        holds_ok = sorted((h["cause_type"], h["reference"] if h["cause_type"] == "supplier_notice" else "") for h in holds) == \
            [("defect_rate", ""), ("supplier_notice", supplier)]
        right_set = set(acted) == set(expected)
        actions_ok = right_set and all(acted[b]["action"] == a for b, (_, a) in expected.items())
        causes_ok = right_set and all(
            (acted[b]["cause_type"], acted[b]["reference"] if acted[b]["cause_type"] == "supplier_notice" else "defect rate")
            == (("supplier_notice", c) if c != "defect rate" else ("defect_rate", "defect rate")) for b, (c, _) in expected.items())

        report_name = self.params["report_name"]
        report_ok, detail = False, f"{report_name} not found"
        path = self.workspace / report_name
        if path.is_file():
            try:
                rows = list(csv.DictReader(io.StringIO(path.read_text().strip())))
                got = {r["batch_no"].strip(): (r["cause"].strip(), " ".join(r["action"].split()).lower()) for r in rows}
                report_ok = got == expected and len(rows) == len(expected)
                detail = "matches the expected containment" if report_ok else f"{len(rows)} rows; differ from the {len(expected)} expected"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                detail = f"cannot parse the report: {exc}"
        quarantined = sum(1 for _, a in expected.values() if a == "quarantined")
        said = [int(x) for x in re.findall(r"(?<![\d.-])\d+(?![\d.])", final_response)]
        return [
            Criterion("one_hold_per_cause", holds_ok, 1.0, f"holds opened: {[(h['cause_type'], h['reference']) for h in holds]}"),
            Criterion("exactly_the_affected_batches_contained", right_set, 2.0, f"{len(acted)} contained, {len(expected)} expected (no {self.params['excluded_product']} batches)"),
            Criterion("shipped_batches_notified_not_quarantined", actions_ok, 1.0, "quarantine on site, notify when shipped"),
            Criterion("batches_under_the_right_hold", causes_ok, 1.0, "supplier notice wins over defect rate"),
            Criterion("report_written", report_ok, 1.0, detail),
            Criterion("quarantine_count_reported", quarantined in said, 1.0, f"expected {quarantined} quarantined"),
        ]
