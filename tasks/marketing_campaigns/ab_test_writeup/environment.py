"""Tools and verifier for marketing_campaigns/ab_test_writeup."""
import json
import math
import re
from typing import Literal

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


def two_proportion_p(conv_a: int, n_a: int, conv_b: int, n_b: int) -> float:
    pooled = (conv_a + conv_b) / (n_a + n_b)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n_a + 1 / n_b))
    return math.erfc(abs(conv_b / n_b - conv_a / n_a) / se / math.sqrt(2)) if se else 1.0


class AbTestEnv(WorkspaceEnvironment):
    @tool
    def list_experiments(self, status: Literal["", "completed", "running"] = "", page: int = 1) -> dict:
        """List experiments with their dates and recorded decision, 20 per page.

        Args:
            status: "completed" or "running" to filter; empty for all.
            page: 1-based page number.
        """
        sql = "SELECT id, key, name, status, start_date, end_date, decision, winning_variant_id FROM experiments"
        where, args = (" WHERE status = ?", (status,)) if status else ("", ())
        return self.query_page(sql + where + " ORDER BY id", args, page)

    @tool
    def list_variants(self, experiment_id: int) -> list:
        """List the variants (arms) of one experiment.

        Args:
            experiment_id: The experiment's numeric id.
        """
        rows = self.query("SELECT id, name, is_control FROM variants WHERE experiment_id = ? ORDER BY id", (experiment_id,))
        if not rows:
            raise ToolError(f"no experiment with id {experiment_id}")
        return rows

    @tool
    def list_daily_results(self, experiment_id: int, page: int = 1) -> dict:
        """List one experiment's daily results per variant and device (visitors, conversions, revenue), 20 per page.

        Args:
            experiment_id: The experiment's numeric id.
            page: 1-based page number.
        """
        self.require_row("experiments", experiment_id, "use list_experiments")
        return self.query_page("SELECT variant_id, day, device, visitors, conversions, revenue FROM daily_results "
                               "WHERE experiment_id = ? ORDER BY id", (experiment_id,), page)

    @tool
    def record_decision(self, experiment_id: int, decision: Literal["ship", "keep_control"], variant_id: int = 0) -> dict:
        """Record the outcome of a completed experiment in the tracker.

        Args:
            experiment_id: The experiment's numeric id.
            decision: "ship" or "keep_control".
            variant_id: The treatment variant to ship; required for "ship", 0 for "keep_control".
        """
        exp = self.require_row("experiments", experiment_id, "use list_experiments")
        if exp["status"] != "completed":
            raise ToolError(f"experiment {experiment_id} is still {exp['status']}; only completed tests get a decision")
        if decision == "ship":
            arm = self.query("SELECT is_control FROM variants WHERE id = ? AND experiment_id = ?", (variant_id, experiment_id))
            if not arm or arm[0]["is_control"]:
                raise ToolError("to ship, give the id of one of this experiment's treatment variants")
        self.db.execute("UPDATE experiments SET decision = ?, winning_variant_id = ? WHERE id = ?",
                        (decision, variant_id if decision == "ship" else None, experiment_id))
        return {"experiment_id": experiment_id, "decision": decision, "variant_id": variant_id or None}

    # --- verifier --------------------------------------------------------------------------------
    def expected(self) -> dict[str, dict]:
        f = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        dropped = {(k, d) for k, d in f["incidents"]}
        out = {}
        for e in self.query("SELECT id, key FROM experiments WHERE status = 'completed' AND end_date >= '2026-11-01' "
                            "AND end_date <= '2026-11-30' AND key != ?", (self.params["held_out"],)):
            arms = {v["id"]: v for v in self.query("SELECT id, name, is_control FROM variants WHERE experiment_id = ?", (e["id"],))}
            totals = {vid: [0, 0, 0.0] for vid in arms}
            for r in self.query("SELECT variant_id, day, visitors, conversions, revenue FROM daily_results WHERE experiment_id = ?", (e["id"],)):
                if (e["key"], r["day"]) in dropped:
                    continue
                t = totals[r["variant_id"]]
                t[0], t[1], t[2] = t[0] + r["visitors"], t[1] + r["conversions"], t[2] + r["revenue"]
            control = next(v for v in arms if arms[v]["is_control"])
            cn, cc, cr = totals[control]
            treatments = [v for v in arms if v != control]
            threshold = f["alpha"] / len(treatments)
            stats = []
            for v in treatments:
                n, c, rev = totals[v]
                lift = (c / n - cc / cn) / (cc / cn) * 100
                p = two_proportion_p(cc, cn, c, n)
                passes = rev / n >= cr / cn * (1 - f["guardrail_pct"] / 100)
                stats.append({"variant_id": v, "name": arms[v]["name"], "lift": lift, "p": p, "ok": p < threshold and lift > 0 and passes})
            winners = [s for s in stats if s["ok"]]
            best = max(winners or stats, key=lambda s: s["lift"])
            out[e["key"]] = {"experiment_id": e["id"], "ship": bool(winners), **best}
        return out

    def criteria(self, final_response: str) -> list[Criterion]:
        expected = self.expected()
        recorded = {e["key"]: e for e in self.query("SELECT key, decision, winning_variant_id FROM experiments")}
        decisions_ok = all(recorded[k]["decision"] == ("ship" if v["ship"] else "keep_control") for k, v in expected.items())
        variants_ok = decisions_ok and all(recorded[k]["winning_variant_id"] == v["variant_id"] for k, v in expected.items() if v["ship"])
        others_untouched = all(r["decision"] is None for k, r in recorded.items() if k not in expected)
        report_name, held_out = self.params["report_name"], self.params["held_out"]
        rows, detail, held_listed = {}, f"{report_name} not found", False
        path = self.workspace / report_name
        if path.is_file():
            for line in path.read_text().splitlines():
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                if len(cells) == 5 and cells[0] in expected:
                    rows[cells[0]] = cells
                held_listed = held_listed or cells[0] == held_out
            detail = f"{len(rows)} of {len(expected)} tests in the table" + (f"; {held_out} should be left out" if held_listed else "")
        table_ok = set(rows) == set(expected) and not held_listed
        for k, v in expected.items():
            if not table_ok:
                break
            _, decision, variant, lift, p = rows[k]
            try:
                table_ok = (decision.lower() == ("ship" if v["ship"] else "keep_control")
                            and (variant == v["name"] if v["ship"] else variant in ("", "-", "—"))
                            and abs(float(lift.rstrip("%")) - v["lift"]) <= 0.051 and abs(float(p) - v["p"]) <= 0.0015)
            except ValueError:
                table_ok = False
        ships = sum(v["ship"] for v in expected.values())
        counts = {int(n) for n in re.findall(r"(?<![\d.\-])\d+(?![\d.])", final_response)}
        return [
            Criterion("decisions_recorded", decisions_ok and others_untouched, 2.0,
                      f"{len(expected)} November tests; {self.params['held_out']}, running and earlier tests left alone"),
            Criterion("shipped_variants_correct", variants_ok, 1.0, "the significant, guardrail-passing treatment with the highest lift"),
            Criterion("write_up_table_correct", table_ok, 1.0, detail),
            Criterion("ship_count_reported", ships in counts, 1.0, f"expected {ships}"),
        ]
