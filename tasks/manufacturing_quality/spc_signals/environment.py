"""Tools and verifier for manufacturing_quality/spc_signals."""
import csv
import io
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

RULES = ("beyond_limits", "range", "run")


class SpcEnv(WorkspaceEnvironment):
    @tool
    def list_characteristics(self, page: int = 1) -> dict:
        """List the charted characteristics (code, part, feature, unit, nominal), 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, code, part, name, unit, nominal FROM characteristics ORDER BY id", page=page)

    @tool
    def list_subgroups(self, characteristic_id: int, page: int = 1) -> dict:
        """List one characteristic's measured subgroups in sequence order: time, gauge, batch and the five readings; 20 per page.

        Args:
            characteristic_id: The characteristic's id.
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def criteria(self, final_response: str) -> list[Criterion]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        expected = facts["expected"]
        ncrs = {f"{r['code']}#{r['seq']}": r["rule"] for r in self.query(
            "SELECT c.code, n.seq, n.rule FROM ncrs n JOIN characteristics c ON c.id = n.characteristic_id")}
        held = sorted(r["batch_no"] for r in self.query("SELECT batch_no FROM batch_holds"))
        window_ok = bool(ncrs) and facts["skipped_wild"] not in ncrs
        trial_ok = bool(ncrs) and not any(k.startswith(facts["trial"] + "#") for k in ncrs)
        report_name = self.params["report_name"]
        report_ok, detail = False, f"{report_name} not found"
        path = self.workspace / report_name
        if path.is_file():
            try:
                got = {f"{r['characteristic'].strip()}#{int(r['subgroup'])}": r["rule"].strip() for r in csv.DictReader(io.StringIO(path.read_text().strip()))}
                report_ok = got == expected
                detail = "matches the expected signals" if report_ok else f"{len(got)} rows; {len(expected)} expected"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                detail = f"cannot parse the report: {exc}"
        said = [int(x) for x in re.findall(r"(?<![\d.-])\d+(?![\d.])", final_response)]
        return [
            Criterion("out_of_control_subgroups_found", set(ncrs) == set(expected), 2.0, f"{len(ncrs)} NCRs, {len(expected)} expected (baseline of {self.params['baseline']})"),
            Criterion("rules_named_in_priority_order", ncrs == expected, 1.0, "first rule broken in the procedure's order"),
            Criterion("invalid_gauge_readings_excluded", window_ok, 1.0, "the calibration notice's window"),
            Criterion("trial_characteristic_not_charted", trial_ok, 1.0, "the engineering trial note"),
            Criterion("batches_held_once", held == facts["batches"], 1.0, f"{len(held)} held, {len(facts['batches'])} expected"),
            Criterion("report_written", report_ok, 1.0, detail),
            Criterion("count_and_top_characteristic_reported", len(expected) in said and any(t in final_response for t in facts["top"]), 1.0,
                      f"expected {len(expected)} and one of {facts['top']}"),
        ]
