import datetime as dt
import json

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool
from progagent_lib.task.criteria import MAX_FILE_CHARS, ParseError, compare_json, parse_json


class IncidentReviewEnv(WorkspaceEnvironment):
    @tool
    def list_services(self, page: int = 1) -> dict:
        """List services with their tier and owning team, 20 per page."""
        return self.query_page("SELECT id, name, tier, team FROM services ORDER BY id", page=page)

    @tool
    def list_incidents(self, page: int = 1) -> dict:
        """List incidents (reference, service, severity, opening time in UTC, title, causing change id), 20 per page."""
        return self.query_page("SELECT id, ref, service_id, severity, opened_at, title, caused_by_change FROM incidents ORDER BY id", page=page)

    @tool
    def list_incident_events(self, incident_id: int, page: int = 1) -> dict:
        """List the timeline events of one incident (UTC time and kind: opened, acknowledged, mitigated, resolved, reopened, note), 20 per page.

        Args:
            incident_id: The incident's id.
        """
        self.require_row("incidents", incident_id, "use list_incidents")
        return self.query_page("SELECT at, kind, note FROM incident_events WHERE incident_id = ? ORDER BY at, id", (incident_id,), page)

    @tool
    def get_change(self, change_id: int) -> dict:
        """Get a change record: reference, service, deployment time and summary.

        Args:
            change_id: The change's id.
        """
        return self.require_row("changes", change_id)

    @tool
    def open_postmortem(self, incident_id: int, owner_team: str, due_date: str) -> dict:
        """Open a postmortem for an incident; returns its id.

        Args:
            incident_id: The incident's id.
            owner_team: The team that owns the postmortem.
            due_date: When it is due, YYYY-MM-DD.
        """
        self.require_row("incidents", incident_id, "use list_incidents")
        if self.query("SELECT id FROM postmortems WHERE incident_id = ?", (incident_id,)):
            raise ToolError(f"incident {incident_id} already has a postmortem")
        try:
            due = dt.date.fromisoformat(due_date.strip()).isoformat()
        except ValueError:
            raise ToolError(f"due_date must look like 2026-12-04, got {due_date!r}") from None
        cur = self.db.execute("INSERT INTO postmortems (incident_id, owner_team, due_date) VALUES (?,?,?)", (incident_id, owner_team.strip(), due))
        return {"postmortem_id": cur.lastrowid, "incident_id": incident_id, "owner_team": owner_team.strip(), "due_date": due}

    @tool
    def link_change(self, postmortem_id: int, change_id: int) -> dict:
        """Link a change record to a postmortem as the incident's cause.

        Args:
            postmortem_id: The id returned by open_postmortem.
            change_id: The change's id.
        """
        self.require_row("postmortems", postmortem_id)
        self.require_row("changes", change_id)
        self.db.execute("INSERT OR IGNORE INTO postmortem_links VALUES (?,?)", (postmortem_id, change_id))
        return {"postmortem_id": postmortem_id, "change_id": change_id}

    def _metrics_match(self, keys: tuple[str, ...], criterion: str, weight: float = 1.0) -> Criterion:
        """Some keys of the metrics file hold the reference's figures (to 0.1 minute). By hand because file_matches
        compares a whole file: a breach list in any order and services without downtime left out are fine here."""
        name = self.params["metrics_name"]
        want = {k: v for k, v in json.loads(self.reference.read(name)).items() if k in keys}
        try:
            got = parse_json(self.fs.read_text(name, MAX_FILE_CHARS))
        except (ToolError, OSError, ParseError) as exc:
            return Criterion(criterion, False, weight, f"{name}: {str(exc)[:200]}")
        got = {k: got.get(k) for k in keys} if isinstance(got, dict) else {}
        if isinstance(got.get("budget_breaches"), list):
            got["budget_breaches"] = sorted(map(str, got["budget_breaches"]))
        if isinstance(got.get("downtime_minutes"), dict):
            got["downtime_minutes"] = {**{s: 0 for s, v in want["downtime_minutes"].items() if not v},
                                       **got["downtime_minutes"]}
        problem = compare_json(got, want, [], 0.1)
        return Criterion(criterion, problem is None, weight, problem or f"{', '.join(keys)} as expected")

    def criteria(self, final_response: str) -> list[Criterion]:
        opened = "postmortems p JOIN incidents i ON i.id = p.incident_id"
        linked = (f"{opened} LEFT JOIN postmortem_links l ON l.postmortem_id = p.id "
                  "LEFT JOIN changes c ON c.id = l.change_id")
        downtime = json.loads(self.reference.read(self.params["metrics_name"]))["downtime_minutes"]
        count = self.reference.query("SELECT COUNT(*) AS n FROM postmortems")[0]["n"]
        # any service tied for the most downtime will do
        top = [self.answer_states([service, count], criterion="top_service_and_count_reported")
               for service, minutes in downtime.items() if minutes == max(downtime.values())]
        return [
            self._metrics_match(("mtta_minutes", "mttr_minutes"), "response_times_per_severity", weight=2.0),
            self._metrics_match(("downtime_minutes",), "downtime_per_service"),
            self._metrics_match(("budget_breaches",), "budget_breaches"),
            self.tables_match(opened, key="i.ref", weight=2.0, criterion="postmortems_for_the_right_incidents"),
            self.tables_match(opened, key="i.ref", columns=["p.owner_team", "p.due_date"],
                              criterion="postmortem_owner_and_due_date"),
            self.tables_match(linked, key=["i.ref", "c.ref"], criterion="causing_changes_linked"),
            next((c for c in top if c.passed), top[0]),
        ]
