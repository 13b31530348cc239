"""Tools and verifier for legal_contracts/renewal_notices."""
import csv
import io
import json
import re
from datetime import date, timedelta
from typing import Literal

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


def _add_months(d: date, months: int) -> date:
    y, m = divmod(d.month - 1 + months, 12)
    day = d.day
    while day > 28:  # clamp to the last day of a shorter month
        try:
            return date(d.year + y, m + 1, day)
        except ValueError:
            day -= 1
    return date(d.year + y, m + 1, day)


class RenewalNoticesEnv(WorkspaceEnvironment):
    @tool
    def list_contracts(self, page: int = 1, status: Literal["", "active", "terminated"] = "") -> dict:
        """List contracts in the register with their original terms, 20 per page.

        Args:
            page: 1-based page number.
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
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def _due(self) -> tuple[dict, dict]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        today = date.fromisoformat(facts["today"])
        notice_override = {}
        for a in self.query("SELECT a.contract_id, n.notice_days FROM amendments a JOIN _notice_changes n "
                            "ON n.amendment_id = a.id ORDER BY a.signed_on, a.id"):
            notice_override[a["contract_id"]] = a["notice_days"]
        parties = {p["id"]: p for p in self.query("SELECT * FROM counterparties")}
        due = {}
        for c in self.query("SELECT * FROM contracts WHERE status = 'active' AND auto_renew = 1"):
            end = _add_months(date.fromisoformat(c["start_date"]), c["initial_term_months"])
            months = c["initial_term_months"]
            while end <= today:
                months += c["renewal_term_months"]
                end = _add_months(date.fromisoformat(c["start_date"]), months)
            deadline = end - timedelta(days=notice_override.get(c["id"], c["notice_days"]))
            party = parties[c["counterparty_id"]]
            if party["country"] == facts["buffer_country"]:
                deadline -= timedelta(days=facts["buffer_days"])
            in_scope = c["annual_value"] >= self.params["min_value"] and c["title"] != f"{self.params['renegotiated']} agreement"
            if today <= deadline <= today + timedelta(days=facts["window"]) and c["contract_no"] not in facts["kept"] and in_scope:
                due[c["id"]] = {"contract_no": c["contract_no"], "counterparty": party["name"], "email": party["legal_email"],
                                "term_end": end.isoformat(), "deadline": deadline.isoformat()}
        return due, facts

    def criteria(self, final_response: str) -> list[Criterion]:
        due, facts = self._due()
        notices = self.query("SELECT n.*, c.contract_no FROM notices n JOIN contracts c ON c.id = n.contract_id")
        by_contract = {n["contract_id"]: n for n in notices}
        right_set = set(by_contract) == set(due)
        kept_spared = not any(n["contract_no"] in facts["kept"] for n in notices)
        deadlines_ok = all(k in by_contract and by_contract[k]["notice_deadline"] == d["deadline"] for k, d in due.items())
        sent_ok = all(k in by_contract and by_contract[k]["status"] == "sent" and
                      (by_contract[k]["recipient"] or "").strip().lower() == d["email"] for k, d in due.items())

        report_name = self.params["report_name"]
        report_ok, detail = False, f"{report_name} not found"
        path = self.workspace / report_name
        if path.is_file():
            try:
                rows = list(csv.DictReader(io.StringIO(path.read_text().strip())))
                got = {r["contract_no"].strip(): (r["counterparty"].strip(), r["term_end"].strip(), r["notice_deadline"].strip())
                       for r in rows}
                want = {d["contract_no"]: (d["counterparty"], d["term_end"], d["deadline"]) for d in due.values()}
                report_ok = got == want and len(rows) == len(want)
                detail = "matches the due notices" if report_ok else f"{len(rows)} rows; differs from the {len(want)} due notices"
            except (KeyError, AttributeError, csv.Error) as exc:
                detail = f"cannot parse the report: {exc}"

        earliest = min((d["deadline"] for d in due.values()), default=None)
        urgent = {d["contract_no"] for d in due.values() if d["deadline"] == earliest}
        named = re.findall(r"C-\d{5}", final_response)
        urgent_ok = bool(named) and named[0] in urgent  # the first contract the answer names
        return [
            Criterion("notices_for_exactly_the_due_contracts", right_set, 2.0, f"{len(by_contract)} notices, {len(due)} due (worth at least "
                      f"{self.params['min_value']} a year, {self.params['renegotiated']} agreements left alone)"),
            Criterion("kept_contracts_spared", kept_spared, 1.0, "no notice for contracts the business keeps"),
            Criterion("notice_deadlines_correct", deadlines_ok, 1.0, "amended notice periods and local-counsel buffer applied"),
            Criterion("sent_to_legal_contacts", sent_ok, 1.0, "every due notice sent to the counterparty's legal address"),
            Criterion("report_written", report_ok, 1.0, detail),
            Criterion("most_urgent_named", urgent_ok, 1.0, f"expected one of {sorted(urgent)}"),
        ]
