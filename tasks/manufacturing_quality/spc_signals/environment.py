import json

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

RULES = ("beyond_limits", "range", "run")


class SpcEnv(WorkspaceEnvironment):
    @tool
    def list_characteristics(self, page: int = 1) -> dict:
        """List the charted characteristics (code, part, feature, unit, nominal), 20 per page."""
        return self.query_page("SELECT id, code, part, name, unit, nominal FROM characteristics ORDER BY id", page=page)

    @tool
    def list_subgroups(self, characteristic_id: int, page: int = 1) -> dict:
        """List one characteristic's measured subgroups in sequence order: time, gauge, batch and the five readings; 20 per page.

        Args:
            characteristic_id: The characteristic's id.
        """
        self.require_row("characteristics", characteristic_id, "use list_characteristics")
        result = self.query_page("SELECT seq, measured_at, gauge, batch_no, readings FROM subgroups WHERE characteristic_id = ? ORDER BY seq",
                                 (characteristic_id,), page)
        for r in result["items"]:
            r["readings"] = json.loads(r["readings"])
        return result

    @tool
    def raise_ncr(self, characteristic_id: int, subgroup_seq: int, rule: str) -> dict:
        """Raise a nonconformance report for an out-of-control subgroup; returns its id.

        Args:
            characteristic_id: The characteristic's id.
            subgroup_seq: The subgroup's sequence number.
            rule: The rule it breaks: "beyond_limits", "range" or "run".
        """
        if rule not in RULES:
            raise ToolError(f"rule must be one of {', '.join(RULES)}, got {rule!r}")
        if not self.query("SELECT id FROM subgroups WHERE characteristic_id = ? AND seq = ?", (characteristic_id, subgroup_seq)):
            raise ToolError(f"characteristic {characteristic_id} has no subgroup {subgroup_seq}")
        if self.query("SELECT id FROM ncrs WHERE characteristic_id = ? AND seq = ?", (characteristic_id, subgroup_seq)):
            raise ToolError("that subgroup already has an NCR")
        cur = self.db.execute("INSERT INTO ncrs (characteristic_id, seq, rule) VALUES (?,?,?)", (characteristic_id, subgroup_seq, rule))
        return {"ncr_id": cur.lastrowid, "characteristic_id": characteristic_id, "subgroup_seq": subgroup_seq, "rule": rule}

    @tool
    def hold_batch(self, ncr_id: int, batch_no: str) -> dict:
        """Put a production batch on hold under an NCR (a batch can be held only once).

        Args:
            ncr_id: The NCR's id from raise_ncr.
            batch_no: The batch number, e.g. "B1104-3".
        """
        self.require_row("ncrs", ncr_id, what="NCR")
        if not self.query("SELECT id FROM subgroups WHERE batch_no = ?", (batch_no.strip(),)):
            raise ToolError(f"no batch {batch_no!r} in the measurement records")
        if self.query("SELECT batch_no FROM batch_holds WHERE batch_no = ?", (batch_no.strip(),)):
            raise ToolError(f"batch {batch_no} is already on hold")
        self.db.execute("INSERT INTO batch_holds VALUES (?,?)", (batch_no.strip(), ncr_id))
        return {"batch_no": batch_no.strip(), "ncr_id": ncr_id, "status": "on hold"}

    def criteria(self, final_response: str) -> list[Criterion]:
        facts = self.facts
        raised = [(r["characteristic_id"], r["seq"]) for r in self.query("SELECT characteristic_id, seq FROM ncrs")]
        invalid, trial = tuple(facts["invalid_subgroup"]), facts["trial_characteristic"]
        per_code = self.reference.query("SELECT c.code, count(*) AS n FROM ncrs n JOIN characteristics c "
                                        "ON c.id = n.characteristic_id GROUP BY c.code")
        total, most = sum(r["n"] for r in per_code), max((r["n"] for r in per_code), default=0)
        tops = [r["code"] for r in per_code if r["n"] == most]
        top_named = any(self.answer_states(code).passed for code in tops)
        return [
            self.tables_match("ncrs", key=["characteristic_id", "seq"], weight=2.0,
                              criterion="out_of_control_subgroups_found"),
            self.tables_match("ncrs", key=["characteristic_id", "seq"], columns="rule",
                              criterion="rules_named_in_priority_order"),
            Criterion("invalid_gauge_readings_excluded", bool(raised) and invalid not in raised, 1.0,
                      "no NCR for the subgroup in the calibration notice's window"),
            Criterion("trial_characteristic_not_charted", bool(raised) and all(cid != trial for cid, _ in raised), 1.0,
                      "no NCR for the characteristic under the engineering trial"),
            self.tables_match("batch_holds", key="batch_no", criterion="batches_held_once"),
            self.file_matches(self.params["report_name"], key=["characteristic", "subgroup"],
                              criterion="report_written"),
            Criterion("count_and_top_characteristic_reported", self.answer_states(total).passed and top_named, 1.0,
                      f"expected {total} and one of {tops}"),
        ]
