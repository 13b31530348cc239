"""Tools and verifier for sports_league/fixture_rescheduling."""
import csv
import datetime as dt
import io
import json
from typing import Literal

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class FixtureReschedulingEnv(WorkspaceEnvironment):
    @tool
    def list_teams(self, page: int = 1) -> dict:
        """List clubs with their home venue id and broadcast tier, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT t.id, t.name, t.home_venue_id, v.name AS home_venue, t.broadcast_tier "
                               "FROM teams t JOIN venues v ON v.id = t.home_venue_id ORDER BY t.id", page=page)

    @tool
    def list_matches(self, page: int = 1, team_id: int = 0, status: Literal["", "played", "scheduled", "postponed"] = "") -> dict:
        """List fixtures (home, away, date, kick-off, venue, status), in date order, 50 per page.

        Args:
            page: 1-based page number.
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
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def _replay(self) -> tuple[dict[int, dict | None], dict]:
        rules = json.loads(self.query("SELECT value FROM _verifier_facts WHERE key = 'rules'")[0]["value"])
        tier = {t["id"]: t["broadcast_tier"] for t in self.query("SELECT id, broadcast_tier FROM teams")}
        taken_now = {m["slot_id"] for m in self.query("SELECT slot_id FROM matches WHERE slot_id IS NOT NULL")}
        slots = [dict(s, is_free=1 if s["id"] in taken_now else s["is_free"])
                 for s in self.query("SELECT * FROM slots ORDER BY slot_date, kickoff, id")]
        todo, calendar = [], {}
        for m in self.query("SELECT * FROM matches ORDER BY id"):
            if m["slot_id"] is not None or m["status"] == "postponed":
                todo.append(m)
            else:
                for team in (m["home_team_id"], m["away_team_id"]):
                    calendar.setdefault(team, []).append(dt.date.fromisoformat(m["match_date"]))
        # The original date is gone for rearranged fixtures; match ids follow the original calendar order.
        todo.sort(key=lambda m: m["id"])
        closed = (rules["closure_start"], rules["closure_end"])
        out = {}
        for m in todo:
            tv = tier[m["home_team_id"]] == "national" and tier[m["away_team_id"]] == "national"
            choice = None
            for s in slots:
                if s["venue_id"] != m["venue_id"] or not s["is_free"]:
                    continue
                if s["venue_id"] == rules["closure_venue"] and closed[0] <= s["slot_date"] <= closed[1]:
                    continue
                if tv and s["kickoff"] < rules["evening_from"]:
                    continue
                day = dt.date.fromisoformat(s["slot_date"])
                if any(abs((day - d).days) < self.params["rest_days"] for t in (m["home_team_id"], m["away_team_id"])
                       for d in calendar.get(t, [])):
                    continue
                choice = s
                break
            out[m["id"]] = choice
            if choice:
                choice["is_free"] = 0
                for t in (m["home_team_id"], m["away_team_id"]):
                    calendar.setdefault(t, []).append(dt.date.fromisoformat(choice["slot_date"]))
        return out, rules

    def criteria(self, final_response: str) -> list[Criterion]:
        expected, _ = self._replay()
        placed = {m["id"]: m["slot_id"] for m in self.query("SELECT id, slot_id FROM matches WHERE slot_id IS NOT NULL")}
        want = {k: v["id"] for k, v in expected.items() if v}
        set_ok = set(placed) == set(want)
        common = [k for k in want if k in placed]
        slots_ok = bool(common) and all(placed[k] == want[k] for k in common)
        venue = {v["id"]: v["name"] for v in self.query("SELECT id, name FROM venues")}
        report_ok, detail = False, f"{self.params['report_name']} not found"
        path = self.workspace / self.params["report_name"]
        if path.is_file():
            try:
                got = sorted((int(r["match_id"]), r["date"].strip(), r["kickoff"].strip(), r["venue"].strip())
                             for r in csv.DictReader(io.StringIO(path.read_text().strip())))
                exp = sorted((k, v["slot_date"], v["kickoff"], venue[v["venue_id"]]) for k, v in expected.items() if v)
                report_ok = got == exp
                detail = "matches" if report_ok else f"{len(got)} rows, {len(exp)} expected"
            except (KeyError, ValueError, AttributeError) as exc:
                detail = f"cannot read the CSV: {exc}"
        names = {t["id"]: t["name"] for t in self.query("SELECT id, name FROM teams")}
        stuck = [m for m in self.query("SELECT id, home_team_id, away_team_id FROM matches") if m["id"] in expected and not expected[m["id"]]]
        said = final_response.lower()
        stuck_ok = all(names[m["home_team_id"]].lower() in said and names[m["away_team_id"]].lower() in said for m in stuck)
        return [
            Criterion("rescheduled_exactly_the_placeable_fixtures", set_ok, 2.0, f"{len(placed)} rearranged, {len(want)} expected"),
            Criterion("earliest_valid_slots_used", slots_ok, 1.0, "closure, TV evening and rest-day rules, earliest first"),
            Criterion("fixtures_report_written", report_ok, 1.0, detail),
            Criterion("unplaceable_fixtures_named", stuck_ok, 1.0, f"{len(stuck)} fixtures cannot be placed"),
        ]
