import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class ReagentDisposalEnv(WorkspaceEnvironment):
    @tool
    def list_reagents(self, page: int = 1, room: str = "") -> dict:
        """List reagent containers in the inventory (summary fields), 20 per page.

        Opening dates, lots and suppliers are only in get_reagent.

        Args:
            room: Only containers stored in this room (e.g. "B-104") when non-empty.
        """
        fields = "id, barcode, name, room, hazard_class, container_ml, expiry_date, status"
        if room:
            return self.query_page(f"SELECT {fields} FROM reagents WHERE room = ? ORDER BY id", (room,), page)
        return self.query_page(f"SELECT {fields} FROM reagents ORDER BY id", page=page)

    @tool
    def get_reagent(self, reagent_id: int) -> dict:
        """Full record of one container, including when it was first opened (null if never opened).

        Args:
            reagent_id: The container's numeric id from list_reagents.
        """
        return self.require_row("reagents", reagent_id, "use list_reagents")

    @tool
    def create_manifest(self, stream: str) -> dict:
        """Open a hazardous-waste manifest for one waste stream and return its id.

        Args:
            stream: The waste stream code from the safety office's rules, e.g. "SOLV".
        """
        code = stream.strip().upper()
        if not re.fullmatch(r"[A-Z]{4}", code):
            raise ToolError(f"stream must be a four-letter waste stream code, got {stream!r}")
        manifest_id = self.db.execute("INSERT INTO manifests (stream, status) VALUES (?, 'open')", (code,)).lastrowid
        return {"manifest_id": manifest_id, "stream": code, "status": "open"}

    @tool
    def add_to_manifest(self, manifest_id: int, reagent_id: int) -> dict:
        """Put a container on a manifest; it is then marked as awaiting collection.

        Args:
            manifest_id: The id returned by create_manifest.
            reagent_id: The container to dispose of.
        """
        self.require_row("manifests", manifest_id, "create one with create_manifest")
        reagent = self.require_row("reagents", reagent_id, "use list_reagents")
        if reagent["status"] != "in stock":
            raise ToolError(f"reagent {reagent_id} is {reagent['status']}; only containers in stock can be manifested")
        item = self.db.execute("INSERT INTO manifest_items (manifest_id, reagent_id) VALUES (?, ?)", (manifest_id, reagent_id))
        self.db.execute("UPDATE reagents SET status = 'awaiting collection' WHERE id = ?", (reagent_id,))
        return {"item_id": item.lastrowid, "manifest_id": manifest_id, "reagent_id": reagent_id}

    def criteria(self, final_response: str) -> list[Criterion]:
        facts = self.facts
        g = facts["guaranteed"]
        codes = {r["barcode"] for r in self.query("SELECT r.barcode FROM manifest_items i JOIN reagents r "
                                                   "ON r.id = i.reagent_id")}
        items = "manifest_items i JOIN manifests m ON m.id = i.manifest_id"
        streams = self.tables_match(items, key="i.reagent_id", columns="m.stream")
        one_each = self.tables_match("manifests m", key="m.stream",
                                     where="EXISTS (SELECT 1 FROM manifest_items i WHERE i.manifest_id = m.id)")
        due = self.reference.query("SELECT count(*) AS n FROM manifest_items")[0]["n"]
        return [
            self.tables_match("manifest_items", key="reagent_id", criterion="exactly_the_due_containers_manifested",
                              weight=2.0),
            Criterion("aged_peroxide_formers_caught", g["aged"] in codes and not {g["fresh"], g["unopened"]} & codes,
                      1.0, "opened-too-long rule applied only to opened formers"),
            Criterion("extensions_honoured", not set(facts["extended"]) & codes and g["refused"] in codes, 1.0,
                      "approved extension kept, refused one disposed"),
            Criterion("correct_waste_streams", streams.passed and one_each.passed, 1.0,
                      f"streams: {streams.detail}; one manifest per stream: {one_each.detail}"),
            self.file_matches(self.params["report_name"], as_="json", tolerance=0.5, criterion="summary_written"),
            self.answer_states(due, criterion="total_containers_reported"),
        ]
