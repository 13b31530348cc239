from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class RefereeAppointmentsEnv(WorkspaceEnvironment):
    @tool
    def list_teams(self, page: int = 1) -> dict:
        """Clubs and their division; 20 per page."""
        return self.query_page("SELECT id, name, division FROM teams ORDER BY id", page=page)

    @tool
    def list_referees(self, page: int = 1) -> dict:
        """Referees with grade (1 is the highest) and the club they are affiliated with, if any; 20 per page."""
        return self.query_page("SELECT id, name, grade, affiliated_team_id FROM referees ORDER BY id", page=page)

    @tool
    def list_past_appointments(self, page: int = 1, referee_id: int = 0) -> dict:
        """This season's past appointments: referee, match date and the two clubs; 20 per page.

        Args:
            referee_id: Only this referee's appointments when non-zero.
        """
        return self.query_page("SELECT referee_id, match_date, home_id, away_id, assessor_mark, assessor_comment FROM past_appointments "
                               "WHERE ? = 0 OR referee_id = ? ORDER BY id", (referee_id, referee_id), page)

    @tool
    def list_fixtures(self, page: int = 1) -> dict:
        """Upcoming fixtures that need a referee, with division and kickoff time; 20 per page."""
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

    def criteria(self, final_response: str) -> list[Criterion]:
        facts = self.facts
        away = {int(k): set(v) for k, v in facts["unavailable"].items()}
        made = self.query("SELECT a.referee_id, r.grade, f.division, substr(f.kickoff, 1, 10) AS day FROM appointments a "
                          "JOIN referees r ON r.id = a.referee_id JOIN fixtures f ON f.id = a.fixture_id")
        clean = all(a["grade"] <= a["division"] and a["day"] not in away.get(a["referee_id"], ())
                    and not (a["grade"] == 1 and a["day"] == facts["seminar_day"]) for a in made)
        flags = self.reference.query("SELECT count(*) AS n FROM flags")[0]["n"]
        return [
            self.tables_match("appointments", key="fixture_id", columns="referee_id", weight=2.0,
                              criterion="appointments_follow_policy"),
            Criterion("no_ineligible_appointment", clean, 1.0, "grades, availability and the seminar respected"),
            self.tables_match("flags", key="fixture_id", criterion="unstaffable_fixtures_flagged"),
            self.file_matches(self.params["report_name"], key="fixture_id", columns=["home", "away", "referee"],
                              criterion="appointments_sheet_written"),
            self.answer_states(flags, criterion="flag_count_reported"),
        ]
