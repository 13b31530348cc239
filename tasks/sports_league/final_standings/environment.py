from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool
from progagent_lib.task.criteria import parse_rows, same_value

OUTCOMES = ("champion", "promoted", "relegated")


class FinalStandingsEnv(WorkspaceEnvironment):
    @tool
    def list_teams(self, page: int = 1, division: int = 0) -> dict:
        """List the league's clubs and the division each played in this season, 20 per page.

        Args:
            division: Only clubs of this division when non-zero.
        """
        return self.query_page("SELECT id, name, division FROM teams WHERE ? = 0 OR division = ? ORDER BY id", (division, division), page)

    @tool
    def list_matches(self, division: int, page: int = 1) -> dict:
        """List one division's fixtures with the recorded scores and status, 20 per page.

        Args:
            division: The division number (1 is the top division).
        """
        if not self.query("SELECT 1 FROM teams WHERE division = ?", (division,)):
            raise ToolError(f"there is no division {division}; list_teams shows the divisions")
        fields = "id, round, played_on, home_id, away_id, home_goals, away_goals, status, attendance, referee"
        return self.query_page(f"SELECT {fields} FROM matches WHERE division = ? ORDER BY id", (division,), page)

    @tool
    def record_season_outcome(self, team_id: int, outcome: str) -> dict:
        """Record a club's end-of-season outcome in the league system.

        Args:
            team_id: The club's numeric id.
            outcome: One of "champion", "promoted" or "relegated".
        """
        if outcome not in OUTCOMES:
            raise ToolError(f"outcome must be one of {', '.join(OUTCOMES)}; got {outcome!r}")
        self.require_row("teams", team_id, "use list_teams", what="club")
        previous = self.query("SELECT outcome FROM season_outcomes WHERE team_id = ?", (team_id,))
        if previous:
            raise ToolError(f"club {team_id} already has the outcome {previous[0]['outcome']!r}")
        new_id = self.db.execute("INSERT INTO season_outcomes (team_id, outcome) VALUES (?, ?)", (team_id, outcome)).lastrowid
        return {"outcome_id": new_id, "team_id": team_id, "outcome": outcome}

    def criteria(self, final_response: str) -> list[Criterion]:
        name = self.params["report_name"]
        deducted = self.facts["deducted"]
        touched = [t["name"] for t in self.query("SELECT name FROM teams WHERE id = ? OR division = 1", (deducted,))]
        rulings = self.file_matches(name, key="team", columns="points")
        if not rulings.passed and "differs" in rulings.detail:  # only the clubs the rulings touch count here
            points = {r["team"]: r["points"] for r in parse_rows(self.reference.read(name), "csv")}
            mine = {r.get("team", "").strip(): r.get("points") for r in parse_rows(self.read_workspace(name), "csv")}
            wrong = [t for t in touched if not same_value(mine.get(t), points[t], 0)]
            rulings = Criterion(rulings.name, not wrong, 1.0, f"points differ for {wrong}" if wrong else "")
        champion = self.reference.query("SELECT t.name FROM season_outcomes o JOIN teams t ON t.id = o.team_id "
                                        "WHERE o.outcome = 'champion'")[0]["name"]
        stats = ["played", "won", "drawn", "lost", "goals_for", "goals_against", "points"]
        return [
            self.file_matches(name, key=["division", "position"], columns="team", weight=2.0,
                              criterion="table_order_correct"),
            self.file_matches(name, key="team", columns=stats, criterion="club_statistics_correct"),
            Criterion("rulings_applied_to_points", rulings.passed, 1.0,
                      rulings.detail or "abandoned match, awarded match and deduction applied"),
            self.tables_match("season_outcomes", key=["team_id", "outcome"], weight=2.0,
                              criterion="season_outcomes_recorded"),
            self.answer_states(champion, criterion="champion_named"),
        ]
