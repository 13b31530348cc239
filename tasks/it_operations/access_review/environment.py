"""Tools and verifier for it_operations/access_review."""
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

REASONS = ("inactive", "left company")


class AccessReviewEnv(WorkspaceEnvironment):
    @tool
    def list_users(self, page: int = 1) -> dict:
        """List people in the staff directory with employment status (active, on leave, left) and leaving date, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, username, full_name, department, status, left_on FROM users ORDER BY id", page=page)

    @tool
    def list_systems(self, page: int = 1) -> dict:
        """List the systems in scope of access reviews and their owners, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, name, owner FROM systems ORDER BY id", page=page)

    @tool
    def list_accounts(self, system_id: int, page: int = 1) -> dict:
        """List the accounts on one system: name, owning user (null for non-personal accounts), role, created, last login, status; 20 per page.

        Args:
            system_id: The system's id.
            page: 1-based page number.
        """
        self.require_row("systems", system_id, "use list_systems")
        return self.query_page("SELECT id, account_name, user_id, role, created, last_login, status FROM accounts "
                               "WHERE system_id = ? ORDER BY account_name, id", (system_id,), page)

    @tool
    def open_review(self, name: str) -> dict:
        """Open an access review campaign; actions are recorded against its id.

        Args:
            name: A name for the review, e.g. "Q4 2026 access review".
        """
        cur = self.db.execute("INSERT INTO reviews (name, opened) VALUES (?, '2026-11-30')", (name.strip() or "access review",))
        return {"review_id": cur.lastrowid, "name": name.strip()}

    def _act(self, review_id: int, account_id: int, action: str, reason: str) -> dict:
        self.require_row("reviews", review_id, "open one with open_review")
        acc = self.require_row("accounts", account_id, "use list_accounts")
        if acc["status"] != "active":
            raise ToolError(f"account {account_id} is already {acc['status']}")
        if self.query("SELECT id FROM review_actions WHERE account_id = ?", (account_id,)):
            raise ToolError(f"account {account_id} has already been handled in a review")
        if reason not in REASONS:
            raise ToolError(f"reason must be one of {', '.join(REASONS)}, got {reason!r}")
        cur = self.db.execute("INSERT INTO review_actions (review_id, account_id, action, reason) VALUES (?,?,?,?)",
                              (review_id, account_id, action, reason))
        if action == "disabled":
            self.db.execute("UPDATE accounts SET status = 'disabled' WHERE id = ?", (account_id,))
        return {"action_id": cur.lastrowid, "account_id": account_id, "action": action, "reason": reason}

    @tool
    def disable_account(self, review_id: int, account_id: int, reason: str) -> dict:
        """Disable an account as part of a review.

        Args:
            review_id: The review's id from open_review.
            account_id: The account to disable.
            reason: "inactive" or "left company".
        """
        return self._act(review_id, account_id, "disabled", reason)

    @tool
    def request_attestation(self, review_id: int, account_id: int, reason: str) -> dict:
        """Ask the system owner to attest that an account is still needed, instead of disabling it.

        Args:
            review_id: The review's id from open_review.
            account_id: The account concerned.
            reason: Why it was flagged: "inactive" or "left company".
        """
        return self._act(review_id, account_id, "attestation", reason)

    # --- verifier --------------------------------------------------------------------------------
    def criteria(self, final_response: str) -> list[Criterion]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        # The generator worked out the expected actions for this instance's parameters (system and department
        # left out); the table's file name is checked here.
        expected = {int(k): tuple(v) for k, v in facts["expected"].items()}
        acts = {r["account_id"]: (r["action"], r["reason"]) for r in self.query("SELECT account_id, action, reason FROM review_actions")}
        reviews = {r["review_id"] for r in self.query("SELECT DISTINCT review_id FROM review_actions")}
        disabled_want = {k for k, v in expected.items() if v[0] == "disabled"}
        disabled_got = {k for k, v in acts.items() if v[0] == "disabled"}
        attest_ok = {k for k, v in acts.items() if v[0] == "attestation"} == {k for k, v in expected.items() if v[0] == "attestation"}
        protected_ok = bool(acts) and not set(facts["protected"]) & set(acts)
        reasons_ok = set(acts) == set(expected) and all(acts[k][1] == v[1] for k, v in expected.items())

        names = {r["id"]: (r["account_name"], r["system"]) for r in self.query(
            "SELECT a.id, a.account_name, s.name AS system FROM accounts a JOIN systems s ON s.id = a.system_id")}
        report_ok, detail = False, f"{self.params['report_name']} not found"
        path = self.workspace / self.params["report_name"]
        if path.is_file():
            got = set()
            for line in path.read_text().splitlines():
                cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
                if len(cells) == 4 and cells[2].lower() in ("disabled", "attestation"):
                    got.add((cells[0], cells[1], cells[2].lower(), cells[3].lower()))
            want = {(*names[k], v[0], v[1]) for k, v in expected.items()}
            report_ok = got == want
            detail = "table matches the expected actions" if report_ok else f"{len(got)} table rows; {len(want)} expected"
        said = [int(x) for x in re.findall(r"(?<![\d.])\d+(?![\d.])", final_response)]
        return [
            Criterion("exactly_the_right_accounts_disabled", disabled_got == disabled_want, 2.0, f"{len(disabled_got)} disabled, {len(disabled_want)} expected (nothing on {self.params['skipped_system']} "
                      f"or of {self.params['skipped_department']} staff)"),
            Criterion("service_accounts_sent_for_attestation", attest_ok, 1.0, "stale svc- accounts go to their owners"),
            Criterion("protected_breakglass_untouched", protected_ok, 1.0, "break-glass accounts on the CISO's systems"),
            Criterion("reasons_recorded", reasons_ok, 1.0, "left company beats inactivity"),
            Criterion("single_review_used", len(reviews) == 1, 0.5, f"actions recorded on {len(reviews)} reviews"),
            Criterion("review_table_written", report_ok, 1.0, detail),
            Criterion("disabled_count_reported", len(disabled_want) in said, 1.0, f"expected {len(disabled_want)} disabled"),
        ]
