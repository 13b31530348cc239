"""Tools and verifier for fleet_maintenance/service_scheduling."""
import json
import re
from datetime import date
from typing import Literal

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

CREATED_ON = "2026-12-01"


def _plus_months(day: date, months: int) -> date:
    years, month = divmod(day.month - 1 + months, 12)
    return date(day.year + years, month + 1, min(day.day, 28))


class ServiceSchedulingEnv(WorkspaceEnvironment):
    @tool
    def list_vehicles(self, depot: str = "", page: int = 1) -> dict:
        """List fleet vehicles with odometer reading and status, 20 per page.

        Args:
            depot: Only vehicles based at this depot when non-empty.
            page: 1-based page number.
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
            page: 1-based page number.
        """
        where, params = ("WHERE vehicle_id = ?", (vehicle_id,)) if vehicle_id else ("", ())
        return self.query_page(f"SELECT vehicle_id, job_code, service_date, odometer_km FROM service_history {where} ORDER BY id", params, page)

    @tool
    def list_work_orders(self, status: Literal["", "open", "closed"] = "", page: int = 1) -> dict:
        """List work orders with their jobs, 20 per page.

        Args:
            status: "open" or "closed" to filter; empty for all.
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def expected(self) -> dict[int, set[str]]:
        f = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        today = date.fromisoformat(self.params["plan_date"])
        latest, seen = {}, set()
        for h in self.query("SELECT vehicle_id, job_code, service_date, odometer_km FROM service_history"):
            seen.add((h["vehicle_id"], h["job_code"]))
            key = (h["vehicle_id"], h["job_code"])
            if key not in latest or h["service_date"] > latest[key]["service_date"]:
                latest[key] = h
        out = {}
        for v in self.query("SELECT * FROM vehicles WHERE status = 'active'"):
            jobs = set()
            if v["depot"] != f["handback"]:
                for job, interval in f["km"].items():
                    last = latest.get((v["id"], job))
                    if (last is None or v["odometer_km"] - last["odometer_km"] >= interval - self.params["lookahead_km"]
                            or today >= _plus_months(date.fromisoformat(last["service_date"]), f["months"][job])):
                        jobs.add(job)
            for rc in f["recalls"]:
                if (v["make"], v["model"]) == (rc["make"], rc["model"]) and rc["years"][0] <= v["model_year"] <= rc["years"][1] \
                        and (v["id"], rc["code"]) not in seen:
                    jobs.add(rc["code"])
            if jobs:
                out[v["id"]] = jobs
        return out

    def criteria(self, final_response: str) -> list[Criterion]:
        expected = self.expected()
        f = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        units = {v["id"]: v["unit_number"] for v in self.query("SELECT id, unit_number FROM vehicles")}
        open_orders = {}
        for o in self.query("SELECT id, vehicle_id FROM work_orders WHERE status = 'open'"):
            open_orders.setdefault(o["vehicle_id"], []).append(o["id"])
        one_each = all(len(ids) == 1 for ids in open_orders.values()) and set(expected) <= set(open_orders)
        no_extra_orders = set(open_orders) <= set(expected) | set(f["preexisting_open"])
        added = {}
        for vid, ids in open_orders.items():
            jobs = {r["job_code"] for r in self.query(
                f"SELECT job_code FROM work_order_jobs WHERE work_order_id IN ({','.join('?' * len(ids))})", tuple(ids))}
            jobs.discard("DIAG")  # the one job code that was there before the run
            if jobs:
                added[vid] = jobs
        def part(jobs_by_vehicle: dict, recall: bool) -> dict:
            picked = {v: {j for j in js if j.startswith("RC-") == recall} for v, js in jobs_by_vehicle.items()}
            return {v: js for v, js in picked.items() if js}

        routine_ok = part(added, False) == part(expected, False)
        recalls_ok = part(added, True) == part(expected, True)
        plan_ok, detail = False, f"{self.params['report_name']} not found"
        path = self.workspace / self.params["report_name"]
        if path.is_file():
            try:
                data = json.loads(path.read_text())
                got = {str(e["unit"]).strip(): {str(j).strip().upper() for j in e["jobs"]} for e in data if e["jobs"]}
                want = {units[v]: js for v, js in expected.items()}
                plan_ok = got == want
                detail = "matches the expected jobs" if plan_ok else f"{len(got)} vehicles listed, {len(want)} expected"
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                detail = f"cannot parse the plan: {exc}"
        counts = {int(n) for n in re.findall(r"(?<![\d.\-])\d+(?![\d.\-])", final_response)}
        n_recalls = sum(1 for js in expected.values() for j in js if j.startswith("RC-"))
        return [
            Criterion("one_open_work_order_per_vehicle", one_each and no_extra_orders, 1.0,
                      f"{len(open_orders)} vehicles with open work orders; {len(expected)} need work"),
            Criterion("routine_jobs_correct", routine_ok, 2.0, "distance (with the look-ahead) or time intervals, hand-back depot excluded"),
            Criterion("recall_jobs_correct", recalls_ok, 1.0, "bulletin model years, done recalls and disposals excluded"),
            Criterion("plan_file_written", plan_ok, 1.0, detail),
            Criterion("counts_reported", len(expected) in counts and n_recalls in counts, 1.0,
                      f"expected {len(expected)} vehicles and {n_recalls} recall jobs"),
        ]
