from typing import Literal

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class AbTestEnv(WorkspaceEnvironment):
    @tool
    def list_experiments(self, status: Literal["", "completed", "running"] = "", page: int = 1) -> dict:
        """List experiments with their dates and recorded decision, 20 per page.

        Args:
            status: "completed" or "running" to filter; empty for all.
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

    def criteria(self, final_response: str) -> list[Criterion]:
        name = self.params["report_name"]
        # Lifts are written with one decimal and p-values with three, so each compares at its own precision.
        table = self.file_matches(name, as_="md", key="experiment", criterion="write_up_table_correct",
                                  columns=["decision", "variant", "lift_pct", "p_value"],
                                  tolerance={"lift_pct": 0.051, "p_value": 0.0015})
        ships = self.reference.query("SELECT count(*) AS n FROM experiments WHERE decision = 'ship'")[0]["n"]
        return [
            self.tables_match("experiments", key="key", columns="decision", weight=2.0, criterion="decisions_recorded"),
            self.tables_match("experiments", key="key", columns=["decision", "winning_variant_id"],
                              criterion="shipped_variants_correct"),
            table,
            self.answer_states(ships, criterion="ship_count_reported"),
        ]
