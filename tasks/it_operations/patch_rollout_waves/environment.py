"""Tools and verifier for it_operations/patch_rollout_waves."""
import datetime as dt
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class PatchRolloutEnv(WorkspaceEnvironment):
    @tool
    def list_hosts(self, page: int = 1, environment: str = "") -> dict:
        """List servers from the CMDB (hostname, environment, OS, service), 20 per page.

        Args:
            page: 1-based page number.
            environment: Only "dev", "staging" or "prod" servers when non-empty.
        """
        if environment and environment not in ("dev", "staging", "prod"):
            raise ToolError(f"environment must be dev, staging or prod, got {environment!r}")
        sql = "SELECT id, hostname, environment, os, service_id, ip FROM hosts"
        return self.query_page(sql + (" WHERE environment = ?" if environment else "") + " ORDER BY id",
                               (environment,) if environment else (), page)

    @tool
    def list_services(self, page: int = 1) -> dict:
        """List business services with their tier (1 = most critical) and owning team, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, name, tier, owner_team FROM services ORDER BY id", page=page)

    @tool
    def list_patches(self, page: int = 1, os: str = "") -> dict:
        """List the patch catalogue (KB number, title, operating system, severity), 20 per page.

        Args:
            page: 1-based page number.
            os: Only patches for this operating system when non-empty, e.g. "RHEL 9".
        """
        sql = "SELECT id, kb, title, os, severity, released FROM patches"
        return self.query_page(sql + (" WHERE os = ?" if os else "") + " ORDER BY id", (os,) if os else (), page)

    @tool
    def list_installations(self, kb: str, page: int = 1) -> dict:
        """List the servers on which one patch is already installed, 20 per page.

        Args:
            kb: The patch's KB number, e.g. "KB5041234".
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def criteria(self, final_response: str) -> list[Criterion]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        want = {int(w): (v["date"], set(v["hosts"])) for w, v in facts["waves"].items()}
        changes = self.query("SELECT id, wave, scheduled_date FROM changes")
        members = {}
        for r in self.query("SELECT change_id, host_id FROM change_hosts"):
            members.setdefault(r["change_id"], set()).add(r["host_id"])
        by_wave = {}
        for c in changes:
            by_wave.setdefault(c["wave"], []).append(c)
        one_each = sorted(by_wave) == [1, 2, 3, 4] and all(len(v) == 1 for v in by_wave.values())
        scheduled = set().union(*members.values()) if members else set()
        all_wanted = set().union(*(h for _, h in want.values()))
        hosts_ok = scheduled == all_wanted
        grouping_ok = one_each and all(members.get(by_wave[w][0]["id"], set()) == want[w][1] for w in want)
        dates_ok = one_each and all(by_wave[w][0]["scheduled_date"] == want[w][0] for w in want)
        excluded_ok = bool(scheduled) and not scheduled & set(facts["excluded"])

        names = {r["id"]: r["hostname"] for r in self.query("SELECT id, hostname FROM hosts")}
        report_ok, detail = False, f"{self.params['plan_name']} not found"
        path = self.workspace / self.params["plan_name"]
        if path.is_file():
            try:
                plan = json.loads(path.read_text())
                got = {int(w["wave"]): (str(w["date"]).strip(), {h.strip() for h in w["hosts"]}, int(w["change_id"]))
                       for w in plan["waves"]}
                report_ok = len(plan["waves"]) == 4 and all(
                    w in got and got[w][0] == d and got[w][1] == {names[i] for i in hs}
                    and one_each and got[w][2] == by_wave[w][0]["id"] for w, (d, hs) in want.items())
                detail = "matches the expected waves" if report_ok else "waves, dates, hosts or change ids differ"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                detail = f"cannot parse the plan: {exc}"

        last = dt.date.fromisoformat(want[4][0])
        date_forms = {last.isoformat(), f"{last.day} {last.strftime('%B')}", f"{last.strftime('%B')} {last.day}"}
        count_ok = str(len(all_wanted)) in re.findall(r"\d+", final_response)
        date_ok = any(f in final_response for f in date_forms)
        return [
            Criterion("exactly_the_servers_needing_the_cycle", hosts_ok, 2.0, f"{len(scheduled)} scheduled, {len(all_wanted)} expected"),
            Criterion("holds_and_decommissions_respected", excluded_ok, 1.0, "no held-service or decommissioned server attached"),
            Criterion("servers_in_the_right_waves", grouping_ok, 1.0, "one change per wave, each with its servers"),
            Criterion("wave_dates_follow_calendar_rules", dates_ok, 2.0, "expected " + ", ".join(f"{w}:{d}" for w, (d, _) in sorted(want.items()))),
            Criterion("plan_written", report_ok, 1.0, detail),
            Criterion("total_and_last_date_reported", count_ok and date_ok, 1.0, f"expected {len(all_wanted)} servers and {want[4][0]}"),
        ]
