from typing import Literal

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class FixtureReschedulingEnv(WorkspaceEnvironment):
    @tool
    def list_teams(self, page: int = 1) -> dict:
        """List clubs with their home venue id and broadcast tier, 20 per page."""
        return self.query_page("SELECT t.id, t.name, t.home_venue_id, v.name AS home_venue, t.broadcast_tier "
                               "FROM teams t JOIN venues v ON v.id = t.home_venue_id ORDER BY t.id", page=page)

    @tool
    def list_matches(self, page: int = 1, team_id: int = 0, status: Literal["", "played", "scheduled", "postponed"] = "") -> dict:
        """List fixtures (home, away, date, kick-off, venue, status), in date order, 50 per page.

        Args:
            team_id: Only fixtures involving this club when non-zero.
            status: Only fixtures with this status ("played", "scheduled", "postponed"); empty for all.
        """
        where, args = [], []
        if team_id:
            where.append("(home_team_id = ? OR away_team_id = ?)")
            args += [team_id, team_id]
        if status:
            where.append("status = ?")
            args.append(status)
        sql = "SELECT id, home_team_id, away_team_id, match_date, kickoff, venue_id, status, referee, attendance FROM matches"
        sql += (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY match_date, id"
        return self.query_page(sql, tuple(args), page, page_size=50)

    @tool
    def list_venue_slots(self, venue_id: int, page: int = 1) -> dict:
        """List the slots a venue has offered the league (date, kick-off, whether still free), 20 per page.

        Args:
            venue_id: The venue's numeric id.
        """
        self.require_row("venues", venue_id)
        return self.query_page("SELECT id, slot_date, kickoff, is_free FROM slots WHERE venue_id = ? "
                               "ORDER BY slot_date, kickoff, id", (venue_id,), page)

    @tool
    def reschedule_match(self, match_id: int, slot_id: int) -> dict:
        """Move a postponed fixture into a free slot; the slot is then taken.

        Args:
            match_id: The postponed fixture.
            slot_id: A free slot at the fixture's venue.
        """
        match = self.query("SELECT id, venue_id, status FROM matches WHERE id = ?", (match_id,))
        if not match or match[0]["status"] != "postponed":
            raise ToolError(f"no postponed fixture with id {match_id}")
        slot = self.query("SELECT id, venue_id, slot_date, kickoff, is_free FROM slots WHERE id = ?", (slot_id,))
        if not slot or not slot[0]["is_free"]:
            raise ToolError(f"slot {slot_id} does not exist or is not free")
        if slot[0]["venue_id"] != match[0]["venue_id"]:
            raise ToolError(f"slot {slot_id} is at another venue; use a slot at the fixture's venue")
        self.db.execute("UPDATE slots SET is_free = 0 WHERE id = ?", (slot_id,))
        self.db.execute("UPDATE matches SET match_date = ?, kickoff = ?, status = 'scheduled', slot_id = ? WHERE id = ?",
                        (slot[0]["slot_date"], slot[0]["kickoff"], slot_id, match_id))
        return {"match_id": match_id, "date": slot[0]["slot_date"], "kickoff": slot[0]["kickoff"]}

    def criteria(self, final_response: str) -> list[Criterion]:
        stuck = self.reference.query("SELECT h.name AS home, a.name AS away FROM matches m JOIN teams h "
                                     "ON h.id = m.home_team_id JOIN teams a ON a.id = m.away_team_id "
                                     "WHERE m.status = 'postponed' AND m.slot_id IS NULL")
        return [
            self.tables_match("matches", key="id", where="slot_id IS NOT NULL", weight=2.0,
                              criterion="rescheduled_exactly_the_placeable_fixtures"),
            self.tables_match("matches", key="id", columns="slot_id", where="slot_id IS NOT NULL",
                              criterion="earliest_valid_slots_used"),
            self.file_matches(self.params["report_name"], key="match_id", columns=["date", "kickoff", "venue"],
                              criterion="fixtures_report_written"),
            self.answer_states([team for m in stuck for team in (m["home"], m["away"])],
                               criterion="unplaceable_fixtures_named"),
        ]
