"""Tools and verifier for sports_league/final_standings."""
import csv
import io
import json
from collections import defaultdict

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

OUTCOMES = ("champion", "promoted", "relegated")


class FinalStandingsEnv(WorkspaceEnvironment):
    @tool
    def list_teams(self, page: int = 1, division: int = 0) -> dict:
        """List the league's clubs and the division each played in this season, 20 per page.

        Args:
            page: 1-based page number.
            division: Only clubs of this division when non-zero.
        """
        return self.query_page("SELECT id, name, division FROM teams WHERE ? = 0 OR division = ? ORDER BY id", (division, division), page)

    @tool
    def list_matches(self, division: int, page: int = 1) -> dict:
        """List one division's fixtures with the recorded scores and status, 20 per page.

        Args:
            division: The division number (1 is the top division).
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def _tables(self) -> tuple[dict, dict]:
        f = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        teams = {t["id"]: t for t in self.query("SELECT * FROM teams")}
        stats = {tid: dict(played=0, won=0, drawn=0, lost=0, goals_for=0, goals_against=0, points=0) for tid in teams}
        results = []
        for m in self.query("SELECT * FROM matches WHERE status = 'played'"):
            hg, ag = (0, 3) if m["id"] == f["overturned_match"] else (m["home_goals"], m["away_goals"])
            results.append((m["home_id"], m["away_id"], hg, ag))
            for me, gf, ga in ((m["home_id"], hg, ag), (m["away_id"], ag, hg)):
                s = stats[me]
                s["played"] += 1
                s["goals_for"] += gf
                s["goals_against"] += ga
                key = "won" if gf > ga else "drawn" if gf == ga else "lost"
                s[key] += 1
                s["points"] += f["win_points"] if gf > ga else 1 if gf == ga else 0
        stats[f["deducted"]]["points"] -= f["deduction"]
        tables = defaultdict(list)
        for tid, t in teams.items():
            tables[t["division"]].append(tid)
        for div, members in tables.items():
            level = defaultdict(set)
            for tid in members:
                level[stats[tid]["points"]].add(tid)
            h2h = defaultdict(int)
            for h, a, hg, ag in results:
                group = level.get(stats[h]["points"], set())
                if a in group and h in group:
                    h2h[h] += f["win_points"] if hg > ag else 1 if hg == ag else 0
                    h2h[a] += f["win_points"] if ag > hg else 1 if hg == ag else 0

            def key(tid):
                s = stats[tid]
                gd = s["goals_for"] - s["goals_against"]
                middle = (-h2h[tid], -gd, -s["goals_for"]) if f["h2h_first"] else (-gd, -s["goals_for"], -h2h[tid])
                return (-s["points"],) + middle + (teams[tid]["name"],)

            members.sort(key=key)
        return {"tables": dict(tables), "stats": stats, "teams": teams}, f

    def criteria(self, final_response: str) -> list[Criterion]:
        t, f = self._tables()
        tables, stats, teams = t["tables"], t["stats"], t["teams"]
        n_div = max(tables)
        expected_outcomes = {(tables[1][0], "champion")}
        for div, order in tables.items():
            if div < n_div:
                expected_outcomes |= {(tid, "relegated") for tid in order[-self.params["movers"]:]}
            if div > 1:
                expected_outcomes |= {(tid, "promoted") for tid in order[: self.params["movers"]]}
        recorded = {(o["team_id"], o["outcome"]) for o in self.query("SELECT team_id, outcome FROM season_outcomes")}

        order_ok = stats_ok = rulings_ok = False
        report_name = self.params["report_name"]
        detail = f"{report_name} not found"
        path = self.workspace / report_name
        if path.is_file():
            try:
                rows = list(csv.DictReader(io.StringIO(path.read_text().strip())))
                by_name = {tm["name"]: tid for tid, tm in teams.items()}
                got_order = defaultdict(list)
                got_stats = {}
                for r in sorted(rows, key=lambda r: (int(r["division"]), int(r["position"]))):
                    tid = by_name.get(r["team"].strip())
                    got_order[int(r["division"])].append(tid)
                    got_stats[tid] = {k: int(float(r[k])) for k in stats[1]}
                order_ok = dict(got_order) == tables and len(rows) == len(teams)
                stats_ok = all(got_stats.get(tid) == s for tid, s in stats.items())
                touched = {f["deducted"]} | {tid for tid in teams if teams[tid]["division"] == 1}
                rulings_ok = all(got_stats.get(tid, {}).get("points") == stats[tid]["points"] for tid in touched)
                detail = f"{len(rows)} rows read"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                detail = f"cannot parse {report_name}: {exc}"
        champion = teams[tables[1][0]]["name"]
        return [
            Criterion("table_order_correct", order_ok, 2.0, detail + "; positions follow points and the tie-break rule"),
            Criterion("club_statistics_correct", stats_ok, 1.0, "played/won/drawn/lost/goals/points for every club"),
            Criterion("rulings_applied_to_points", rulings_ok, 1.0, "abandoned match, awarded match and deduction applied"),
            Criterion("season_outcomes_recorded", recorded == expected_outcomes, 2.0,
                      f"{len(recorded)} outcomes recorded, {len(expected_outcomes)} expected"),
            Criterion("champion_named", champion.lower() in final_response.lower(), 1.0, f"expected {champion}"),
        ]
