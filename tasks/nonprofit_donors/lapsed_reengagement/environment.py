from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

CHANNELS = ("phone", "letter", "email")


class LapsedReengagementEnv(WorkspaceEnvironment):
    @tool
    def list_donors(self, page: int = 1) -> dict:
        """Supporters: number, name, e-mail and whether they opted out of e-mail; 20 per page."""
        result = self.query_page("SELECT id, donor_no, name, email, email_opt_out FROM donors ORDER BY id", page=page)
        for d in result["items"]:
            d["email_opt_out"] = bool(d["email_opt_out"])
        return result

    @tool
    def list_gifts(self, page: int = 1, donor_id: int = 0) -> dict:
        """Every recorded gift, oldest first; 20 per page.

        Args:
            donor_id: Only this supporter's gifts when non-zero.
        """
        return self.query_page("SELECT donor_id, gift_date, amount, fund FROM gifts WHERE ? = 0 OR donor_id = ? ORDER BY id",
                               (donor_id, donor_id), page)  # the gift table is the big one: fetch one page in SQL

    @tool
    def create_campaign(self, name: str, channel: str) -> dict:
        """Set up a campaign; returns its id for adding supporters.

        Args:
            name: The campaign's name.
            channel: "phone", "letter" or "email".
        """
        if channel not in CHANNELS:
            raise ToolError(f"channel must be one of {CHANNELS}")
        if not name.strip():
            raise ToolError("the campaign needs a name")
        if self.query("SELECT 1 FROM campaigns WHERE name = ?", (name.strip(),)):
            raise ToolError(f"a campaign called {name!r} already exists")
        made = self.db.execute("INSERT INTO campaigns (name, channel) VALUES (?, ?)", (name.strip(), channel))
        return {"campaign_id": made.lastrowid, "name": name.strip(), "channel": channel}

    @tool
    def add_to_campaign(self, campaign_id: int, donor_id: int, rank: int) -> dict:
        """Add a supporter to a campaign with their position in the ranking.

        Args:
            campaign_id: The id returned by create_campaign.
            donor_id: The supporter's numeric id.
            rank: Their 1-based rank in the re-engagement list.
        """
        self.require_row("campaigns", campaign_id, "create it first")
        self.require_row("donors", donor_id, "use list_donors", what="supporter")
        if self.query("SELECT 1 FROM campaign_members WHERE donor_id = ?", (donor_id,)):
            raise ToolError(f"supporter {donor_id} is already on a campaign")
        made = self.db.execute("INSERT INTO campaign_members (campaign_id, donor_id, rank) VALUES (?,?,?)", (campaign_id, donor_id, rank))
        return {"member_id": made.lastrowid, "campaign_id": campaign_id, "donor_id": donor_id, "rank": rank}

    def criteria(self, final_response: str) -> list[Criterion]:
        members = "campaign_members m JOIN campaigns c ON c.id = m.campaign_id"
        first = self.reference.query("SELECT d.name FROM campaign_members m JOIN donors d ON d.id = m.donor_id "
                                     "WHERE m.rank = 1")
        return [
            self.tables_match("campaign_members", key="donor_id", criterion="exactly_the_top_lapsed_selected", weight=2.0),
            self.tables_match("campaign_members", key="donor_id", columns="rank", criterion="ranking_with_tie_breaks"),
            self.tables_match("campaigns", key="channel", columns="name", criterion="campaigns_set_up_per_brief"),
            self.tables_match(members, key="m.donor_id", columns="c.channel", criterion="donors_on_the_right_campaign"),
            self.file_matches(self.params["report_name"], key="rank", criterion="list_written",
                              columns=["donor_no", "lifetime_total", "last_gift", "campaign"]),
            self.answer_states([r["name"] for r in first], criterion="first_ranked_named"),
        ]
