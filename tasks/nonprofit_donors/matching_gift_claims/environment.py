import datetime as dt

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

TODAY = dt.date(2026, 12, 1)


class MatchingGiftEnv(WorkspaceEnvironment):
    @tool
    def list_employers(self, page: int = 1) -> dict:
        """List the companies our donors work for, 20 per page."""
        return self.query_page("SELECT id, name, contact_email FROM employers ORDER BY id", page=page)

    @tool
    def list_donors(self, page: int = 1) -> dict:
        """List donors with their employer id (null if none) and employment status, 20 per page."""
        return self.query_page("SELECT id, name, employer_id, employment_status, email FROM donors ORDER BY id", page=page)

    @tool
    def get_donor_matching_total(self, donor_id: int) -> dict:
        """Get how much of a donor's 2026 giving has already been matched by their employer.

        Args:
            donor_id: The donor's numeric id.
        """
        self.require_row("donors", donor_id, "use list_donors")
        row = self.query("SELECT matched_amount FROM matched_this_year WHERE donor_id = ?", (donor_id,))
        return {"donor_id": donor_id, "year": 2026, "matched_amount": row[0]["matched_amount"] if row else 0.0}

    @tool
    def list_gifts(self, page: int = 1, donor_id: int = 0) -> dict:
        """List gifts (donor, date, amount, fund), in date order, 50 per page.

        Args:
            donor_id: Only this donor's gifts when non-zero.
        """
        sql = "SELECT id, donor_id, gift_date, amount, fund, method FROM gifts"
        return self.query_page(sql + (" WHERE donor_id = ?" if donor_id else "") + " ORDER BY gift_date, id", (donor_id,) if donor_id else (), page, page_size=50)

    @tool
    def create_claim(self, employer_id: int) -> dict:
        """Start a matching-gift claim to one company, dated today; returns the claim id.

        Args:
            employer_id: The company the claim goes to.
        """
        self.require_row("employers", employer_id, "use list_employers")
        cur = self.db.execute("INSERT INTO claims (employer_id, submitted_on) VALUES (?, ?)", (employer_id, TODAY.isoformat()))
        return {"claim_id": cur.lastrowid, "employer_id": employer_id}

    @tool
    def add_claim_line(self, claim_id: int, gift_id: int, match_amount: float) -> dict:
        """Add a gift to a claim with the amount the company should match.

        Args:
            claim_id: The id returned by create_claim.
            gift_id: The gift being matched.
            match_amount: Matching amount requested, in dollars (positive).
        """
        self.require_row("claims", claim_id, "create the claim first")
        self.require_row("gifts", gift_id, "use list_gifts")
        if match_amount <= 0:
            raise ToolError("match_amount must be positive")
        if self.query("SELECT id FROM claim_lines WHERE gift_id = ?", (gift_id,)):
            raise ToolError(f"gift {gift_id} is already on a claim")
        cur = self.db.execute("INSERT INTO claim_lines (claim_id, gift_id, match_amount) VALUES (?,?,?)",
                              (claim_id, gift_id, round(float(match_amount), 2)))
        return {"line_id": cur.lastrowid, "claim_id": claim_id, "gift_id": gift_id}

    def criteria(self, final_response: str) -> list[Criterion]:
        lines = "claim_lines l JOIN claims c ON c.id = l.claim_id"
        total = self.reference.query("SELECT sum(match_amount) AS t FROM claim_lines")[0]["t"] or 0.0
        return [
            self.tables_match("claims", key="employer_id", criterion="one_claim_per_matching_company"),
            self.tables_match(lines, key="l.gift_id", columns="c.employer_id", criterion="eligible_gifts_claimed",
                              weight=2.0),
            self.tables_match(lines, key="l.gift_id", columns="l.match_amount", tolerance=0.01,
                              criterion="match_amounts_with_ratio_and_cap"),
            self.file_matches(self.params["report_name"], key="company", criterion="claims_summary_written"),
            self.answer_states(round(total, 2), criterion="total_claimed_reported"),
        ]
