from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class FreezerConsolidationEnv(WorkspaceEnvironment):
    @tool
    def list_freezers(self, page: int = 1) -> dict:
        """List freezers with room, temperature, biosafety rating and box capacity, 20 per page."""
        return self.query_page("SELECT id, name, room, temperature, biosafety_level, capacity_boxes, model "
                               "FROM freezers ORDER BY id", page=page)

    @tool
    def list_boxes(self, page: int = 1, freezer_id: int = 0) -> dict:
        """List sample boxes with the freezer they are in, storage temperature and biosafety level, 50 per page.

        Args:
            freezer_id: Only boxes currently in this freezer when non-zero.
        """
        sql = "SELECT id, label, freezer_id, storage_temperature, biosafety_level, sample_type, owner FROM boxes"
        return self.query_page(sql + (" WHERE freezer_id = ?" if freezer_id else "") + " ORDER BY id", (freezer_id,) if freezer_id else (), page, page_size=50)

    @tool
    def create_transfer(self, source_freezer_id: int, destination_freezer_id: int) -> dict:
        """Open a transfer record from one freezer to another; returns the transfer id to move boxes under.

        Args:
            source_freezer_id: Freezer the boxes come out of.
            destination_freezer_id: Freezer they go into.
        """
        for fid in (source_freezer_id, destination_freezer_id):
            if not self.query("SELECT id FROM freezers WHERE id = ?", (fid,)):
                raise ToolError(f"no freezer with id {fid}")
        if source_freezer_id == destination_freezer_id:
            raise ToolError("source and destination must differ")
        cur = self.db.execute("INSERT INTO transfers (source_freezer_id, destination_freezer_id) VALUES (?, ?)",
                              (source_freezer_id, destination_freezer_id))
        return {"transfer_id": cur.lastrowid, "source_freezer_id": source_freezer_id,
                "destination_freezer_id": destination_freezer_id}

    @tool
    def move_box(self, box_id: int, transfer_id: int) -> dict:
        """Move one box under a transfer: it leaves the transfer's source and goes into its destination.

        Args:
            box_id: The box to move.
            transfer_id: The id returned by create_transfer.
        """
        transfer = self.require_row("transfers", transfer_id, "create one first")
        box = self.require_row("boxes", box_id, "use list_boxes", what="box")
        if box["freezer_id"] != transfer["source_freezer_id"]:
            raise ToolError(f"box {box_id} is not in the transfer's source freezer")
        self.db.execute("UPDATE boxes SET freezer_id = ? WHERE id = ?", (transfer["destination_freezer_id"], box_id))
        self.db.execute("INSERT INTO box_moves (transfer_id, box_id) VALUES (?, ?)", (transfer_id, box_id))
        return {"box_id": box_id, "freezer_id": transfer["destination_freezer_id"]}

    def criteria(self, final_response: str) -> list[Criterion]:
        moves = "box_moves m JOIN transfers t ON t.id = m.transfer_id JOIN boxes b ON b.id = m.box_id"
        unplaced = self.reference.read(self.params["report_name"]).split()[1:]  # a heading, then one label per line
        return [
            self.tables_match(moves, key="b.label", criterion="placeable_boxes_moved", weight=2.0),
            self.tables_match(moves, key="b.label", columns="t.destination_freezer_id",
                              criterion="destinations_follow_sop"),
            self.tables_match("transfers t", key="t.destination_freezer_id", columns="t.source_freezer_id",
                              where="EXISTS (SELECT 1 FROM box_moves m WHERE m.transfer_id = t.id)",
                              criterion="one_transfer_per_destination"),
            self.file_matches(self.params["report_name"], key="label", criterion="unplaced_listed"),
            self.answer_states(len(unplaced), criterion="unplaced_count_reported"),
        ]
