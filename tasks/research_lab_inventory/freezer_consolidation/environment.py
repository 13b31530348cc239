"""Tools and verifier for research_lab_inventory/freezer_consolidation."""
import csv
import io
import json
import math
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class FreezerConsolidationEnv(WorkspaceEnvironment):
    @tool
    def list_freezers(self, page: int = 1) -> dict:
        """List freezers with room, temperature, biosafety rating and box capacity, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, name, room, temperature, biosafety_level, capacity_boxes, model "
                               "FROM freezers ORDER BY id", page=page)

    @tool
    def list_boxes(self, page: int = 1, freezer_id: int = 0) -> dict:
        """List sample boxes with the freezer they are in, storage temperature and biosafety level, 50 per page.

        Args:
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def _replay(self) -> tuple[dict[str, int | None], dict]:
        """Expected destination of each box of the failing freezer (None = stays), from the original state."""
        facts = json.loads(self.query("SELECT value FROM _verifier_facts WHERE key = 'sop'")[0]["value"])
        first_move = {}
        for m in self.query("SELECT m.box_id, t.source_freezer_id FROM box_moves m JOIN transfers t ON t.id = m.transfer_id "
                            "ORDER BY m.id"):
            first_move.setdefault(m["box_id"], m["source_freezer_id"])
        boxes = self.query("SELECT id, label, freezer_id, storage_temperature, biosafety_level FROM boxes")
        home = {b["id"]: first_move.get(b["id"], b["freezer_id"]) for b in boxes}
        freezers = {f["id"]: f for f in self.query("SELECT * FROM freezers")}
        count = {fid: 0 for fid in freezers}
        for b in boxes:
            count[home[b["id"]]] += 1
        blocked = {facts["failing"], facts["reserved"], facts["defrost"]}
        out = {}
        for b in sorted((b for b in boxes if home[b["id"]] == facts["failing"]), key=lambda b: b["label"]):
            options = []
            for fid, f in freezers.items():
                if fid in blocked or f["temperature"] != b["storage_temperature"] or f["biosafety_level"] != b["biosafety_level"]:
                    continue
                free = math.floor(f["capacity_boxes"] * self.params["headroom"] / 100) - count[fid]
                if free > 0:
                    options.append((-free, f["name"], fid))
            if options:
                fid = min(options)[2]
                count[fid] += 1
                out[b["label"]] = fid
            else:
                out[b["label"]] = None
        return out, facts

    def criteria(self, final_response: str) -> list[Criterion]:
        expected, facts = self._replay()
        moves = self.query("SELECT b.label, t.source_freezer_id AS src, t.destination_freezer_id AS dst FROM box_moves m "
                           "JOIN transfers t ON t.id = m.transfer_id JOIN boxes b ON b.id = m.box_id")
        moved = {}
        for m in moves:
            moved.setdefault(m["label"], []).append(m["dst"])
        single = all(len(v) == 1 for v in moved.values())
        placed = {k: v for k, v in expected.items() if v is not None}
        set_ok = single and set(moved) == set(placed)
        dest_ok = bool(moved) and all(placed.get(k) == v[-1] for k, v in moved.items())
        transfers = self.query("SELECT source_freezer_id, destination_freezer_id FROM transfers t "
                               "WHERE EXISTS (SELECT 1 FROM box_moves m WHERE m.transfer_id = t.id)")
        dests = [t["destination_freezer_id"] for t in transfers]
        transfers_ok = bool(transfers) and len(dests) == len(set(dests)) and all(t["source_freezer_id"] == facts["failing"] for t in transfers)
        unplaced = sorted(k for k, v in expected.items() if v is None)
        report_name = self.params["report_name"]
        report_ok, detail = False, f"{report_name} not found"
        path = self.workspace / report_name
        if path.is_file():
            try:
                got = sorted(r["label"].strip() for r in csv.DictReader(io.StringIO(path.read_text().strip())))
                report_ok = got == unplaced
                detail = "matches" if report_ok else f"{len(got)} labels listed, {len(unplaced)} expected"
            except (KeyError, AttributeError) as exc:
                detail = f"cannot read {report_name}: {exc}"
        return [
            Criterion("placeable_boxes_moved", set_ok, 2.0, f"{len(moved)} boxes moved, {len(placed)} expected"),
            Criterion("destinations_follow_sop", dest_ok, 1.0, "eligible freezer with most free places, name as tie-break"),
            Criterion("one_transfer_per_destination", transfers_ok, 1.0, f"{len(transfers)} transfers used"),
            Criterion("unplaced_listed", report_ok, 1.0, detail),
            Criterion("unplaced_count_reported", str(len(unplaced)) in re.findall(r"\d+", final_response), 1.0,
                      f"expected {len(unplaced)}"),
        ]
