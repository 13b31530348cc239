import re
from typing import Literal

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool
from progagent_lib.task.criteria import MAX_FILE_CHARS, compare_json, normalise, parse_json

CREATED_ON = "2026-12-01"


class ServiceSchedulingEnv(WorkspaceEnvironment):
    @tool
    def list_vehicles(self, depot: str = "", page: int = 1) -> dict:
        """List fleet vehicles with odometer reading and status, 20 per page.

        Args:
            depot: Only vehicles based at this depot when non-empty.
        """
        sql = "SELECT id, unit_number, make, model, model_year, depot, odometer_km, status FROM vehicles"
        if depot:
            return self.query_page(sql + " WHERE depot = ? ORDER BY id", (depot,), page)
        return self.query_page(sql + " ORDER BY id", page=page)

    @tool
    def list_service_history(self, vehicle_id: int = 0, page: int = 1) -> dict:
        """List completed maintenance jobs (not in date order), 20 per page.

        Args:
            vehicle_id: Only this vehicle's history when non-zero.
        """
        where, params = ("WHERE vehicle_id = ?", (vehicle_id,)) if vehicle_id else ("", ())
        return self.query_page(f"SELECT vehicle_id, job_code, service_date, odometer_km FROM service_history {where} ORDER BY id", params, page)

    @tool
    def list_work_orders(self, status: Literal["", "open", "closed"] = "", page: int = 1) -> dict:
        """List work orders with their jobs, 20 per page.

        Args:
            status: "open" or "closed" to filter; empty for all.
        """
        result = self.query_page("SELECT id, vehicle_id, status, note, created_on FROM work_orders"
                                 + (" WHERE status = ?" if status else "") + " ORDER BY id", (status,) if status else (), page)
        for order in result["items"]:
            order["jobs"] = [r["job_code"] for r in self.query(
                "SELECT job_code FROM work_order_jobs WHERE work_order_id = ? ORDER BY job_code", (order["id"],))]
        return result

    @tool
    def create_work_order(self, vehicle_id: int, note: str = "") -> dict:
        """Open a new, empty work order for a vehicle; returns its id.

        Args:
            vehicle_id: The vehicle's numeric id.
            note: Optional free-text note for the workshop.
        """
        self.require_row("vehicles", vehicle_id, "use list_vehicles")
        existing = self.query("SELECT id FROM work_orders WHERE vehicle_id = ? AND status = 'open'", (vehicle_id,))
        if existing:
            raise ToolError(f"vehicle {vehicle_id} already has open work order {existing[0]['id']}; add jobs to that one")
        cur = self.db.execute("INSERT INTO work_orders (vehicle_id, status, note, created_on) VALUES (?, 'open', ?, ?)",
                              (vehicle_id, note, CREATED_ON))
        return {"work_order_id": cur.lastrowid, "vehicle_id": vehicle_id, "status": "open", "jobs": []}

    @tool
    def add_work_order_job(self, work_order_id: int, job_code: str) -> dict:
        """Add one job (a schedule code such as "OIL", or a recall reference) to an open work order.

        Args:
            work_order_id: The work order's id.
            job_code: The job's code.
        """
        if not self.query("SELECT id FROM work_orders WHERE id = ? AND status = 'open'", (work_order_id,)):
            raise ToolError(f"no open work order with id {work_order_id}")
        code = job_code.strip().upper()
        if not re.fullmatch(r"[A-Z]{3}|RC-\d\d-\d{3}", code):
            raise ToolError(f"job code {job_code!r} is not a schedule code (three letters) or a recall reference (RC-yy-nnn)")
        if self.query("SELECT 1 FROM work_order_jobs WHERE work_order_id = ? AND job_code = ?", (work_order_id, code)):
            raise ToolError(f"work order {work_order_id} already has job {code}")
        self.db.execute("INSERT INTO work_order_jobs VALUES (?, ?)", (work_order_id, code))
        jobs = [r["job_code"] for r in self.query("SELECT job_code FROM work_order_jobs WHERE work_order_id = ?", (work_order_id,))]
        return {"work_order_id": work_order_id, "jobs": sorted(jobs)}

    def plan_written(self) -> Criterion:
        """The plan lists the reference's jobs per unit, in any order (file_matches compares JSON lists in order)."""
        name = self.params["report_name"]

        def jobs_by_unit(text: str) -> dict:
            return {normalise(e["unit"]): sorted(map(normalise, e["jobs"])) for e in parse_json(text) if e["jobs"]}

        try:
            got = jobs_by_unit(self.fs.read_text(name, MAX_FILE_CHARS))
        except Exception as exc:  # noqa: BLE001 - missing, unreadable or not shaped as asked: said in the detail
            return Criterion("plan_file_written", False, 1.0, f"{name}: {str(exc)[:200] or type(exc).__name__}")
        problem = compare_json(got, jobs_by_unit(self.reference.read(name)), [], tolerance=0)
        return Criterion("plan_file_written", problem is None, 1.0, problem or f"{name} matches the expected jobs")

    def criteria(self, final_response: str) -> list[Criterion]:
        jobs = "work_order_jobs j JOIN work_orders o ON o.id = j.work_order_id AND o.status = 'open'"
        added = self.reference.query(f"SELECT count(DISTINCT o.vehicle_id) AS vehicles, coalesce(sum(j.job_code LIKE "
                                     f"'RC-%'), 0) AS recalls FROM {jobs} WHERE j.job_code != 'DIAG'")[0]
        return [
            self.tables_match("work_orders", key="vehicle_id", where="status = 'open'",
                              criterion="one_open_work_order_per_vehicle"),
            self.tables_match(jobs, key=["o.vehicle_id", "j.job_code"], where="j.job_code NOT LIKE 'RC-%'", weight=2.0,
                              criterion="routine_jobs_correct"),
            self.tables_match(jobs, key=["o.vehicle_id", "j.job_code"], where="j.job_code LIKE 'RC-%'",
                              criterion="recall_jobs_correct"),
            self.plan_written(),
            self.answer_states([added["vehicles"], added["recalls"]], criterion="counts_reported"),
        ]
