from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

REASONS = ("inactive", "left company")


class AccessReviewEnv(WorkspaceEnvironment):
    @tool
    def list_users(self, page: int = 1) -> dict:
        """List people in the staff directory with employment status (active, on leave, left) and leaving date, 20 per page.
        """
        return self.query_page("SELECT id, username, full_name, department, status, left_on FROM users ORDER BY id", page=page)

    @tool
    def list_systems(self, page: int = 1) -> dict:
        """List the systems in scope of access reviews and their owners, 20 per page."""
        return self.query_page("SELECT id, name, owner FROM systems ORDER BY id", page=page)

    @tool
    def list_accounts(self, system_id: int, page: int = 1) -> dict:
        """List the accounts on one system: name, owning user (null for non-personal accounts), role, created, last login, status; 20 per page.

        Args:
            system_id: The system's id.
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

    def criteria(self, final_response: str) -> list[Criterion]:
        protected = self.facts["protected"]
        acted = {r["account_id"] for r in self.query("SELECT account_id FROM review_actions")}
        reviews = self.query("SELECT COUNT(DISTINCT review_id) AS n FROM review_actions")[0]["n"]
        disabled = self.reference.query("SELECT COUNT(*) AS n FROM review_actions WHERE action = 'disabled'")[0]["n"]
        return [
            self.tables_match("review_actions", key="account_id", where="action = 'disabled'", weight=2.0,
                              criterion="exactly_the_right_accounts_disabled"),
            self.tables_match("review_actions", key="account_id", where="action = 'attestation'",
                              criterion="service_accounts_sent_for_attestation"),
            Criterion("protected_breakglass_untouched", bool(acted) and not acted & set(protected), 1.0,
                      "break-glass accounts on the CISO's systems"),
            self.tables_match("review_actions", key="account_id", columns="reason", criterion="reasons_recorded"),
            Criterion("single_review_used", reviews == 1, 0.5, f"actions recorded on {reviews} reviews"),
            self.file_matches(self.params["report_name"], as_="md", key=["account", "system"],
                              criterion="review_table_written"),
            self.answer_states(disabled, criterion="disabled_count_reported"),
        ]
