from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class BudgetComplianceEnv(WorkspaceEnvironment):
    @tool
    def list_awards(self, page: int = 1) -> dict:
        """List sponsored awards with sponsor and period of performance, 20 per page."""
        return self.query_page("SELECT id, award_number, sponsor, pi, start_date, end_date, total_budget FROM awards ORDER BY id", page=page)

    @tool
    def list_expenses(self, award_id: int = 0, page: int = 1) -> dict:
        """List posted expenses, 20 per page. `account` is "grant" while a charge sits on its award.

        Args:
            award_id: Only charges recorded against this award when non-zero.
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

    def criteria(self, final_response: str) -> list[Criterion]:
        moved = self.reference.query("SELECT e.id, a.award_number, e.amount FROM transfers t JOIN expenses e ON "
                                     "e.id = t.expense_id JOIN awards a ON a.id = t.from_award_id")
        unallowable = f"id IN ({', '.join(str(e['id']) for e in moved)})"
        per_award: dict[str, float] = {}
        for e in moved:
            per_award[e["award_number"]] = per_award.get(e["award_number"], 0.0) + e["amount"]
        return [
            self.tables_match("expenses", key="id", columns="account", where=unallowable, weight=2.0,
                              criterion="every_unallowable_charge_moved"),
            self.tables_match("expenses", key="id", columns="account", where=f"NOT {unallowable}",
                              criterion="no_allowable_charge_moved"),
            self.file_matches(self.params["report_name"], key="expense_id", columns=["award_number", "amount"]),
            self.answer_states(round(sum(per_award.values()), 2), criterion="total_reported"),
            self.answer_states(max(per_award, key=per_award.get), criterion="top_award_named"),
        ]
