"""Tools and verifier for logistics/load_consolidation."""
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


def first_fit_decreasing(orders: list[dict], max_kg: int, max_pallets: int) -> int:
    """Trucks that the depot's heaviest-first, first-fit procedure opens for one group."""
    trucks: list[list[int]] = []
    for o in sorted(orders, key=lambda o: (-o["weight_kg"], o["ref"])):
        for t in trucks:
            if t[0] + o["weight_kg"] <= max_kg and t[1] + o["pallets"] <= max_pallets:
                t[0] += o["weight_kg"]
                t[1] += o["pallets"]
                break
        else:
            trucks.append([o["weight_kg"], o["pallets"]])
    return len(trucks)


class LoadPlanEnv(WorkspaceEnvironment):
    @tool
    def list_orders(self, page: int = 1, region: str = "") -> dict:
        """List tomorrow's orders (reference, customer, region, weight, pallets, temperature), 20 per page.

        Args:
            page: 1-based page number.
            region: Only orders for this delivery region when non-empty.
        """
        sql = "SELECT id, ref, customer, region, weight_kg, pallets, temperature FROM orders"
        return self.query_page(sql + " WHERE region = ? ORDER BY id" if region else sql + " ORDER BY id",
                               (region,) if region else (), page)

    @tool
    def list_truck_types(self, page: int = 1) -> dict:
        """List the truck types with their temperature, weight limit (kg) and pallet limit.

        Args:
            page: 1-based page number.
        """
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

    # --- verifier --------------------------------------------------------------------------------
    def criteria(self, final_response: str) -> list[Criterion]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        orders = {o["id"]: o for o in self.query("SELECT * FROM orders")}
        trucks = {t["name"]: t for t in self.query("SELECT * FROM truck_types")}
        by_temp = {t["temperature"]: t for t in trucks.values()}
        eligible = {i for i, o in orders.items() if o["customer"] != facts["on_hold"]
                    and o["region"] != self.params["skipped_region"] and o["weight_kg"] >= self.params["parcel_kg"]}
        placed = {r["order_id"]: r["load_id"] for r in self.query("SELECT * FROM load_orders")}
        loads = {l["id"]: l for l in self.query("SELECT * FROM loads")}
        members: dict[int, list[dict]] = {}
        for oid, lid in placed.items():
            members.setdefault(lid, []).append(orders[oid])
        used = {lid: loads[lid] for lid in members}

        groups: dict[tuple, list[dict]] = {}
        for i in eligible:
            o = orders[i]
            groups.setdefault((o["region"], o["temperature"], o["customer"] == facts["dedicated"]), []).append(o)
        minimum = sum(first_fit_decreasing(g, by_temp[k[1]]["max_kg"], by_temp[k[1]]["max_pallets"]) for k, g in groups.items())

        temps_ok = all(trucks[used[l]["truck_type"]]["temperature"] == o["temperature"] for l, os in members.items() for o in os)
        dedicated_ok = all(len({o["customer"] == facts["dedicated"] for o in os}) == 1 for os in members.values())
        regions_ok = all(all(o["region"] == used[l]["region"] for o in os) for l, os in members.items())

        report_name = self.params["report_name"]
        plan_ok, detail = False, f"{report_name} not found"
        path = self.workspace / report_name
        if path.is_file():
            want = {lid: ({o["ref"] for o in os}, sum(o["weight_kg"] for o in os)) for lid, os in members.items()}
            got = {}
            for line in path.read_text().splitlines():
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                if len(cells) >= 5 and cells[0].isdigit():
                    refs = {r.strip() for r in cells[3].split(",") if r.strip()}
                    kg = re.sub(r"[^\d.]", "", cells[4])
                    got[int(cells[0])] = (refs, float(kg) if kg else -1.0)
            plan_ok = bool(want) and got.keys() == want.keys() and all(
                got[k][0] == want[k][0] and abs(got[k][1] - want[k][1]) < 0.5 for k in want)
            detail = "table matches the loads" if plan_ok else f"{len(got)} table rows, {len(want)} loads in use"
        numbers = [int(x) for x in re.findall(r"\b\d+\b", final_response)]
        return [
            Criterion("every_shippable_order_planned_once", set(placed) == eligible, 2.0,
                      f"{len(placed)} orders planned, {len(eligible)} expected (credit-hold customer, "
                      f"{self.params['skipped_region']} and orders under {self.params['parcel_kg']} kg left out)"),
            Criterion("loads_are_single_region_and_temperature", regions_ok and temps_ok, 1.0, "chilled on reefers only"),
            Criterion("dedicated_customer_travels_alone", dedicated_ok, 1.0, f"{facts['dedicated']} never shares a truck"),
            Criterion("no_more_trucks_than_the_procedure", 0 < len(used) <= minimum, 1.0, f"{len(used)} trucks, at most {minimum}"),
            Criterion("plan_table_written", plan_ok, 1.0, detail),
            Criterion("truck_count_reported", len(used) in numbers and len(used) <= minimum, 1.0, f"{len(used)} trucks in use"),
        ]
