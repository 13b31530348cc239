from typing import Literal

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class HoldQueueEnv(WorkspaceEnvironment):
    @tool
    def list_holds(self, status: Literal["", "waiting", "ready", "in_transit"] = "waiting", page: int = 1) -> dict:
        """List holds (not in queue order), 20 per page.

        Args:
            status: "waiting" (default), "ready", "in_transit", or empty for all.
        """
        sql = "SELECT id, title_id, patron_id, placed_at, pickup_branch, status, copy_id FROM holds"
        return self.query_page(sql + (" WHERE status = ?" if status else "") + " ORDER BY id", (status,) if status else (), page)

    @tool
    def list_copies(self, title_id: int = 0, page: int = 1) -> dict:
        """List physical copies with branch and status, 20 per page.

        Args:
            title_id: Only copies of this title when non-zero.
        """
        where, args = ("WHERE title_id = ?", (title_id,)) if title_id else ("", ())
        return self.query_page(f"SELECT id, title_id, barcode, branch, status FROM copies {where} ORDER BY id", args, page)

    @tool
    def list_patrons(self, card_type: Literal["", "adult", "staff"] = "", page: int = 1) -> dict:
        """List patrons with card type, expiry date and block flag, 20 per page.

        Args:
            card_type: Only patrons holding this kind of card ("adult" or "staff") when non-empty.
        """
        where, args = ("WHERE card_type = ?", (card_type,)) if card_type else ("", ())
        return self.query_page(f"SELECT id, card_number, name, card_type, expires_on, blocked FROM patrons {where} "
                               "ORDER BY id", args, page)

    @tool
    def create_transfer(self, copy_id: int, to_branch: str) -> dict:
        """Send an available copy to another branch; returns the transfer id to quote when filling a hold.

        Args:
            copy_id: The copy to send.
            to_branch: The destination branch name.
        """
        copy = self.require_row("copies", copy_id, "use list_copies", what="copy")
        if copy["status"] != "available":
            raise ToolError(f"copy {copy_id} is {copy['status']}, not available on the shelf")
        if not self.query("SELECT 1 FROM copies WHERE branch = ? LIMIT 1", (to_branch,)):
            raise ToolError(f"unknown branch {to_branch!r}")
        if to_branch == copy["branch"]:
            raise ToolError(f"copy {copy_id} is already at {to_branch}; no transfer needed")
        cur = self.db.execute("INSERT INTO transfers (copy_id, from_branch, to_branch) VALUES (?,?,?)",
                              (copy_id, copy["branch"], to_branch))
        self.db.execute("UPDATE copies SET status = 'in_transit' WHERE id = ?", (copy_id,))
        return {"transfer_id": cur.lastrowid, "copy_id": copy_id, "from_branch": copy["branch"], "to_branch": to_branch}

    @tool
    def fill_hold(self, hold_id: int, copy_id: int, transfer_id: int = 0) -> dict:
        """Fill a waiting hold with a copy at its pickup branch, or with a copy under transfer to that branch.

        Args:
            hold_id: The waiting hold.
            copy_id: The copy that will fill it.
            transfer_id: The transfer that brings the copy to the pickup branch (0 when the copy is already there).
        """
        hold = self.query("SELECT id, title_id, pickup_branch, status FROM holds WHERE id = ?", (hold_id,))
        copy = self.query("SELECT id, title_id, branch, status FROM copies WHERE id = ?", (copy_id,))
        if not hold or hold[0]["status"] != "waiting":
            raise ToolError(f"no waiting hold with id {hold_id}")
        if not copy or copy[0]["title_id"] != hold[0]["title_id"]:
            raise ToolError(f"copy {copy_id} is not a copy of the held title")
        if self.query("SELECT id FROM holds WHERE copy_id = ?", (copy_id,)):
            raise ToolError(f"copy {copy_id} already fills another hold")
        if transfer_id:
            t = self.query("SELECT copy_id, to_branch FROM transfers WHERE id = ?", (transfer_id,))
            if not t or t[0]["copy_id"] != copy_id or t[0]["to_branch"] != hold[0]["pickup_branch"]:
                raise ToolError(f"transfer {transfer_id} does not bring copy {copy_id} to {hold[0]['pickup_branch']}")
            status = "in_transit"
        else:
            if copy[0]["branch"] != hold[0]["pickup_branch"] or copy[0]["status"] != "available":
                raise ToolError(f"copy {copy_id} is not on the shelf at {hold[0]['pickup_branch']}; create a transfer first")
            status = "ready"
            self.db.execute("UPDATE copies SET status = 'on_hold_shelf' WHERE id = ?", (copy_id,))
        self.db.execute("UPDATE holds SET status = ?, copy_id = ?, transfer_id = ? WHERE id = ?",
                        (status, copy_id, transfer_id or None, hold_id))
        return {"hold_id": hold_id, "status": status, "copy_id": copy_id}

    def criteria(self, final_response: str) -> list[Criterion]:
        filled = "status != 'waiting'"
        counts = self.reference.query(f"SELECT count(*) AS holds, count(transfer_id) AS moved FROM holds "
                                      f"WHERE {filled}")[0]
        return [
            self.tables_match("holds", key="id", where=filled, weight=2.0, criterion="right_holds_filled"),
            self.tables_match("holds", key="id", columns="copy_id", where=filled, criterion="right_copies_used"),
            self.tables_match("transfers", key=["copy_id", "to_branch"], criterion="transfers_raised"),
            self.file_matches(self.params["report_name"], key="hold_id", criterion="report_written"),
            self.answer_states([counts["holds"], counts["moved"]], criterion="counts_reported"),
        ]
