"""Tools and verifier for sports_league/referee_appointments."""
import csv
import io
import json
import re
from datetime import date, timedelta

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


def appoint_all(fixtures, referees, history, facts, rest_days) -> dict:
    """Policy outcome: {fixture_id: referee_id or None}."""
    count = {r["id"]: 0 for r in referees}
    last_seen = {}  # (referee, club) -> list of dates
    for h in history:
        count[h["referee_id"]] += 1
        for club in (h["home_id"], h["away_id"]):
            last_seen.setdefault((h["referee_id"], club), []).append(h["match_date"])
    away = {int(k): set(v) for k, v in facts["unavailable"].items()}
    busy_days = {r["id"]: set() for r in referees}
    outcome = {}
    for fx in sorted(fixtures, key=lambda f: (f["kickoff"], f["id"])):
        day = fx["kickoff"][:10]
        window_start = (date.fromisoformat(day) - timedelta(days=rest_days)).isoformat()
        eligible = []
        for r in referees:
            if r["grade"] > fx["division"] or r["affiliated_team_id"] in (fx["home_id"], fx["away_id"]):
                continue
            if day in busy_days[r["id"]] or day in away.get(r["id"], ()) or (r["grade"] == 1 and day == facts["seminar_day"]):
                continue
            if any(window_start <= d < day for club in (fx["home_id"], fx["away_id"]) for d in last_seen.get((r["id"], club), [])):
                continue
            eligible.append(r)
        if not eligible:
            outcome[fx["id"]] = None
            continue
        best = min(eligible, key=lambda r: (count[r["id"]], r["grade"], r["name"]))
        outcome[fx["id"]] = best["id"]
        count[best["id"]] += 1
        busy_days[best["id"]].add(day)
    return outcome


class RefereeAppointmentsEnv(WorkspaceEnvironment):
    @tool
    def list_teams(self, page: int = 1) -> dict:
        """Clubs and their division; 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, name, division FROM teams ORDER BY id", page=page)

    @tool
    def list_referees(self, page: int = 1) -> dict:
        """Referees with grade (1 is the highest) and the club they are affiliated with, if any; 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, name, grade, affiliated_team_id FROM referees ORDER BY id", page=page)

    @tool
    def list_past_appointments(self, page: int = 1, referee_id: int = 0) -> dict:
        """This season's past appointments: referee, match date and the two clubs; 20 per page.

        Args:
            page: 1-based page number.
            referee_id: Only this referee's appointments when non-zero.
        """
        return self.query_page("SELECT referee_id, match_date, home_id, away_id, assessor_mark, assessor_comment FROM past_appointments "
                               "WHERE ? = 0 OR referee_id = ? ORDER BY id", (referee_id, referee_id), page)

    @tool
    def list_fixtures(self, page: int = 1) -> dict:
        """Upcoming fixtures that need a referee, with division and kickoff time; 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, division, kickoff, home_id, away_id FROM fixtures ORDER BY id", page=page)

    def _open_fixture(self, fixture_id: int) -> None:
        self.require_row("fixtures", fixture_id, "use list_fixtures")
        if self.query("SELECT 1 FROM appointments WHERE fixture_id = ? UNION SELECT 1 FROM flags WHERE fixture_id = ?",
                      (fixture_id, fixture_id)):
            raise ToolError(f"fixture {fixture_id} is already appointed or flagged")

    @tool
    def appoint_referee(self, fixture_id: int, referee_id: int) -> dict:
        """Appoint a referee to a fixture; returns the appointment id.

        Args:
            fixture_id: The fixture's id.
            referee_id: The referee's id.
        """
        self._open_fixture(fixture_id)
        self.require_row("referees", referee_id, "use list_referees")
        made = self.db.execute("INSERT INTO appointments (fixture_id, referee_id) VALUES (?, ?)", (fixture_id, referee_id))
        return {"appointment_id": made.lastrowid, "fixture_id": fixture_id, "referee_id": referee_id}

    @tool
    def flag_fixture(self, fixture_id: int, note: str) -> dict:
        """Flag a fixture that cannot be staffed to the appointments secretary.

        Args:
            fixture_id: The fixture's id.
            note: Why it could not be staffed.
        """
        self._open_fixture(fixture_id)
        made = self.db.execute("INSERT INTO flags (fixture_id, note) VALUES (?, ?)", (fixture_id, note))
        return {"flag_id": made.lastrowid, "fixture_id": fixture_id}

    # --- verifier --------------------------------------------------------------------------------
    def criteria(self, final_response: str) -> list[Criterion]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        fixtures = self.query("SELECT * FROM fixtures")
        referees = self.query("SELECT * FROM referees")
        plan = appoint_all(fixtures, referees, self.query("SELECT * FROM past_appointments"), facts, self.params["rest_days"])
        made = {a["fixture_id"]: a["referee_id"] for a in self.query("SELECT * FROM appointments")}
        flagged = {f["fixture_id"] for f in self.query("SELECT fixture_id FROM flags")}
        staffed = {k: v for k, v in plan.items() if v is not None}
        grade = {r["id"]: r["grade"] for r in referees}
        division = {f["id"]: f["division"] for f in fixtures}
        away = {int(k): set(v) for k, v in facts["unavailable"].items()}
        kickoff = {f["id"]: f["kickoff"][:10] for f in fixtures}
        clean = all(grade[r] <= division[f] and kickoff[f] not in away.get(r, ()) and
                    not (grade[r] == 1 and kickoff[f] == facts["seminar_day"]) for f, r in made.items())

        names = {r["id"]: r["name"] for r in referees}
        teams = {t["id"]: t["name"] for t in self.query("SELECT * FROM teams")}
        sheet_ok, info = False, f"{self.params['report_name']} not found"
        path = self.workspace / self.params["report_name"]
        if path.is_file():
            try:
                sheet = {int(row["fixture_id"]): (row["home"].strip(), row["away"].strip(), (row["referee"] or "").strip())
                         for row in csv.DictReader(io.StringIO(path.read_text().strip()))}
                target = {f["id"]: (teams[f["home_id"]], teams[f["away_id"]], names.get(plan[f["id"]], "")) for f in fixtures}
                sheet_ok = sheet == target
                info = f"{len(sheet)} rows; {sum(sheet.get(k) != v for k, v in target.items())} differ"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                info = f"could not read it: {exc}"
        n_flag = len(plan) - len(staffed)
        return [
            Criterion("appointments_follow_policy", made == staffed, 2.0, f"{sum(made.get(k) == v for k, v in staffed.items())} of {len(staffed)} as expected"),
            Criterion("no_ineligible_appointment", clean, 1.0, "grades, availability and the seminar respected"),
            Criterion("unstaffable_fixtures_flagged", flagged == set(plan) - set(staffed), 1.0, f"{len(flagged)} flagged, {n_flag} expected"),
            Criterion("appointments_sheet_written", sheet_ok, 1.0, info),
            Criterion("flag_count_reported", str(n_flag) in re.findall(r"\d+", final_response), 1.0, f"expected {n_flag}"),
        ]
