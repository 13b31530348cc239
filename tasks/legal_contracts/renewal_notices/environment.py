import re
from datetime import date
from typing import Literal

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class RenewalNoticesEnv(WorkspaceEnvironment):
    @tool
    def list_contracts(self, page: int = 1, status: Literal["", "active", "terminated"] = "") -> dict:
        """List contracts in the register with their original terms, 20 per page.

        Args:
            status: Only contracts with this status ("active" or "terminated") when non-empty.
        """
        result = self.query_page(
            "SELECT id, contract_no, counterparty_id, title, start_date, initial_term_months, auto_renew, "
            "renewal_term_months, notice_days, annual_value, status FROM contracts"
            + (" WHERE status = ?" if status else "") + " ORDER BY id", (status,) if status else (), page)
        for r in result["items"]:
            r["auto_renew"] = bool(r["auto_renew"])
        return result

    @tool
    def get_counterparty(self, counterparty_id: int) -> dict:
        """Get a counterparty's name, country and legal contact address.

        Args:
            counterparty_id: The counterparty's numeric id.
        """
        return self.require_row("counterparties", counterparty_id, "use the counterparty_id of a contract", what="counterparty")

    @tool
    def list_amendments(self, page: int = 1, contract_id: int = 0) -> dict:
        """List signed contract amendments in signing order, 20 per page.

        Args:
            contract_id: Only amendments of this contract when non-zero.
        """
        where = " WHERE contract_id = ?" if contract_id else ""
        return self.query_page("SELECT id, contract_id, signed_on, clause, summary FROM amendments" + where +
                               " ORDER BY signed_on, id", (contract_id,) if contract_id else (), page)

    @tool
    def create_notice(self, contract_id: int, notice_deadline: str) -> dict:
        """Raise a draft non-renewal notice for a contract; returns the notice with its id.

        Args:
            contract_id: The contract the notice terminates at the end of its current term.
            notice_deadline: The date (YYYY-MM-DD) by which the counterparty must receive the notice.
        """
        try:
            date.fromisoformat(notice_deadline)
        except (TypeError, ValueError):
            raise ToolError(f"notice_deadline must be a date as YYYY-MM-DD, got {notice_deadline!r}") from None
        contract = self.require_row("contracts", contract_id, "use list_contracts")
        if contract["status"] != "active":
            raise ToolError(f"contract {contract_id} is not active; only active contracts can receive a notice")
        existing = self.query("SELECT id FROM notices WHERE contract_id = ?", (contract_id,))
        if existing:
            raise ToolError(f"contract {contract_id} already has notice {existing[0]['id']}; do not raise it twice")
        cur = self.db.execute("INSERT INTO notices (contract_id, notice_deadline, status) VALUES (?, ?, 'draft')",
                              (contract_id, notice_deadline))
        return {"notice_id": cur.lastrowid, "contract_id": contract_id, "notice_deadline": notice_deadline, "status": "draft"}

    @tool
    def send_notice(self, notice_id: int, recipient_email: str) -> dict:
        """Send a draft notice to the given e-mail address.

        Args:
            notice_id: The id returned by create_notice.
            recipient_email: Where the notice is sent.
        """
        notice = self.require_row("notices", notice_id, "create it first with create_notice")
        if notice["status"] != "draft":
            raise ToolError(f"notice {notice_id} was already sent")
        if "@" not in recipient_email:
            raise ToolError(f"recipient_email must be an e-mail address, got {recipient_email!r}")
        self.db.execute("UPDATE notices SET status = 'sent', recipient = ? WHERE id = ?", (recipient_email, notice_id))
        return {"notice_id": notice_id, "status": "sent", "recipient": recipient_email}

    def criteria(self, final_response: str) -> list[Criterion]:
        notices = "notices n JOIN contracts c ON c.id = n.contract_id"
        kept = self.facts["kept"]
        spared = not [r for r in self.query(f"SELECT c.contract_no FROM {notices}") if r["contract_no"] in kept]
        first = "n.notice_deadline = (SELECT MIN(notice_deadline) FROM notices)"
        urgent = {r["contract_no"] for r in self.reference.query(f"SELECT c.contract_no FROM {notices} WHERE {first}")}
        # by hand: the first contract the answer names is the most urgent one
        named = re.findall(r"C-\d{5}", final_response)
        return [
            self.tables_match(notices, key="c.contract_no", weight=2.0,
                              criterion="notices_for_exactly_the_due_contracts"),
            Criterion("kept_contracts_spared", spared, 1.0, "no notice for contracts the business keeps"),
            self.tables_match(notices, key="c.contract_no", columns="n.notice_deadline",
                              criterion="notice_deadlines_correct"),
            self.tables_match(notices, key="c.contract_no", columns=["n.status", "n.recipient"],
                              criterion="sent_to_legal_contacts"),
            self.file_matches(self.params["report_name"], as_="csv", key="contract_no", criterion="report_written"),
            Criterion("most_urgent_named", bool(named) and named[0] in urgent, 1.0,
                      f"expected one of {sorted(urgent)}"),
        ]
