"""Tools and verifier for nonprofit_donors/lapsed_reengagement."""
import csv
import io
import json
from datetime import date

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

CHANNELS = ("phone", "letter", "email")


def _shift_months(d: date, months: int) -> date:
    y, m = divmod(d.year * 12 + d.month - 1 - months, 12)
    day = d.day
    while True:
        try:
            return date(y, m + 1, day)
        except ValueError:
            day -= 1


class LapsedReengagementEnv(WorkspaceEnvironment):
    @tool
    def list_donors(self, page: int = 1) -> dict:
        """Supporters: number, name, e-mail and whether they opted out of e-mail; 20 per page.

        Args:
            page: 1-based page number.
        """
        result = self.query_page("SELECT id, donor_no, name, email, email_opt_out FROM donors ORDER BY id", page=page)
        for d in result["items"]:
            d["email_opt_out"] = bool(d["email_opt_out"])
        return result

    @tool
    def list_gifts(self, page: int = 1, donor_id: int = 0) -> dict:
        """Every recorded gift, oldest first; 20 per page.

        Args:
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def selection(self) -> tuple[list[dict], dict]:
        f = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        today = date.fromisoformat(f["today"])
        lapse_line = _shift_months(today, f["lapse_months"]).isoformat()
        window_line = _shift_months(today, 12 * f["window_years"]).isoformat()
        totals, last = {}, {}
        for g in self.query("SELECT donor_id, gift_date, amount, fund FROM gifts"):
            counted = g["amount"] if g["fund"] != self.params["excluded_fund"] else 0
            totals[g["donor_id"]] = totals.get(g["donor_id"], 0) + counted
            last[g["donor_id"]] = max(last.get(g["donor_id"], ""), g["gift_date"])
        late_id, late_day = f["recent_gift"]
        last[late_id] = max(last.get(late_id, ""), late_day)
        donors = {d["id"]: d for d in self.query("SELECT * FROM donors")}
        pool = [d for d in donors if d in last and window_line <= last[d] < lapse_line and d not in f["excluded"]]
        pool.sort(key=lambda d: (-totals[d], -date.fromisoformat(last[d]).toordinal(), donors[d]["donor_no"]))
        chosen = []
        for rank, d in enumerate(pool[: f["top_n"]], start=1):
            total = totals[d]
            channel = "phone" if total >= f["major"] else "letter" if total >= f["mid"] else "email"
            if channel == "email" and donors[d]["email_opt_out"]:
                channel = "letter"
            chosen.append({"id": d, "rank": rank, "donor_no": donors[d]["donor_no"], "name": donors[d]["name"],
                           "total": total, "last": last[d], "channel": channel, "campaign": f["channels"][channel]})
        return chosen, f

    def criteria(self, final_response: str) -> list[Criterion]:
        chosen, f = self.selection()
        members = self.query("SELECT m.donor_id, m.rank, c.name, c.channel FROM campaign_members m JOIN campaigns c ON c.id = m.campaign_id")
        placed = {m["donor_id"]: m for m in members}
        want = {c["id"]: c for c in chosen}
        made = self.query("SELECT name, channel FROM campaigns")
        per_channel = [c["channel"] for c in made]
        campaigns_ok = all(c["name"] == f["channels"][c["channel"]] for c in made) and len(per_channel) == len(set(per_channel))
        channels_ok = all(d in placed and placed[d]["channel"] == c["channel"] for d, c in want.items())
        ranks_ok = all(d in placed and placed[d]["rank"] == c["rank"] for d, c in want.items())

        report_name = self.params["report_name"]
        list_ok, info = False, f"{report_name} not found"
        path = self.workspace / report_name
        if path.is_file():
            try:
                rows = list(csv.DictReader(io.StringIO(path.read_text().strip())))
                got = [(int(r["rank"]), r["donor_no"].strip(), round(float(r["lifetime_total"]), 2), r["last_gift"].strip(),
                        r["campaign"].strip()) for r in rows]
                expect = [(c["rank"], c["donor_no"], round(c["total"], 2), c["last"], c["campaign"]) for c in chosen]
                list_ok = sorted(got) == expect
                info = f"{len(rows)} rows, {len(expect)} expected"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                info = f"could not read it: {exc}"
        first = chosen[0]["name"]
        return [
            Criterion("exactly_the_top_lapsed_selected", set(placed) == set(want), 2.0, f"{len(placed)} on campaigns, {len(want)} expected"),
            Criterion("ranking_with_tie_breaks", ranks_ok, 1.0, f"lifetime total without {self.params['excluded_fund']} gifts, then more recent last gift, then number"),
            Criterion("campaigns_set_up_per_brief", campaigns_ok, 1.0, "one campaign per channel used, named as in the brief"),
            Criterion("donors_on_the_right_campaign", channels_ok, 1.0, "giving bands, e-mail opt-outs to letters"),
            Criterion("list_written", list_ok, 1.0, info),
            Criterion("first_ranked_named", first.lower() in final_response.lower(), 1.0, f"expected {first}"),
        ]
