from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool
from progagent_lib.task.criteria import MAX_FILE_CHARS, normalise, parse_json, same_value

LEGAL_MM = 1.6  # the legal minimum tread in the tyre policy (generator.py)


class TyrePlanEnv(WorkspaceEnvironment):
    @tool
    def list_vehicles(self, page: int = 1, depot: str = "") -> dict:
        """List fleet vehicles with registration, type and home depot, 20 per page.

        Args:
            depot: Only vehicles of this depot when non-empty.
        """
        sql = "SELECT id, reg, type, depot, odometer_km FROM vehicles"
        return self.query_page(sql + (" WHERE depot = ?" if depot else "") + " ORDER BY id", (depot,) if depot else (), page)

    @tool
    def list_inspections(self, page: int = 1, vehicle_id: int = 0) -> dict:
        """List tread-depth readings (vehicle, tyre position, mm, date), oldest first, 50 per page.

        Args:
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

    @staticmethod
    def read_plan(text: str) -> tuple[dict, list, float]:
        """A plan as compared ({reg: (positions in any order, cost)}, the deferred registrations, the total):
        file_matches would compare the JSON lists in order."""
        plan = parse_json(text)
        vehicles = {normalise(v["reg"]): (sorted(map(normalise, v["positions"])), normalise(v["cost"]))
                    for v in plan["vehicles"]}
        return vehicles, sorted(map(normalise, plan["deferred"])), normalise(plan["total_cost"])

    def criteria(self, final_response: str) -> list[Criterion]:
        name = self.params["report_name"]
        want, deferred, total = self.read_plan(self.reference.read(name))
        illegal = self.query(  # vehicles whose latest reading of some tyre is below the legal minimum
            "SELECT DISTINCT v.reg FROM inspections i JOIN vehicles v ON v.id = i.vehicle_id WHERE v.depot != ? AND "
            "i.tread_mm < ? AND i.id = (SELECT id FROM inspections WHERE vehicle_id = i.vehicle_id AND position = "
            "i.position ORDER BY inspected_on DESC, id DESC LIMIT 1)", (self.params["excluded_depot"], LEGAL_MM))
        try:
            got, got_deferred, got_total = self.read_plan(self.fs.read_text(name, MAX_FILE_CHARS))
            problem = ""
        except Exception as exc:  # noqa: BLE001 - missing, unreadable or not shaped as asked: said in the detail
            got, got_deferred, got_total, problem = {}, None, None, f"{name}: {str(exc)[:200] or type(exc).__name__}"
        left_out = sorted({normalise(r["reg"]) for r in illegal} - set(got))
        common = [reg for reg in want if reg in got]
        axles_ok = bool(common) and all(got[r][0] == want[r][0] and same_value(got[r][1], want[r][1], 0.005)
                                        for r in common)
        return [
            Criterion("legal_minimum_vehicles_included", not problem and not left_out, 1.0,
                      problem or f"{len(illegal)} mandatory vehicles; missing: {left_out or 'none'}"),
            Criterion("planned_vehicles_match_budget_ranking", not problem and set(got) == set(want), 2.0,
                      problem or f"{len(got)} vehicles planned, {len(want)} expected"),
            Criterion("axle_sets_and_costs", axles_ok, 1.0, problem or "whole axles at the right tyre price"),
            Criterion("deferred_list_and_total", got_deferred == deferred and same_value(got_total, total, 0.005), 1.0,
                      problem or f"total {total:.2f}, {len(deferred)} deferred"),
            self.answer_states([total, len(deferred)], criterion="answer_states_total_and_deferred"),
        ]
