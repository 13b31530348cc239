import datetime as dt
from typing import Literal

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, paginate, tool

PRIORITIES = ("emergency", "urgent", "routine")


class MaintenanceTriageEnv(WorkspaceEnvironment):
    @tool
    def list_units(self, page: int = 1) -> dict:
        """List rental units with their building name and district, 20 per page."""
        return self.query_page("SELECT u.id, u.unit_no, u.property_id, p.name AS building, p.district FROM units u "
                               "JOIN properties p ON p.id = u.property_id ORDER BY u.id", page=page)

    @tool
    def list_requests(self, page: int = 1, status: Literal["new", "triaged", "closed"] = "new") -> dict:
        """List maintenance requests (unit, when reported, trade, tenant's description), 20 per page.

        Args:
            status: "new", "triaged" or "closed".
        """
        return self.query_page("SELECT id, unit_id, reported_at, trade, description, status FROM requests WHERE status = ? ORDER BY id",
                               (status,), page)

    @tool
    def list_vendors(self, trade: str, page: int = 1) -> dict:
        """List contractors of one trade: districts covered, hourly rate, rating, open jobs and maximum open jobs; 20 per page.

        Args:
            trade: One of plumbing, electrical, heating, appliance, locksmith.
        """
        rows = self.query("SELECT id, name, trade, districts, hourly_rate, rating, open_jobs, max_open_jobs FROM vendors WHERE trade = ? ORDER BY id",
                          (trade.strip(),))
        if not rows:
            raise ToolError(f"no contractors for trade {trade!r}; trades are plumbing, electrical, heating, appliance, locksmith")
        return paginate(rows, page)

    @tool
    def triage_request(self, request_id: int, priority: str, due_by: str) -> dict:
        """Set a new request's priority and target completion time.

        Args:
            request_id: The request's id.
            priority: "emergency", "urgent" or "routine".
            due_by: Target completion, "YYYY-MM-DD HH:MM".
        """
        if priority not in PRIORITIES:
            raise ToolError(f"priority must be one of {', '.join(PRIORITIES)}")
        try:
            due = dt.datetime.strptime(due_by.strip(), "%Y-%m-%d %H:%M").strftime("%Y-%m-%d %H:%M")
        except ValueError:
            raise ToolError(f"due_by must look like 2026-12-01 14:30, got {due_by!r}") from None
        if not self.query("SELECT id FROM requests WHERE id = ? AND status = 'new'", (request_id,)):
            raise ToolError(f"request {request_id} does not exist or is not new")
        self.db.execute("INSERT INTO triage VALUES (?,?,?)", (request_id, priority, due))
        self.db.execute("UPDATE requests SET status = 'triaged' WHERE id = ?", (request_id,))
        return {"request_id": request_id, "priority": priority, "due_by": due}

    @tool
    def create_work_order(self, request_id: int, vendor_id: int) -> dict:
        """Raise a work order for a triaged request with a contractor; returns the work order id.

        Args:
            request_id: A request that has been triaged.
            vendor_id: The contractor's id.
        """
        if not self.query("SELECT request_id FROM triage WHERE request_id = ?", (request_id,)):
            raise ToolError(f"request {request_id} has not been triaged yet; call triage_request first")
        if self.query("SELECT id FROM work_orders WHERE request_id = ?", (request_id,)):
            raise ToolError(f"request {request_id} already has a work order")
        vendor = self.require_row("vendors", vendor_id, "use list_vendors", what="contractor")
        cur = self.db.execute("INSERT INTO work_orders (request_id, vendor_id) VALUES (?,?)", (request_id, vendor_id))
        self.db.execute("UPDATE vendors SET open_jobs = open_jobs + 1 WHERE id = ?", (vendor_id,))
        return {"work_order_id": cur.lastrowid, "request_id": request_id, "vendor": vendor["name"]}

    @tool
    def page_vendor(self, work_order_id: int) -> dict:
        """Page the contractor of a work order to attend immediately.

        Args:
            work_order_id: The id returned by create_work_order.
        """
        self.require_row("work_orders", work_order_id)
        self.db.execute("UPDATE work_orders SET paged = 1 WHERE id = ?", (work_order_id,))
        return {"work_order_id": work_order_id, "paged": True}

    def criteria(self, final_response: str) -> list[Criterion]:
        suspended = self.facts["suspended"]
        to_suspended = self.query("SELECT count(*) AS n FROM work_orders WHERE vendor_id = ?", (suspended,))[0]["n"]
        emergencies = self.reference.query("SELECT count(*) AS n FROM triage WHERE priority = 'emergency'")[0]["n"]
        counts = self.reference.query("SELECT v.name, count(*) AS n FROM work_orders w JOIN vendors v "
                                      "ON v.id = w.vendor_id GROUP BY v.name")
        top = [c["name"] for c in counts if c["n"] == max(c["n"] for c in counts)]
        said = self.answer_states(emergencies).passed and any(name.casefold() in final_response.casefold() for name in top)
        return [
            self.tables_match("triage", key="request_id", columns="priority", weight=2.0,
                              criterion="priorities_from_guide_and_weather"),
            self.tables_match("triage", key="request_id", columns="due_by", criterion="due_times_computed"),
            self.tables_match("work_orders", key="request_id", columns="vendor_id", weight=2.0,
                              criterion="contractors_chosen_by_rules"),
            Criterion("suspended_contractor_avoided", to_suspended == 0 and self.query("SELECT id FROM work_orders LIMIT 1"),
                      1.0, f"{to_suspended} work orders for the suspended contractor"),
            self.tables_match("work_orders", key="request_id", columns="paged", criterion="emergencies_paged"),
            self.file_matches(self.params["report_name"], key="request_id", columns=["priority", "vendor", "due_by"]),
            Criterion("emergencies_and_top_contractor_reported", said, 1.0,
                      f"expected {emergencies} emergencies; top: {top}"),
        ]
