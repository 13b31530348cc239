"""Tools and verifier for insurance_claims/fraud_flag_review."""
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

STATUSES = ("open", "closed", "with SIU", "all")


class FraudReviewEnv(WorkspaceEnvironment):
    @tool
    def list_claims(self, status: str = "open", page: int = 1) -> dict:
        """List motor claims (claim number, policy, claimant, peril, loss and report dates, amount, repair shop), 20 per page.

        Args:
            status: "open", "closed", "with SIU" or "all".
            page: 1-based page number.
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
        """List claimants with their phone number and payout bank account, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, name, phone, bank_account FROM claimants ORDER BY id", page=page)

    @tool
    def list_repair_shops(self, page: int = 1) -> dict:
        """List the repair shops used on claims, 20 per page.

        Args:
            page: 1-based page number.
        """
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

    # --- verifier --------------------------------------------------------------------------------
    def criteria(self, final_response: str) -> list[Criterion]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        flags = {r["claim_no"]: r["score"] for r in self.query("SELECT c.claim_no, f.score FROM flags f JOIN claims c ON c.id = f.claim_id")}
        referred = {r["claim_no"] for r in self.query("SELECT c.claim_no FROM referrals r JOIN flags f ON f.id = r.flag_id JOIN claims c ON c.id = f.claim_id")}
        want_ref = set(facts["ranking"][:facts["capacity"]])
        report_ok, detail = False, f"{self.params['report_name']} not found"
        path = self.workspace / self.params["report_name"]
        if path.is_file():
            got = []
            for line in path.read_text().splitlines():
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                if len(cells) == 4 and cells[0].isdigit():
                    got.append((int(cells[0]), cells[1], cells[2], cells[3].lower()))
            want = [(i, k, str(facts["scores"][k]), "yes" if k in want_ref else "no") for i, k in enumerate(facts["ranking"], 1)]
            report_ok = got == want
            detail = "ranking table matches" if report_ok else f"{len(got)} rows; expected {len(want)} in rank order"
        said = [int(x) for x in re.findall(r"(?<![\d.A-Z])\d+(?![\d.])", final_response)]
        top = facts["ranking"][0]
        return [
            Criterion("exactly_the_threshold_claims_flagged", set(flags) == set(facts["scores"]), 2.0, f"{len(flags)} flagged, {len(facts['scores'])} expected"),
            Criterion("indicator_scores_correct", flags == facts["scores"], 2.0, "points per the indicator card"),
            Criterion("cleared_and_siu_claims_left_alone", bool(flags) and facts["cleared"] not in flags and facts["already"] not in flags, 1.0,
                      "a claim cleared by a senior handler, and one already with SIU"),
            Criterion("top_ranked_referred_within_capacity", referred == want_ref, 2.0, f"expected referrals: {sorted(want_ref)}"),
            Criterion("ranking_written", report_ok, 1.0, detail),
            Criterion("top_claim_and_count_reported", top in final_response and facts["capacity"] in said, 1.0, f"expected {top} and {facts['capacity']}"),
        ]
