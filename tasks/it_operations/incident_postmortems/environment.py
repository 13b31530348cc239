"""Tools and verifier for it_operations/incident_postmortems."""
import datetime as dt
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


def _close(a, b) -> bool:
    return isinstance(a, (int, float)) and abs(a - b) <= 0.1


class IncidentReviewEnv(WorkspaceEnvironment):
    @tool
    def list_services(self, page: int = 1) -> dict:
        """List services with their tier and owning team, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, name, tier, team FROM services ORDER BY id", page=page)

    @tool
    def list_incidents(self, page: int = 1) -> dict:
        """List incidents (reference, service, severity, opening time in UTC, title, causing change id), 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, ref, service_id, severity, opened_at, title, caused_by_change FROM incidents ORDER BY id", page=page)

    @tool
    def list_incident_events(self, incident_id: int, page: int = 1) -> dict:
        """List the timeline events of one incident (UTC time and kind: opened, acknowledged, mitigated, resolved, reopened, note), 20 per page.

        Args:
            incident_id: The incident's id.
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def criteria(self, final_response: str) -> list[Criterion]:
        # The generator worked out the expected figures for this instance's excluded service; the file name is checked here.
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        want, pms = facts["metrics"], facts["postmortems"]
        got_pm = {r["ref"]: r for r in self.query("SELECT p.id, i.ref, p.owner_team, p.due_date FROM postmortems p JOIN incidents i ON i.id = p.incident_id")}
        links = {}
        for r in self.query("SELECT l.postmortem_id, c.ref FROM postmortem_links l JOIN changes c ON c.id = l.change_id"):
            links.setdefault(r["postmortem_id"], set()).add(r["ref"])
        set_ok = set(got_pm) == set(pms)
        details_ok = set_ok and all(got_pm[k]["owner_team"] == v[0] and got_pm[k]["due_date"] == v[1] for k, v in pms.items())
        links_ok = set_ok and all(links.get(got_pm[k]["id"], set()) == ({v[2]} if v[2] else set()) for k, v in pms.items())

        resp_ok = ttx_ok = down_ok = breach_ok = False
        detail = f"{self.params['metrics_name']} not found"
        path = self.workspace / self.params["metrics_name"]
        if path.is_file():
            try:
                m = json.loads(path.read_text())
                ttx_ok = all(set(m[k]) == set(want[k]) and all(_close(m[k][s], v) for s, v in want[k].items()) for k in ("mtta_minutes", "mttr_minutes"))
                d = m["downtime_minutes"]
                down_ok = all(_close(d.get(s, 0 if v == 0 else None), v) for s, v in want["downtime_minutes"].items())
                breach_ok = sorted(m["budget_breaches"]) == want["budget_breaches"]
                detail = f"mtta/mttr {'ok' if ttx_ok else 'differ'}, downtime {'ok' if down_ok else 'differs'}, breaches {'ok' if breach_ok else 'differ'}"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                detail = f"cannot parse the metrics: {exc}"
        said = [int(x) for x in re.findall(r"(?<![\d.-])\d+(?![\d.])", final_response)]
        return [
            Criterion("response_times_per_severity", ttx_ok, 2.0, detail),
            Criterion("downtime_per_service", down_ok, 1.0, f"sev1/sev2 impact, November only, duplicates and {self.params['excluded_service']} excluded"),
            Criterion("budget_breaches", breach_ok, 1.0, f"expected {want['budget_breaches']}"),
            Criterion("postmortems_for_the_right_incidents", set_ok, 2.0, f"{len(got_pm)} opened, {len(pms)} expected"),
            Criterion("postmortem_owner_and_due_date", details_ok, 1.0, "service team; business days after final resolution"),
            Criterion("causing_changes_linked", links_ok, 1.0, "link exactly the causing change"),
            Criterion("top_service_and_count_reported", any(t in final_response for t in facts["top"]) and len(pms) in said, 1.0,
                      f"expected one of {facts['top']} and {len(pms)} postmortems"),
        ]
