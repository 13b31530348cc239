"""Tools and verifier for customer_support/sla_escalations."""
import csv
import io
import json
import re
from datetime import datetime

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

TEAMS = ("tier2", "duty_manager")
STATUSES = ("open", "pending", "solved")


class SlaEscalationEnv(WorkspaceEnvironment):
    @tool
    def list_customers(self, page: int = 1) -> dict:
        """List customer accounts with their support plan, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, name, plan, region, seats FROM customers ORDER BY id", page=page)

    @tool
    def list_tickets(self, status: str = "", page: int = 1) -> dict:
        """List support tickets, oldest id first, 20 per page. Times are UTC, "YYYY-MM-DD HH:MM".

        Args:
            status: Only tickets with this status ("open", "pending" or "solved") when non-empty.
            page: 1-based page number.
        """
        if status and status not in STATUSES:
            raise ToolError(f"unknown status {status!r}; use one of {', '.join(STATUSES)} or leave it empty")
        sql = "SELECT id, customer_id, subject, priority, status, channel, created_at, first_reply_at, assignee FROM tickets"
        return self.query_page(sql + (" WHERE status = ?" if status else "") + " ORDER BY id", (status,) if status else (), page)

    @tool
    def list_escalations(self, page: int = 1) -> dict:
        """List escalations already on file, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, ticket_id, team, reason, created_at FROM escalations ORDER BY id", page=page)

    @tool
    def escalate_ticket(self, ticket_id: int, team: str, reason: str) -> dict:
        """Escalate one ticket to a team; returns the new escalation record.

        Args:
            ticket_id: The ticket's numeric id.
            team: "tier2" or "duty_manager".
            reason: A short note for the receiving team.
        """
        if team not in TEAMS:
            raise ToolError(f"unknown team {team!r}; use 'tier2' or 'duty_manager'")
        self.require_row("tickets", ticket_id, "use list_tickets")
        if self.query("SELECT id FROM escalations WHERE ticket_id = ?", (ticket_id,)):
            raise ToolError(f"ticket {ticket_id} already has an escalation on file; it cannot be escalated again")
        cur = self.db.execute("INSERT INTO escalations (ticket_id, team, reason, created_at) VALUES (?,?,?, '2026-11-20 09:00')",
                              (ticket_id, team, reason))
        return {"escalation_id": cur.lastrowid, "ticket_id": ticket_id, "team": team}

    # --- verifier --------------------------------------------------------------------------------
    def expected(self) -> dict[int, dict]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        now = datetime.strptime(facts["now"], "%Y-%m-%d %H:%M")
        customers = {c["id"]: c for c in self.query("SELECT id, name, plan, region FROM customers")}
        # Escalations made before the episode are the ones not created at the sweep time.
        earlier = {r["ticket_id"] for r in self.query("SELECT ticket_id FROM escalations WHERE created_at != ?", (facts["now"],))}
        out = {}
        for t in self.query("SELECT * FROM tickets WHERE status = 'open' AND first_reply_at IS NULL"):
            if t["id"] in earlier:
                continue
            cust = customers[t["customer_id"]]
            if cust["region"] == self.params["excluded_region"]:
                continue  # that region's desk runs its own sweep
            hours = facts["targets"][t["priority"]] / (2 if cust["plan"] == "enterprise" else 1)
            elapsed = (now - datetime.strptime(t["created_at"], "%Y-%m-%d %H:%M")).total_seconds() / 3600
            if elapsed - hours > self.params["min_overdue_hours"]:
                out[t["id"]] = {"customer": cust["name"], "priority": t["priority"], "overdue": round(elapsed - hours, 1),
                                "team": "duty_manager" if cust["name"] in facts["vip"] else "tier2"}
        return out

    def read_report(self) -> tuple[dict | None, str]:
        path = self.workspace / self.params["report_name"]
        if not path.is_file():
            return None, f"{self.params['report_name']} not found"
        try:
            rows = list(csv.DictReader(io.StringIO(path.read_text().strip())))
            got = {int(float(r["ticket_id"].strip().lstrip("#"))): (r["customer"].strip(), r["priority"].strip().lower(),
                   round(float(r["hours_overdue"]), 1), r["team"].strip().lower()) for r in rows}
            return (got if len(got) == len(rows) else None), f"{len(rows)} rows"
        except (KeyError, ValueError, TypeError, AttributeError) as exc:
            return None, f"cannot parse the report: {exc}"

    def criteria(self, final_response: str) -> list[Criterion]:
        expected = self.expected()
        new = self.query("SELECT ticket_id, team FROM escalations WHERE created_at = '2026-11-20 09:00'")
        made = {}
        for row in new:
            made.setdefault(row["ticket_id"], []).append(row["team"])
        right_set = set(made) == set(expected)
        teams_ok = all(made.get(tid) == [e["team"]] for tid, e in expected.items())
        got, detail = self.read_report()
        want = {tid: (e["customer"], e["priority"], e["overdue"], e["team"]) for tid, e in expected.items()}
        report_ok = got is not None and set(got) == set(want) and all(
            got[t][:2] == want[t][:2] and abs(got[t][2] - want[t][2]) <= 0.051 and got[t][3] == want[t][3] for t in want)
        numbers = {int(n) for n in re.findall(r"(?<![\d.])\d+(?![\d.])", final_response)}
        worst = max(e["overdue"] for e in expected.values())
        worst_ids = {tid for tid, e in expected.items() if e["overdue"] == worst}
        return [
            Criterion("escalated_exactly_the_breached_tickets", right_set, 2.0,
                      f"{len(made)} tickets escalated, {len(expected)} expected (more than {self.params['min_overdue_hours']} h "
                      f"past target, no {self.params['excluded_region']} accounts)"),
            Criterion("routed_to_the_right_team", right_set and teams_ok, 1.0,
                      "duty manager for accounts on the current VIP watch list, tier 2 otherwise"),
            Criterion("report_written", report_ok, 1.0, detail if not report_ok else "matches the expected breaches"),
            Criterion("count_reported", len(expected) in numbers, 1.0, f"expected {len(expected)} escalations"),
            Criterion("most_overdue_ticket_reported", bool(worst_ids & numbers), 1.0, f"expected ticket {sorted(worst_ids)}"),
        ]
