from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool
from progagent_lib.task.criteria import MAX_FILE_CHARS, ParseError, compare_rows, parse_rows


class LoadPlanEnv(WorkspaceEnvironment):
    @tool
    def list_orders(self, page: int = 1, region: str = "") -> dict:
        """List tomorrow's orders (reference, customer, region, weight, pallets, temperature), 20 per page.

        Args:
            region: Only orders for this delivery region when non-empty.
        """
        sql = "SELECT id, ref, customer, region, weight_kg, pallets, temperature FROM orders"
        return self.query_page(sql + " WHERE region = ? ORDER BY id" if region else sql + " ORDER BY id",
                               (region,) if region else (), page)

    @tool
    def list_truck_types(self, page: int = 1) -> dict:
        """List the truck types with their temperature, weight limit (kg) and pallet limit."""
        return self.query_page("SELECT * FROM truck_types ORDER BY name", page=page)

    @tool
    def create_load(self, region: str, truck_type: str) -> dict:
        """Open an empty truck load for a region; returns its id.

        Args:
            region: The delivery region the truck serves.
            truck_type: A truck type name from list_truck_types.
        """
        if not self.query("SELECT 1 FROM truck_types WHERE name = ?", (truck_type,)):
            raise ToolError(f"unknown truck type {truck_type!r}; see list_truck_types")
        if not self.query("SELECT 1 FROM orders WHERE region = ?", (region,)):
            raise ToolError(f"no orders go to region {region!r}")
        cur = self.db.execute("INSERT INTO loads (region, truck_type) VALUES (?, ?)", (region, truck_type))
        return {"load_id": cur.lastrowid, "region": region, "truck_type": truck_type}

    def _load_usage(self, load_id: int) -> dict:
        rows = self.query("SELECT l.id, l.region, t.name, t.max_kg, t.max_pallets, COALESCE(SUM(o.weight_kg), 0) AS kg, "
                          "COALESCE(SUM(o.pallets), 0) AS pallets FROM loads l JOIN truck_types t ON t.name = l.truck_type "
                          "LEFT JOIN load_orders lo ON lo.load_id = l.id LEFT JOIN orders o ON o.id = lo.order_id "
                          "WHERE l.id = ? GROUP BY l.id", (load_id,))
        if not rows:
            raise ToolError(f"no load with id {load_id}; create_load returns the id")
        return rows[0]

    @tool
    def add_order_to_load(self, load_id: int, order_id: int) -> dict:
        """Put an order on a load; refuses when the truck's weight or pallet limit would be exceeded.

        Args:
            load_id: The id returned by create_load.
            order_id: The order's numeric id.
        """
        load = self._load_usage(load_id)
        order = self.require_row("orders", order_id, "use list_orders")
        if self.query("SELECT 1 FROM load_orders WHERE order_id = ?", (order_id,)):
            raise ToolError(f"order {order_id} is already on a load; remove it first to move it")
        if order["region"] != load["region"]:
            raise ToolError(f"order {order_id} goes to {order['region']}, the load serves {load['region']}")
        if load["kg"] + order["weight_kg"] > load["max_kg"] or load["pallets"] + order["pallets"] > load["max_pallets"]:
            raise ToolError(f"load {load_id} has room for {load['max_kg'] - load['kg']} kg and "
                            f"{load['max_pallets'] - load['pallets']} pallets; this order does not fit")
        self.db.execute("INSERT INTO load_orders VALUES (?, ?)", (load_id, order_id))
        return {"load_id": load_id, "order_id": order_id, "load_kg": load["kg"] + order["weight_kg"],
                "load_pallets": load["pallets"] + order["pallets"]}

    @tool
    def remove_order_from_load(self, order_id: int) -> dict:
        """Take an order off whichever load it is on.

        Args:
            order_id: The order's numeric id.
        """
        if not self.query("SELECT 1 FROM load_orders WHERE order_id = ?", (order_id,)):
            raise ToolError(f"order {order_id} is not on any load")
        self.db.execute("DELETE FROM load_orders WHERE order_id = ?", (order_id,))
        return {"order_id": order_id, "removed": True}

    # Any plan that keeps the rules with no more trucks than the depot's procedure passes, so beyond the set of
    # planned orders the rules are checked on the episode's own loads, not compared with the oracle's.
    def criteria(self, final_response: str) -> list[Criterion]:
        dedicated = self.facts["dedicated"]
        planned = "load_orders lo JOIN loads l ON l.id = lo.load_id JOIN orders o ON o.id = lo.order_id " \
                  "JOIN truck_types t ON t.name = l.truck_type"
        mixed = self.query(f"SELECT count(*) AS n FROM {planned} WHERE o.region != l.region "
                           "OR o.temperature != t.temperature")[0]["n"]
        shared = self.query(f"SELECT count(*) AS n FROM (SELECT lo.load_id FROM {planned} GROUP BY lo.load_id "
                            "HAVING count(DISTINCT o.customer = ?) > 1)", (dedicated,))[0]["n"]
        trucks = "SELECT count(DISTINCT load_id) AS n FROM load_orders"
        used, most = self.query(trucks)[0]["n"], self.reference.query(trucks)[0]["n"]
        stated = self.answer_states(used, criterion="truck_count_reported")
        return [
            self.tables_match("load_orders", key="order_id", weight=2.0,
                              criterion="every_shippable_order_planned_once"),
            Criterion("loads_are_single_region_and_temperature", mixed == 0, 1.0,
                      f"{mixed} orders on a truck of another region or temperature (chilled on reefers only)"),
            Criterion("dedicated_customer_travels_alone", shared == 0, 1.0,
                      f"{shared} trucks mix {dedicated} with other customers"),
            Criterion("no_more_trucks_than_the_procedure", 0 < used <= most, 1.0, f"{used} trucks, at most {most}"),
            self.plan_table_matches_loads(),
            Criterion(stated.name, stated.passed and used <= most, 1.0, f"{used} trucks in use, at most {most}"),
        ]

    def plan_table_matches_loads(self) -> Criterion:
        """The plan's table lists the loads in use: for each, its orders (in any order) and their total weight."""
        name = self.params["report_name"]
        loads = self.query("SELECT lo.load_id, group_concat(o.ref) AS orders, sum(o.weight_kg) AS total_kg "
                           "FROM load_orders lo JOIN orders o ON o.id = lo.order_id GROUP BY lo.load_id")
        try:
            rows = parse_rows(self.fs.read_text(name, MAX_FILE_CHARS), "md")
        except (ToolError, ParseError) as exc:
            return Criterion("plan_table_written", False, 1.0, f"{name}: {exc}")
        want, got = ([{**row, "orders": _refs(row.get("orders"))} for row in table] for table in (loads, rows))
        problem = compare_rows(got, want, ["load_id"], ["orders", "total_kg"], 0.5) if want else "no loads in use"
        return Criterion("plan_table_written", problem is None, 1.0, problem or "the table matches the loads in use")


def _refs(cell: object) -> str:
    """Order references as compared: sorted, so a load's orders may be listed in any order."""
    return ",".join(sorted(ref.strip() for ref in str(cell or "").split(",") if ref.strip()))
