from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, paginate, tool
from progagent_lib.task.criteria import parse_rows


class CarrierEnv(WorkspaceEnvironment):
    @tool
    def list_shipments(self, page: int = 1, status: str = "") -> dict:
        """List outbound shipments (destination, weight, hazardous flag, ready date, status), 20 per page.

        Args:
            status: Only shipments with this status ("waiting", "booked" or "held") when non-empty.
        """
        sql = "SELECT id, ref, origin, destination_country, weight_kg, hazmat, ready_date, status FROM shipments"
        where, args = (" WHERE status = ?", (status,)) if status else ("", ())
        return self.query_page(sql + where + " ORDER BY id", args, page)

    @tool
    def list_carriers(self, page: int = 1) -> dict:
        """List carriers with their weight limit, dangerous-goods certification and on-time record, 20 per page."""
        return self.query_page("SELECT * FROM carriers ORDER BY id", page=page)

    @tool
    def list_lane_rates(self, destination_country: str, page: int = 1) -> dict:
        """List every carrier's rate per kg and minimum charge for one destination country, 20 per page.

        Args:
            destination_country: Country name, e.g. "Belgium".
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

    def criteria(self, final_response: str) -> list[Criterion]:
        facts = self.facts
        booked = "bookings b JOIN manifests m ON m.id = b.manifest_id JOIN shipments s ON s.id = b.shipment_id"
        (banned, ban_land), (lapsed, lapse_day) = facts["ban"], facts["lapsed"]
        # Partial credit: a wrong choice of carrier elsewhere still respects (or breaks) the notices.
        breaches = self.query(
            f"SELECT count(*) AS n FROM {booked} WHERE (m.carrier_id = ? AND s.destination_country = ?) "
            "OR (m.carrier_id = ? AND s.hazmat = 1 AND s.ready_date >= ?) OR s.destination_country = ?",
            (banned, ban_land, lapsed, lapse_day, facts["closed"]))[0]["n"]
        used = self.query("SELECT count(DISTINCT m.id) AS manifests, count(DISTINCT m.carrier_id) AS carriers "
                          "FROM manifests m JOIN bookings b ON b.manifest_id = m.id")[0]
        plan = self.reference.read(self.params["report_name"]) or ""
        total = round(sum(float(row["cost"]) for row in parse_rows(plan, "csv")), 2)
        return [
            self.tables_match("shipments", key="id", where="status = 'waiting'",
                              criterion="every_shipment_booked_or_held"),
            self.tables_match("shipments", key="id", where="status = 'held'", criterion="embargoed_destination_held"),
            self.tables_match(booked, key="s.id", columns="m.carrier_id", weight=2.0,
                              criterion="cheapest_allowed_carrier_booked"),
            Criterion("compliance_notices_respected", breaches == 0, 1.0,
                      f"{breaches} bookings break the lane ban, the lapsed dangerous-goods certificate or the embargo"),
            self.tables_match(booked, key="s.id", columns="m.carrier_id",
                              where=f"s.destination_country = '{facts['tie_land']}' AND s.weight_kg = 400",
                              criterion="equal_quotes_go_to_the_more_punctual"),
            Criterion("one_manifest_per_carrier", 0 < used["manifests"] == used["carriers"], 1.0,
                      f"{used['manifests']} manifests for {used['carriers']} carriers"),
            self.file_matches(self.params["report_name"], key="shipment", tolerance=0.015,
                              criterion="plan_file_written"),
            self.answer_states(total, tolerance=0.015, criterion="total_cost_reported"),
        ]
