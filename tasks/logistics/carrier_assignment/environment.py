"""Tools and verifier for logistics/carrier_assignment."""
import csv
import datetime as dt
import io
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, paginate, tool


class CarrierEnv(WorkspaceEnvironment):
    @tool
    def list_shipments(self, page: int = 1, status: str = "") -> dict:
        """List outbound shipments (destination, weight, hazardous flag, ready date, status), 20 per page.

        Args:
            page: 1-based page number.
            status: Only shipments with this status ("waiting", "booked" or "held") when non-empty.
        """
        sql = "SELECT id, ref, origin, destination_country, weight_kg, hazmat, ready_date, status FROM shipments"
        if status:
            return self.query_page(sql + " WHERE status = ? ORDER BY id", (status,), page)
        return self.query_page(sql + " ORDER BY id", page=page)

    @tool
    def list_carriers(self, page: int = 1) -> dict:
        """List carriers with their weight limit, dangerous-goods certification and on-time record, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT * FROM carriers ORDER BY id", page=page)

    @tool
    def list_lane_rates(self, destination_country: str, page: int = 1) -> dict:
        """List every carrier's rate per kg and minimum charge for one destination country, 20 per page.

        Args:
            destination_country: Country name, e.g. "Belgium".
            page: 1-based page number.
        """
        rows = self.query("SELECT carrier_id, rate_per_kg, minimum_charge FROM rates WHERE destination_country = ? "
                          "ORDER BY carrier_id", (destination_country.strip(),))
        if not rows:
            raise ToolError(f"no carrier serves {destination_country!r}; check the spelling against the shipments")
        return paginate(rows, page)

    @tool
    def create_manifest(self, carrier_id: int) -> dict:
        """Open an empty manifest for a carrier; returns its id for adding shipments.

        Args:
            carrier_id: The carrier's numeric id.
        """
        self.require_row("carriers", carrier_id, "use list_carriers")
        cur = self.db.execute("INSERT INTO manifests (carrier_id) VALUES (?)", (carrier_id,))
        return {"manifest_id": cur.lastrowid, "carrier_id": carrier_id}

    def _waiting(self, shipment_id: int) -> dict:
        shipment = self.require_row("shipments", shipment_id, "use list_shipments")
        if shipment["status"] != "waiting":
            raise ToolError(f"shipment {shipment_id} is already {shipment['status']}")
        return shipment

    @tool
    def add_to_manifest(self, manifest_id: int, shipment_id: int) -> dict:
        """Book a waiting shipment on a manifest's carrier; returns the booking with its base freight charge.

        Args:
            manifest_id: The id returned by create_manifest.
            shipment_id: The shipment's numeric id.
        """
        manifest = self.query("SELECT c.* FROM manifests m JOIN carriers c ON c.id = m.carrier_id WHERE m.id = ?", (manifest_id,))
        if not manifest:
            raise ToolError(f"no manifest with id {manifest_id}; create_manifest returns the id")
        carrier, shipment = manifest[0], self._waiting(shipment_id)
        lane = self.query("SELECT rate_per_kg, minimum_charge FROM rates WHERE carrier_id = ? AND destination_country = ?",
                          (carrier["id"], shipment["destination_country"]))
        if not lane:
            raise ToolError(f"{carrier['name']} has no rate for {shipment['destination_country']}")
        if shipment["weight_kg"] > carrier["max_weight_kg"]:
            raise ToolError(f"{shipment['weight_kg']} kg exceeds {carrier['name']}'s limit of {carrier['max_weight_kg']} kg")
        if shipment["hazmat"] and not carrier["hazmat_certified"]:
            raise ToolError(f"{carrier['name']} is not certified for dangerous goods")
        charge = round(max(lane[0]["minimum_charge"], lane[0]["rate_per_kg"] * shipment["weight_kg"]), 2)
        cur = self.db.execute("INSERT INTO bookings (manifest_id, shipment_id, base_charge) VALUES (?,?,?)",
                              (manifest_id, shipment_id, charge))
        self.db.execute("UPDATE shipments SET status = 'booked' WHERE id = ?", (shipment_id,))
        return {"booking_id": cur.lastrowid, "manifest_id": manifest_id, "shipment_id": shipment_id, "base_charge": charge}

    @tool
    def hold_shipment(self, shipment_id: int, reason: str) -> dict:
        """Hold a waiting shipment instead of booking it.

        Args:
            shipment_id: The shipment's numeric id.
            reason: A short explanation, e.g. "destination embargoed".
        """
        self._waiting(shipment_id)
        if not reason.strip():
            raise ToolError("give a short reason for the hold")
        self.db.execute("UPDATE shipments SET status = 'held', hold_reason = ? WHERE id = ?", (reason.strip(), shipment_id))
        return {"shipment_id": shipment_id, "status": "held"}

    # --- verifier --------------------------------------------------------------------------------
    def plan(self, facts: dict) -> dict[int, tuple[int, float] | None]:
        """shipment id -> (carrier id, full cost) it should go with, or None when it must be held."""
        carriers = {c["id"]: c for c in self.query("SELECT * FROM carriers")}
        rates = {}
        for r in self.query("SELECT * FROM rates"):
            rates.setdefault(r["destination_country"], []).append(r)
        lapsed_id, lapse_day = facts["lapsed"]
        out = {}
        for s in self.query("SELECT * FROM shipments"):
            if (s["destination_country"] == facts["closed"] or s["origin"] == self.params["held_site"]
                    or s["weight_kg"] > self.params["max_weight"]):
                out[s["id"]] = None
                continue
            options = []
            for lane in rates[s["destination_country"]]:
                c = carriers[lane["carrier_id"]]
                if s["weight_kg"] > c["max_weight_kg"] or [c["id"], s["destination_country"]] == facts["ban"]:
                    continue
                if s["hazmat"] and (not c["hazmat_certified"] or (c["id"] == lapsed_id and s["ready_date"] >= lapse_day)):
                    continue
                freight = round(max(lane["minimum_charge"], lane["rate_per_kg"] * s["weight_kg"]), 2)
                options.append((freight, -c["on_time_pct"], c["id"]))
            freight, _, cid = min(options)
            out[s["id"]] = (cid, round(freight + (facts["hazmat_fee"] if s["hazmat"] else 0.0), 2))
        return out

    def criteria(self, final_response: str) -> list[Criterion]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        plan = self.plan(facts)
        shipments = {s["id"]: s for s in self.query("SELECT * FROM shipments")}
        booked = {b["shipment_id"]: b["carrier_id"] for b in self.query(
            "SELECT b.shipment_id, m.carrier_id FROM bookings b JOIN manifests m ON m.id = b.manifest_id")}
        handled = all(s["status"] in ("booked", "held") for s in shipments.values())
        held_ok = {i for i, s in shipments.items() if s["status"] == "held"} == {i for i, p in plan.items() if p is None}
        carriers_ok = all(booked.get(i) == p[0] for i, p in plan.items() if p is not None)
        lapsed_id, lapse_day = facts["lapsed"]
        compliant = not any(
            (c == facts["ban"][0] and shipments[i]["destination_country"] == facts["ban"][1])
            or (c == lapsed_id and shipments[i]["hazmat"] and shipments[i]["ready_date"] >= lapse_day)
            or shipments[i]["destination_country"] == facts["closed"] for i, c in booked.items())
        tie_land, tie_winner = facts["tie"]
        tie_ok = all(booked.get(i) == tie_winner for i, s in shipments.items()
                     if s["destination_country"] == tie_land and plan[i] and plan[i][0] == tie_winner and s["weight_kg"] == 400)
        used = self.query("SELECT m.carrier_id, COUNT(DISTINCT m.id) AS n FROM manifests m JOIN bookings b ON b.manifest_id = m.id "
                          "GROUP BY m.carrier_id")
        manifests_ok = bool(used) and all(u["n"] == 1 for u in used)

        names = {c["id"]: c["name"] for c in self.query("SELECT id, name FROM carriers")}
        want = {shipments[i]["ref"]: (names[p[0]], p[1]) for i, p in plan.items() if p is not None}
        report_name = self.params["report_name"]
        report_ok, detail = False, f"{report_name} not found"
        path = self.workspace / report_name
        if path.is_file():
            try:
                rows = list(csv.DictReader(io.StringIO(path.read_text().strip())))
                got = {r["shipment"].strip(): (r["carrier"].strip(), round(float(r["cost"]), 2)) for r in rows}
                report_ok = len(rows) == len(want) and got.keys() == want.keys() and all(
                    got[k][0] == want[k][0] and abs(got[k][1] - want[k][1]) < 0.015 for k in want)
                detail = "matches the expected bookings" if report_ok else f"{len(rows)} rows, {len(want)} bookings expected"
            except (KeyError, ValueError, AttributeError, TypeError) as exc:
                detail = f"cannot parse the plan: {exc}"
        total = round(sum(p[1] for p in plan.values() if p is not None), 2)
        numbers = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.\d+", final_response)]
        return [
            Criterion("every_shipment_booked_or_held", handled, 1.0, "nothing left waiting"),
            Criterion("embargoed_destination_held", held_ok, 1.0, f"exactly the shipments to {facts['closed']}, from "
                      f"{self.params['held_site']} or over {self.params['max_weight']} kg held"),
            Criterion("cheapest_allowed_carrier_booked", carriers_ok, 2.0, "lowest freight among carriers allowed to take it"),
            Criterion("compliance_notices_respected", compliant, 1.0, "lane ban and lapsed dangerous-goods certificate"),
            Criterion("equal_quotes_go_to_the_more_punctual", tie_ok, 1.0, f"same-price lane to {tie_land}"),
            Criterion("one_manifest_per_carrier", manifests_ok, 1.0, "each carrier's bookings on a single manifest"),
            Criterion("plan_file_written", report_ok, 1.0, detail),
            Criterion("total_cost_reported", any(abs(n - total) < 0.015 for n in numbers), 1.0, f"expected {total:.2f}"),
        ]
