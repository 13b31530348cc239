"""Tools and verifier for marketing_campaigns/budget_reallocation."""
import csv
import io
import json
import math
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class BudgetReallocationEnv(WorkspaceEnvironment):
    @tool
    def list_campaigns(self, page: int = 1) -> dict:
        """List paid campaigns with channel, status and monthly budget, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, name, channel, market, status, monthly_budget FROM campaigns ORDER BY id", page=page)

    @tool
    def list_weekly_metrics(self, campaign_id: int = 0, week_from: str = "", page: int = 1) -> dict:
        """List weekly performance rows (spend, revenue, conversions), 20 per page, in no particular order.

        Args:
            campaign_id: Only this campaign's weeks when non-zero.
            week_from: Only weeks starting on or after this date ("YYYY-MM-DD") when non-empty.
            page: 1-based page number.
        """
        if week_from and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", week_from):
            raise ToolError(f"week_from must look like 2026-10-05, got {week_from!r}")
        clauses, params = [], []
        if campaign_id:
            clauses.append("campaign_id = ?")
            params.append(campaign_id)
        if week_from:
            clauses.append("week_start >= ?")
            params.append(week_from)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        return self.query_page(f"SELECT campaign_id, week_start, spend, revenue, conversions FROM weekly_metrics{where} ORDER BY id",
                               tuple(params), page)

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

    # --- verifier --------------------------------------------------------------------------------
    def expected(self) -> tuple[dict[int, tuple[float, float]], float]:
        f = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        # The original budgets: the first recorded old_budget of a changed campaign, else the current one.
        budgets = {c["id"]: c["monthly_budget"] for c in self.query("SELECT id, monthly_budget FROM campaigns")}
        for ch in self.query("SELECT campaign_id, old_budget FROM budget_changes ORDER BY id DESC"):
            budgets[ch["campaign_id"]] = ch["old_budget"]
        totals = {}
        for m in self.query("SELECT campaign_id, spend, revenue, conversions FROM weekly_metrics WHERE week_start >= ?", (f["window_start"],)):
            t = totals.setdefault(m["campaign_id"], [0.0, 0.0, 0])
            t[0] += m["spend"]
            t[1] += m["revenue"]
            t[2] += m["conversions"]
        eligible = [c["id"] for c in self.query("SELECT id FROM campaigns WHERE status = 'active' AND channel != 'brand'")
                    if c["id"] != f["paused"]]
        order = sorted(eligible, key=lambda c: (-round((totals[c][1] - totals[c][0]) / totals[c][0] * 100), -totals[c][2]))
        changes = {}
        pool = 0.0
        for c in order[-f["cut_count"]:]:
            cut = round(budgets[c] * f["cut_pct"] / 100, 2)
            pool = round(pool + cut, 2)
            changes[c] = (budgets[c], round(budgets[c] - cut, 2))
        share = math.floor(pool / f["top_count"] * 100 + 1e-6) / 100
        leftover = round(pool - share * f["top_count"], 2)
        for rank, c in enumerate(order[:f["top_count"]]):
            changes[c] = (budgets[c], round(budgets[c] + share + (leftover if rank == 0 else 0), 2))
        return changes, pool

    def criteria(self, final_response: str) -> list[Criterion]:
        changes, pool = self.expected()
        names = {c["id"]: c["name"] for c in self.query("SELECT id, name FROM campaigns")}
        current = {c["id"]: c["monthly_budget"] for c in self.query("SELECT id, monthly_budget FROM campaigns")}
        touched = {r["campaign_id"] for r in self.query("SELECT DISTINCT campaign_id FROM budget_changes")}
        originals = {}
        for ch in self.query("SELECT campaign_id, old_budget FROM budget_changes ORDER BY id DESC"):
            originals[ch["campaign_id"]] = ch["old_budget"]
        really_changed = {c for c in touched if abs(current[c] - originals[c]) > 0.004}
        cuts = {c for c, (old, new) in changes.items() if new < old}
        tops = set(changes) - cuts
        decreased = {c for c in really_changed if current[c] < originals[c]}
        increased = really_changed - decreased
        amounts_ok = really_changed == set(changes) and all(abs(current[c] - changes[c][1]) < 0.005 for c in changes)
        report_name = self.params["report_name"]
        report_ok, detail = False, f"{report_name} not found"
        path = self.workspace / report_name
        if path.is_file():
            try:
                rows = list(csv.DictReader(io.StringIO(path.read_text().strip())))
                got = {r["campaign"].strip(): (round(float(r["old_budget"].replace(",", "")), 2), round(float(r["new_budget"].replace(",", "")), 2))
                       for r in rows}
                want = {names[c]: (round(o, 2), round(n, 2)) for c, (o, n) in changes.items()}
                report_ok = got == want and len(rows) == len(want)
                detail = "matches the expected changes" if report_ok else f"{len(rows)} rows, {len(want)} expected"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                detail = f"cannot parse the report: {exc}"
        money = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.\d{2}", final_response)]
        return [
            Criterion("right_campaigns_cut", decreased == cuts, 2.0,
                      f"{len(decreased)} budgets cut, {len(cuts)} expected (lowest-ranked, exemptions and ties applied)"),
            Criterion("right_campaigns_topped_up", increased == tops, 1.0, f"{len(increased)} budgets raised, {len(tops)} expected"),
            Criterion("budget_amounts_correct", amounts_ok, 1.0,
                      "cut by the memo's percentage; pool split equally, rounded down, leftover cents to the top campaign"),
            Criterion("report_written", report_ok, 1.0, detail),
            Criterion("moved_amount_reported", any(abs(m - pool) < 0.01 for m in money), 1.0, f"expected {pool:.2f}"),
        ]
