"""Tools and verifier for fleet_maintenance/tyre_replacement_plan."""
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

AXLE_ORDER = {"car": ["FL", "FR", "RL", "RR"], "van": ["FL", "FR", "RL", "RR"], "minibus": ["FL", "FR", "RL", "RR"],
              "truck": ["FL", "FR", "RLO", "RLI", "RRI", "RRO"]}


class TyrePlanEnv(WorkspaceEnvironment):
    @tool
    def list_vehicles(self, page: int = 1, depot: str = "") -> dict:
        """List fleet vehicles with registration, type and home depot, 20 per page.

        Args:
            page: 1-based page number.
            depot: Only vehicles of this depot when non-empty.
        """
        sql = "SELECT id, reg, type, depot, odometer_km FROM vehicles"
        return self.query_page(sql + (" WHERE depot = ?" if depot else "") + " ORDER BY id", (depot,) if depot else (), page)

    @tool
    def list_inspections(self, page: int = 1, vehicle_id: int = 0) -> dict:
        """List tread-depth readings (vehicle, tyre position, mm, date), oldest first, 50 per page.

        Args:
            page: 1-based page number.
            vehicle_id: Only this vehicle's readings when non-zero.
        """
        if vehicle_id:
            self.require_row("vehicles", vehicle_id, "use list_vehicles")
        sql = "SELECT vehicle_id, position, tread_mm, inspected_on, inspector FROM inspections"
        return self.query_page(sql + (" WHERE vehicle_id = ?" if vehicle_id else "") + " ORDER BY inspected_on, id",
                               (vehicle_id,) if vehicle_id else (), page, page_size=50)

    @tool
    def get_tyre_price(self, vehicle_type: str, season: str) -> dict:
        """Get the fitted price of one tyre for a vehicle type and season.

        Args:
            vehicle_type: car, van, truck or minibus.
            season: "all-season" or "winter".
        """
        rows = self.query("SELECT vehicle_type, season, unit_price FROM tyre_prices WHERE vehicle_type = ? AND season = ?",
                          (vehicle_type, season))
        if not rows:
            raise ToolError(f"no price for {vehicle_type!r} / {season!r}; types are car, van, truck, minibus and "
                            "seasons all-season, winter")
        return rows[0]

    # --- verifier --------------------------------------------------------------------------------
    def _plan(self) -> tuple[dict, list, float, dict]:
        facts = json.loads(self.query("SELECT value FROM _verifier_facts WHERE key = 'policy'")[0]["value"])
        latest: dict[int, dict[str, float]] = {}
        for r in self.query("SELECT vehicle_id, position, tread_mm FROM inspections ORDER BY inspected_on, id"):
            latest.setdefault(r["vehicle_id"], {})[r["position"]] = r["tread_mm"]
        price = {(p["vehicle_type"], p["season"]): p["unit_price"] for p in self.query("SELECT * FROM tyre_prices")}
        must, rest = [], []
        for v in self.query("SELECT id, reg, type, depot FROM vehicles WHERE depot != ?", (self.params["excluded_depot"],)):
            winter = v["depot"] == facts["winter_depot"]
            limit = facts["threshold"][v["type"]]
            limit = max(limit, facts["winter_min"]) if winter else limit
            tread = latest.get(v["id"], {})
            axles = {p[0] for p, mm in tread.items() if mm < limit}
            if not axles:
                continue
            positions = [p for p in AXLE_ORDER[v["type"]] if p[0] in axles]
            cost = round(len(positions) * price[(v["type"], "winter" if winter else "all-season")], 2)
            entry = (min(tread.values()), v["reg"], positions, cost)
            (must if entry[0] < facts["legal"] else rest).append(entry)
        plan = {e[1]: e for e in must}
        left = facts["budget"] - sum(e[3] for e in must)
        deferred = []
        for e in sorted(rest, key=lambda e: (e[0], e[1])):
            if e[3] <= left + 1e-9:
                plan[e[1]] = e
                left -= e[3]
            else:
                deferred.append(e[1])
        return plan, deferred, round(sum(e[3] for e in plan.values()), 2), facts

    def criteria(self, final_response: str) -> list[Criterion]:
        plan, deferred, total, facts = self._plan()
        data, problem = None, f"{self.params['report_name']} not found"
        path = self.workspace / self.params["report_name"]
        if path.is_file():
            try:
                data = json.loads(path.read_text())
                got = {str(v["reg"]).strip().upper(): (sorted(v["positions"]), round(float(v["cost"]), 2)) for v in data["vehicles"]}
                got_total = round(float(data["total_cost"]), 2)
                got_deferred = sorted(str(r).strip().upper() for r in data["deferred"])
                problem = ""
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                data, problem = None, f"cannot read {self.params['report_name']}: {exc}"
        must = {reg for reg, e in plan.items() if e[0] < facts["legal"]}
        if data is None:
            vehicles_ok = positions_ok = mandatory_ok = totals_ok = deferred_ok = False
        else:
            vehicles_ok = set(got) == set(plan)
            common = [r for r in plan if r in got]
            positions_ok = bool(common) and all(got[r] == (sorted(plan[r][2]), plan[r][3]) for r in common)
            mandatory_ok = must <= set(got)
            totals_ok = abs(got_total - total) < 0.01
            deferred_ok = got_deferred == sorted(deferred)
        numbers = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*(?:\.\d+)?", final_response)]
        said = any(abs(n - total) < 0.01 for n in numbers) and len(deferred) in [int(n) for n in numbers if n == int(n)]
        return [
            Criterion("legal_minimum_vehicles_included", mandatory_ok, 1.0, problem or f"{len(must)} mandatory vehicles"),
            Criterion("planned_vehicles_match_budget_ranking", vehicles_ok, 2.0, problem or f"{len(plan)} vehicles expected"),
            Criterion("axle_sets_and_costs", positions_ok, 1.0, problem or "whole axles at the right tyre price"),
            Criterion("deferred_list_and_total", deferred_ok and totals_ok, 1.0, problem or f"total {total:.2f}, {len(deferred)} deferred"),
            Criterion("answer_states_total_and_deferred", said, 1.0, f"expected total {total:.2f} and {len(deferred)} deferred"),
        ]
