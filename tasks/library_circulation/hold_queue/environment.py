"""Tools and verifier for library_circulation/hold_queue."""
import csv
import io
import json
import re
from datetime import date, timedelta
from typing import Literal

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class HoldQueueEnv(WorkspaceEnvironment):
    @tool
    def list_holds(self, status: Literal["", "waiting", "ready", "in_transit"] = "waiting", page: int = 1) -> dict:
        """List holds (not in queue order), 20 per page.

        Args:
            status: "waiting" (default), "ready", "in_transit", or empty for all.
            page: 1-based page number.
        """
        sql = "SELECT id, title_id, patron_id, placed_at, pickup_branch, status, copy_id FROM holds"
        return self.query_page(sql + (" WHERE status = ?" if status else "") + " ORDER BY id", (status,) if status else (), page)

    @tool
    def list_copies(self, title_id: int = 0, page: int = 1) -> dict:
        """List physical copies with branch and status, 20 per page.

        Args:
            title_id: Only copies of this title when non-zero.
            page: 1-based page number.
        """
        where, args = ("WHERE title_id = ?", (title_id,)) if title_id else ("", ())
        return self.query_page(f"SELECT id, title_id, barcode, branch, status FROM copies {where} ORDER BY id", args, page)

    @tool
    def list_patrons(self, card_type: Literal["", "adult", "staff"] = "", page: int = 1) -> dict:
        """List patrons with card type, expiry date and block flag, 20 per page.

        Args:
            card_type: Only patrons holding this kind of card ("adult" or "staff") when non-empty.
            page: 1-based page number.
        """
        columns = "id, card_number, name, card_type, expires_on, blocked"
        if card_type:
            return self.query_page(f"SELECT {columns} FROM patrons WHERE card_type = ? ORDER BY id", (card_type,), page)
        return self.query_page(f"SELECT {columns} FROM patrons ORDER BY id", page=page)

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

    # --- verifier --------------------------------------------------------------------------------
    def expected(self) -> dict[int, dict]:
        f = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        patrons = {p["id"]: p for p in self.query("SELECT * FROM patrons")}
        # Copy statuses change during the run; the shelf copies at the start are those not on loan or missing.
        shelf = [c for c in self.query("SELECT id, title_id, barcode, branch, status FROM copies")
                 if c["status"] not in ("on_loan", "missing") and c["branch"] != f["quarantined"]]
        no_van, renewal_end = self.params["no_van_branch"], (date.fromisoformat(f["today"]) + timedelta(days=self.params["renewal_days"])).isoformat()
        out = {}
        holds = self.query("SELECT id, title_id, patron_id, placed_at, pickup_branch FROM holds")
        holds.sort(key=lambda h: (patrons[h["patron_id"]]["card_type"] == "staff", h["placed_at"]))
        used = set()
        for h in holds:
            p = patrons[h["patron_id"]]
            if p["blocked"] or p["expires_on"] < f["today"] or p["id"] == f["frozen"] or p["expires_on"] <= renewal_end:
                continue
            pool = [c for c in shelf if c["title_id"] == h["title_id"] and c["id"] not in used]
            local = [c for c in pool if c["branch"] == h["pickup_branch"]]
            # A transfer needs the van at both ends.
            remote = [] if h["pickup_branch"] == no_van else [c for c in pool if c["branch"] not in (h["pickup_branch"], no_van)]
            choice = min(local or remote, key=lambda c: c["barcode"], default=None)
            if choice:
                used.add(choice["id"])
                out[h["id"]] = {"copy": choice["id"], "barcode": choice["barcode"], "branch": h["pickup_branch"],
                                "transfer": choice["branch"] != h["pickup_branch"]}
        return out

    def criteria(self, final_response: str) -> list[Criterion]:
        expected = self.expected()
        filled = {h["id"]: h for h in self.query("SELECT id, copy_id, transfer_id, status FROM holds WHERE status != 'waiting'")}
        right_holds = set(filled) == set(expected)
        right_copies = right_holds and all(filled[k]["copy_id"] == v["copy"] for k, v in expected.items())
        transfers = {(t["copy_id"], t["to_branch"]) for t in self.query("SELECT copy_id, to_branch FROM transfers")}
        want_transfers = {(v["copy"], v["branch"]) for v in expected.values() if v["transfer"]}
        report_name = self.params["report_name"]
        report_ok, detail = False, f"{report_name} not found"
        path = self.workspace / report_name
        if path.is_file():
            try:
                rows = list(csv.DictReader(io.StringIO(path.read_text().strip())))
                got = {int(r["hold_id"]): (r["barcode"].strip(), r["pickup_branch"].strip(), r["transfer"].strip().lower() in ("yes", "true", "1"))
                       for r in rows}
                want = {k: (v["barcode"], v["branch"], v["transfer"]) for k, v in expected.items()}
                report_ok = got == want and len(rows) == len(want)
                detail = "matches the expected fills" if report_ok else f"{len(rows)} rows, {len(want)} expected"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                detail = f"cannot parse the report: {exc}"
        counts = {int(n) for n in re.findall(r"(?<![\d.])\d+(?![\d.])", final_response)}
        return [
            Criterion("right_holds_filled", right_holds, 2.0, f"{len(filled)} holds filled, {len(expected)} expected "
                      f"(no van at {self.params['no_van_branch']}, cards expiring within {self.params['renewal_days']} days skipped)"),
            Criterion("right_copies_used", right_copies, 1.0, "local copy first, else lowest barcode; quarantine respected"),
            Criterion("transfers_raised", transfers == want_transfers, 1.0, f"{len(transfers)} transfers, {len(want_transfers)} expected"),
            Criterion("report_written", report_ok, 1.0, detail),
            Criterion("counts_reported", len(expected) in counts and len(want_transfers) in counts, 1.0,
                      f"expected {len(expected)} filled and {len(want_transfers)} transfers"),
        ]
