import datetime as dt
import json

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool
from progagent_lib.task.criteria import MAX_FILE_CHARS, ParseError, parse_json

ONE_CHANGE_PER_WAVE = "SELECT wave, MIN(id) AS id FROM changes GROUP BY wave HAVING COUNT(*) = 1"
ONE_CHANGE_PER_WAVE_IDS = f"SELECT id FROM ({ONE_CHANGE_PER_WAVE})"


class PatchRolloutEnv(WorkspaceEnvironment):
    @tool
    def list_hosts(self, page: int = 1, environment: str = "") -> dict:
        """List servers from the CMDB (hostname, environment, OS, service), 20 per page.

        Args:
            environment: Only "dev", "staging" or "prod" servers when non-empty.
        """
        if environment and environment not in ("dev", "staging", "prod"):
            raise ToolError(f"environment must be dev, staging or prod, got {environment!r}")
        sql = "SELECT id, hostname, environment, os, service_id, ip FROM hosts"
        return self.query_page(sql + (" WHERE environment = ?" if environment else "") + " ORDER BY id",
                               (environment,) if environment else (), page)

    @tool
    def list_services(self, page: int = 1) -> dict:
        """List business services with their tier (1 = most critical) and owning team, 20 per page."""
        return self.query_page("SELECT id, name, tier, owner_team FROM services ORDER BY id", page=page)

    @tool
    def list_patches(self, page: int = 1, os: str = "") -> dict:
        """List the patch catalogue (KB number, title, operating system, severity), 20 per page.

        Args:
            os: Only patches for this operating system when non-empty, e.g. "RHEL 9".
        """
        sql = "SELECT id, kb, title, os, severity, released FROM patches"
        return self.query_page(sql + (" WHERE os = ?" if os else "") + " ORDER BY id", (os,) if os else (), page)

    @tool
    def list_installations(self, kb: str, page: int = 1) -> dict:
        """List the servers on which one patch is already installed, 20 per page.

        Args:
            kb: The patch's KB number, e.g. "KB5041234".
        """
        patch = self.query("SELECT id FROM patches WHERE kb = ?", (kb.strip(),))
        if not patch:
            raise ToolError(f"no patch {kb!r} in the catalogue; list_patches shows the KB numbers")
        return self.query_page("SELECT i.host_id, h.hostname, i.installed_on FROM installations i JOIN hosts h ON h.id = i.host_id "
                               "WHERE i.patch_id = ? ORDER BY i.id", (patch[0]["id"],), page)

    @tool
    def create_change(self, wave: int, scheduled_date: str, summary: str) -> dict:
        """Raise a change request for one rollout wave; returns the change with its id.

        Args:
            wave: Wave number, 1 to 4.
            scheduled_date: The day the wave goes out, YYYY-MM-DD.
            summary: A short description of the change.
        """
        if wave not in (1, 2, 3, 4):
            raise ToolError(f"wave must be 1, 2, 3 or 4, got {wave}")
        try:
            day = dt.date.fromisoformat(scheduled_date)
        except ValueError:
            raise ToolError(f"scheduled_date must look like 2026-12-08, got {scheduled_date!r}") from None
        cur = self.db.execute("INSERT INTO changes (wave, scheduled_date, summary, status) VALUES (?,?,?, 'scheduled')",
                              (wave, day.isoformat(), summary))
        return {"change_id": cur.lastrowid, "wave": wave, "scheduled_date": day.isoformat(), "status": "scheduled"}

    @tool
    def add_host_to_change(self, change_id: int, host_id: int) -> dict:
        """Attach a server to a change request.

        Args:
            change_id: The id returned by create_change.
            host_id: The server's id from list_hosts.
        """
        self.require_row("changes", change_id, "create it first with create_change")
        self.require_row("hosts", host_id, "use list_hosts", what="server")
        self.db.execute("INSERT OR IGNORE INTO change_hosts VALUES (?, ?)", (change_id, host_id))
        count = self.query("SELECT COUNT(*) AS n FROM change_hosts WHERE change_id = ?", (change_id,))[0]["n"]
        return {"change_id": change_id, "host_id": host_id, "hosts_on_change": count}

    def _plan_written(self) -> Criterion:
        """The plan file holds the reference's waves. By hand because file_matches cannot read a plan whose change ids
        are the episode's own and whose host lists are in any order."""
        name, change_of = self.params["plan_name"], {r["wave"]: r["id"] for r in self.query(ONE_CHANGE_PER_WAVE)}
        want = {w["wave"]: (w["date"], sorted(w["hosts"]), change_of.get(w["wave"]))
                for w in json.loads(self.reference.read(name))["waves"]}
        try:
            waves = parse_json(self.fs.read_text(name, MAX_FILE_CHARS))["waves"]
            got = {int(w["wave"]): (str(w["date"]).strip(), sorted(h.strip() for h in w["hosts"]), int(w["change_id"]))
                   for w in waves}
        except (ToolError, OSError, ParseError, KeyError, ValueError, TypeError, AttributeError) as exc:
            return Criterion("plan_written", False, 1.0, f"cannot read {name}: {str(exc)[:200]}")
        ok = got == want and len(waves) == len(want)
        return Criterion("plan_written", ok, 1.0, "matches the expected waves" if ok else "waves, dates, hosts or "
                         "change ids differ")

    def criteria(self, final_response: str) -> list[Criterion]:
        excluded = set(self.facts["excluded"])
        scheduled = {r["host_id"] for r in self.query("SELECT host_id FROM change_hosts")}
        waves = "change_hosts h JOIN changes c ON c.id = h.change_id"
        total = self.reference.query("SELECT COUNT(DISTINCT host_id) AS n FROM change_hosts")[0]["n"]
        last = dt.date.fromisoformat(self.reference.query("SELECT scheduled_date FROM changes WHERE wave = 4")[0]
                                     ["scheduled_date"])
        # the last wave's date in any of the usual forms
        stated = [self.answer_states([total, form], criterion="total_and_last_date_reported") for form in
                  (last.isoformat(), f"{last.day} {last:%B}", f"{last:%B} {last.day}")]
        return [
            self.tables_match("(SELECT DISTINCT host_id FROM change_hosts)", key="host_id", weight=2.0,
                              criterion="exactly_the_servers_needing_the_cycle"),
            Criterion("holds_and_decommissions_respected", bool(scheduled) and not scheduled & excluded, 1.0,
                      "no held-service or decommissioned server attached"),
            # a wave split over two changes loses its servers here
            self.tables_match(waves, key=["c.wave", "h.host_id"], where=f"c.id IN ({ONE_CHANGE_PER_WAVE_IDS})",
                              criterion="servers_in_the_right_waves"),
            self.tables_match("changes", key="wave", columns="scheduled_date", weight=2.0,
                              criterion="wave_dates_follow_calendar_rules"),
            self._plan_written(),
            next((c for c in stated if c.passed), stated[0]),
        ]
