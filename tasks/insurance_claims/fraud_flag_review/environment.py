from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

STATUSES = ("open", "closed", "with SIU", "all")


class FraudReviewEnv(WorkspaceEnvironment):
    @tool
    def list_claims(self, status: str = "open", page: int = 1) -> dict:
        """List motor claims (claim number, policy, claimant, peril, loss and report dates, amount, repair shop), 20 per page.

        Args:
            status: "open", "closed", "with SIU" or "all".
        """
        if status not in STATUSES:
            raise ToolError(f"status must be one of {', '.join(STATUSES)}, got {status!r}")
        sql = "SELECT id, claim_no, policy_id, claimant_id, peril, loss_date, reported_date, amount, shop_id, status FROM claims"
        return self.query_page(sql + ("" if status == "all" else " WHERE status = ?") + " ORDER BY id",
                               () if status == "all" else (status,), page)

    @tool
    def get_policy(self, policy_id: int) -> dict:
        """Get a motor policy: number, holder and inception date.

        Args:
            policy_id: The policy's id.
        """
        return self.require_row("policies", policy_id, what="policy")

    @tool
    def list_claimants(self, page: int = 1) -> dict:
        """List claimants with their phone number and payout bank account, 20 per page."""
        return self.query_page("SELECT id, name, phone, bank_account FROM claimants ORDER BY id", page=page)

    @tool
    def list_repair_shops(self, page: int = 1) -> dict:
        """List the repair shops used on claims, 20 per page."""
        return self.query_page("SELECT id, name, town FROM repair_shops ORDER BY id", page=page)

    @tool
    def flag_claim(self, claim_id: int, score: int) -> dict:
        """Flag an open claim as suspicious with its indicator score; returns the flag id.

        Args:
            claim_id: The open claim's id.
            score: Total indicator points.
        """
        claim = self.query("SELECT id, status FROM claims WHERE id = ?", (claim_id,))
        if not claim or claim[0]["status"] != "open":
            raise ToolError(f"claim {claim_id} does not exist or is not open")
        if self.query("SELECT id FROM flags WHERE claim_id = ?", (claim_id,)):
            raise ToolError(f"claim {claim_id} is already flagged")
        cur = self.db.execute("INSERT INTO flags (claim_id, score) VALUES (?,?)", (claim_id, score))
        return {"flag_id": cur.lastrowid, "claim_id": claim_id, "score": score}

    @tool
    def refer_to_siu(self, flag_id: int, note: str = "") -> dict:
        """Refer a flagged claim to the special investigations unit.

        Args:
            flag_id: The id returned by flag_claim.
            note: Optional note for the investigator.
        """
        self.require_row("flags", flag_id, "flag the claim first")
        if self.query("SELECT id FROM referrals WHERE flag_id = ?", (flag_id,)):
            raise ToolError(f"flag {flag_id} has already been referred")
        cur = self.db.execute("INSERT INTO referrals (flag_id, note) VALUES (?,?)", (flag_id, note))
        return {"referral_id": cur.lastrowid, "flag_id": flag_id}

    def criteria(self, final_response: str) -> list[Criterion]:
        flagged = "flags f JOIN claims c ON c.id = f.claim_id"
        referred = "referrals r JOIN flags f ON f.id = r.flag_id JOIN claims c ON c.id = f.claim_id"
        cleared = self.facts["cleared"]
        mine = {r["claim_no"]: r["status"] for r in self.query(f"SELECT c.claim_no, c.status FROM {flagged}")}
        left_alone = bool(mine) and cleared not in mine and "with SIU" not in mine.values()
        # the oracle flags in rank order, so its first flag is the top-ranked claim
        top = self.reference.query(f"SELECT c.claim_no FROM {flagged} ORDER BY f.id LIMIT 1")[0]["claim_no"]
        count = self.reference.query("SELECT COUNT(*) AS n FROM referrals")[0]["n"]
        return [
            self.tables_match(flagged, key="c.claim_no", weight=2.0, criterion="exactly_the_threshold_claims_flagged"),
            self.tables_match(flagged, key="c.claim_no", columns="f.score", weight=2.0,
                              criterion="indicator_scores_correct"),
            Criterion("cleared_and_siu_claims_left_alone", left_alone, 1.0,
                      f"{cleared}, cleared by a senior handler, and the claim already with SIU stay unflagged"),
            self.tables_match(referred, key="c.claim_no", weight=2.0, criterion="top_ranked_referred_within_capacity"),
            self.file_matches(self.params["report_name"], as_="md", key="rank", criterion="ranking_written"),
            self.answer_states([top, count], criterion="top_claim_and_count_reported"),
        ]
