"""Tools and verifier for real_estate/maintenance_triage."""
import csv
import re
import datetime as dt
import io
import json
from typing import Literal

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, paginate, tool

PRIORITIES = ("emergency", "urgent", "routine")


class MaintenanceTriageEnv(WorkspaceEnvironment):
    @tool
    def list_units(self, page: int = 1) -> dict:
        """List rental units with their building name and district, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT u.id, u.unit_no, u.property_id, p.name AS building, p.district FROM units u "
                               "JOIN properties p ON p.id = u.property_id ORDER BY u.id", page=page)

    @tool
    def list_requests(self, page: int = 1, status: Literal["new", "triaged", "closed"] = "new") -> dict:
        """List maintenance requests (unit, when reported, trade, tenant's description), 20 per page.

        Args:
            page: 1-based page number.
            status: "new", "triaged" or "closed".
        """
        return self.query_page("SELECT id, unit_id, reported_at, trade, description, status FROM requests WHERE status = ? ORDER BY id",
                               (status,), page)

    @tool
    def list_vendors(self, trade: str, page: int = 1) -> dict:
        """List contractors of one trade: districts covered, hourly rate, rating, open jobs and maximum open jobs; 20 per page.

        Args:
            trade: One of plumbing, electrical, heating, appliance, locksmith.
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def criteria(self, final_response: str) -> list[Criterion]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        expected = facts["expected"]
        tri = {str(r["request_id"]): r for r in self.query("SELECT * FROM triage")}
        orders = {str(r["request_id"]): r for r in self.query(
            "SELECT w.request_id, w.vendor_id, w.paged, v.name FROM work_orders w JOIN vendors v ON v.id = w.vendor_id")}
        prio_ok = set(tri) == set(expected) and all(tri[k]["priority"] == v[0] for k, v in expected.items())
        due_ok = set(tri) == set(expected) and all(tri[k]["due_by"] == v[2] for k, v in expected.items())
        vendor_ok = set(orders) == set(expected) and all(orders[k]["name"] == v[1] for k, v in expected.items())
        suspended_ok = bool(orders) and not any(o["vendor_id"] == facts["suspended"] for o in orders.values())
        paged_ok = set(orders) == set(expected) and all(bool(orders[k]["paged"]) == (v[0] == "emergency") for k, v in expected.items())

        report_name = self.params["report_name"]
        report_ok, detail = False, f"{report_name} not found"
        path = self.workspace / report_name
        if path.is_file():
            try:
                got = {r["request_id"].strip(): [r["priority"].strip().lower(), r["vendor"].strip(), " ".join(r["due_by"].split())[:16]]
                       for r in csv.DictReader(io.StringIO(path.read_text().strip()))}
                report_ok = got == expected
                detail = "matches the expected triage" if report_ok else f"{len(got)} rows; differ from the {len(expected)} expected"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                detail = f"cannot parse the report: {exc}"
        emergencies = sum(1 for v in expected.values() if v[0] == "emergency")

        said = [int(x) for x in re.findall(r"(?<![\d.])\d+(?![\d.])", final_response)]
        top_ok = any(name in final_response for name in facts["top"])
        return [
            Criterion("priorities_from_guide_and_weather", prio_ok, 2.0, "phrases in the guide; no-heat depends on the night's low"),
            Criterion("due_times_computed", due_ok, 1.0, f"report time plus 4 h / {self.params['urgent_hours']} h / {self.params['routine_days']} days"),
            Criterion("contractors_chosen_by_rules", vendor_ok, 2.0, "trade, district, capacity in priority order, rate, rating, warranty"),
            Criterion("suspended_contractor_avoided", suspended_ok, 1.0, "no work for the suspended contractor"),
            Criterion("emergencies_paged", paged_ok, 1.0, "page exactly the emergency work orders"),
            Criterion("report_written", report_ok, 1.0, detail),
            Criterion("emergencies_and_top_contractor_reported", emergencies in said and top_ok, 1.0, f"expected {emergencies} emergencies; top: {facts['top']}"),
        ]
