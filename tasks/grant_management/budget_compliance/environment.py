"""Tools and verifier for grant_management/budget_compliance."""
import csv
import io
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class BudgetComplianceEnv(WorkspaceEnvironment):
    @tool
    def list_awards(self, page: int = 1) -> dict:
        """List sponsored awards with sponsor and period of performance, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, award_number, sponsor, pi, start_date, end_date, total_budget FROM awards ORDER BY id", page=page)

    @tool
    def list_expenses(self, award_id: int = 0, page: int = 1) -> dict:
        """List posted expenses, 20 per page. `account` is "grant" while a charge sits on its award.

        Args:
            award_id: Only charges recorded against this award when non-zero.
            page: 1-based page number.
        """
        sql = "SELECT id, award_id, account, posted_on, category, description, po_number, amount FROM expenses"
        if award_id:
            self.require_row("awards", award_id, "use list_awards")
            return self.query_page(sql + " WHERE award_id = ? ORDER BY id", (award_id,), page)
        return self.query_page(sql + " ORDER BY id", page=page)

    @tool
    def transfer_expense(self, expense_id: int, reason: str) -> dict:
        """Move a charge off its award onto the department's account; returns the transfer record.

        Args:
            expense_id: The expense's numeric id.
            reason: Why the charge is unallowable on the award.
        """
        expense = self.require_row("expenses", expense_id, "use list_expenses")
        if expense["account"] != "grant":
            raise ToolError(f"expense {expense_id} is already on the department account")
        if not reason.strip():
            raise ToolError("give a reason for the transfer")
        self.db.execute("UPDATE expenses SET account = 'department' WHERE id = ?", (expense_id,))
        cur = self.db.execute("INSERT INTO transfers (expense_id, from_award_id, reason) VALUES (?,?,?)",
                              (expense_id, expense["award_id"], reason.strip()))
        return {"transfer_id": cur.lastrowid, "expense_id": expense_id, "account": "department"}

    # --- verifier --------------------------------------------------------------------------------
    def expected(self) -> dict[int, dict]:
        f = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        rows = self.query("SELECT e.id, e.posted_on, e.category, e.amount, a.award_number, a.sponsor, a.pi, a.start_date, a.end_date "
                          "FROM expenses e JOIN awards a ON a.id = e.award_id")
        out = {}
        for e in rows:
            if e["id"] == f["moved_earlier"] or e["pi"] == self.params["excluded_pi"] or e["amount"] < self.params["min_amount"]:
                continue
            bad = (not e["start_date"] <= e["posted_on"] <= e["end_date"]) or e["category"] == "hospitality"
            bad = bad or (e["sponsor"] == f["no_equipment"] and e["category"] == "equipment")
            bad = bad or (e["sponsor"] == f["equip_limited"] and e["category"] == "equipment"
                          and e["amount"] > f["equip_threshold"] and e["id"] not in f["approved"])
            bad = bad or (e["sponsor"] == f["travel_limited"] and e["category"] == "travel_international"
                          and e["id"] not in f["approved"])
            if bad:
                out[e["id"]] = {"award": e["award_number"], "amount": e["amount"]}
        return out

    def criteria(self, final_response: str) -> list[Criterion]:
        expected = self.expected()
        moved = {r["expense_id"] for r in self.query("SELECT expense_id FROM transfers")}
        missed = set(expected) - moved
        wrongly = moved - set(expected)
        report_ok, detail = False, f"{self.params['report_name']} not found"
        path = self.workspace / self.params["report_name"]
        if path.is_file():
            try:
                rows = list(csv.DictReader(io.StringIO(path.read_text().strip())))
                got = {int(r["expense_id"]): (r["award_number"].strip(), round(float(r["amount"].replace(",", "").lstrip("$")), 2),
                                              bool(r["reason"].strip())) for r in rows}
                want = {k: (v["award"], round(v["amount"], 2), True) for k, v in expected.items()}
                report_ok = got == want and len(rows) == len(want)
                detail = "matches the expected charges" if report_ok else f"{len(rows)} rows, {len(want)} expected"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                detail = f"cannot parse the report: {exc}"
        total = round(sum(v["amount"] for v in expected.values()), 2)
        per_award = {}
        for v in expected.values():
            per_award[v["award"]] = per_award.get(v["award"], 0) + v["amount"]
        top = max(per_award.values())
        top_awards = {a for a, amount in per_award.items() if abs(amount - top) < 0.005}
        money = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.\d{2}", final_response)]
        return [
            Criterion("every_unallowable_charge_moved", not missed, 2.0, f"{len(missed)} unallowable charges left on awards"),
            Criterion("no_allowable_charge_moved", not wrongly, 1.0, f"{len(wrongly)} allowable charges moved"),
            Criterion("report_written", report_ok, 1.0, detail),
            Criterion("total_reported", any(abs(m - total) < 0.01 for m in money), 1.0, f"expected {total:.2f}"),
            Criterion("top_award_named", any(a in final_response for a in top_awards), 1.0, f"expected {sorted(top_awards)}"),
        ]
