import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class BudgetReallocationEnv(WorkspaceEnvironment):
    @tool
    def list_campaigns(self, page: int = 1) -> dict:
        """List paid campaigns with channel, status and monthly budget, 20 per page."""
        return self.query_page("SELECT id, name, channel, market, status, monthly_budget FROM campaigns ORDER BY id", page=page)

    @tool
    def list_weekly_metrics(self, campaign_id: int = 0, week_from: str = "", page: int = 1) -> dict:
        """List weekly performance rows (spend, revenue, conversions), 20 per page, in no particular order.

        Args:
            campaign_id: Only this campaign's weeks when non-zero.
            week_from: Only weeks starting on or after this date ("YYYY-MM-DD") when non-empty.
        """
        if week_from and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", week_from):
            raise ToolError(f"week_from must look like 2026-10-05, got {week_from!r}")
        filters = [(clause, value) for clause, value in (("campaign_id = ?", campaign_id), ("week_start >= ?", week_from))
                   if value]
        where = " WHERE " + " AND ".join(clause for clause, _ in filters) if filters else ""
        return self.query_page(f"SELECT campaign_id, week_start, spend, revenue, conversions FROM weekly_metrics{where} "
                               "ORDER BY id", tuple(value for _, value in filters), page)

    @tool
    def set_campaign_budget(self, campaign_id: int, new_budget: float, note: str = "") -> dict:
        """Change a campaign's monthly budget; returns the change record.

        Args:
            campaign_id: The campaign's numeric id.
            new_budget: The new monthly budget in euros (zero or more).
            note: Optional reason kept with the change.
        """
        campaign = self.require_row("campaigns", campaign_id, "use list_campaigns")
        if campaign["status"] != "active":
            raise ToolError(f"campaign {campaign_id} is {campaign['status']}; only active campaigns have budgets to change")
        if new_budget < 0:
            raise ToolError("the budget cannot be negative")
        self.db.execute("UPDATE campaigns SET monthly_budget = ? WHERE id = ?", (round(new_budget, 2), campaign_id))
        cur = self.db.execute("INSERT INTO budget_changes (campaign_id, old_budget, new_budget, note) VALUES (?,?,?,?)",
                              (campaign_id, campaign["monthly_budget"], round(new_budget, 2), note))
        return {"change_id": cur.lastrowid, "campaign_id": campaign_id, "old_budget": campaign["monthly_budget"],
                "new_budget": round(new_budget, 2)}

    def criteria(self, final_response: str) -> list[Criterion]:
        # Each changed campaign beside its budget before the first change.
        changed = "campaigns c JOIN budget_changes o " \
                  "ON o.id = (SELECT min(id) FROM budget_changes WHERE campaign_id = c.id)"
        moved = self.reference.query(f"SELECT sum(o.old_budget - c.monthly_budget) AS pool FROM {changed} "
                                     "WHERE c.monthly_budget < o.old_budget")[0]["pool"] or 0.0
        return [
            self.tables_match(changed, key="c.id", where="c.monthly_budget < o.old_budget - 0.004", weight=2.0,
                              criterion="right_campaigns_cut"),
            self.tables_match(changed, key="c.id", where="c.monthly_budget > o.old_budget + 0.004",
                              criterion="right_campaigns_topped_up"),
            self.tables_match(changed, key="c.id", columns="c.monthly_budget", tolerance=0.005,
                              where="abs(c.monthly_budget - o.old_budget) > 0.004", criterion="budget_amounts_correct"),
            self.file_matches(self.params["report_name"], key="campaign", criterion="report_written"),
            self.answer_states(round(moved, 2), criterion="moved_amount_reported"),
        ]
