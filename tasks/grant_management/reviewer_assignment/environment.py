import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool
from progagent_lib.task.criteria import MAX_FILE_CHARS, compare_rows, parse_rows


class ReviewerAssignmentEnv(WorkspaceEnvironment):
    @tool
    def list_proposals(self, page: int = 1) -> dict:
        """List proposals with topic, principal investigator, institution and co-investigators, 20 per page."""
        return self.query_page("SELECT id, ref, title, topic, pi_name, institution, co_investigators, requested_amount, summary "
                               "FROM proposals ORDER BY id", page=page)

    @tool
    def list_reviewers(self, page: int = 1) -> dict:
        """List panel reviewers with institution, expertise (comma-separated topics) and profile load limit, 20 per page.
        """
        return self.query_page("SELECT id, name, institution, expertise, max_load FROM reviewers ORDER BY id", page=page)

    @tool
    def list_collaborations(self, reviewer_id: int = 0, page: int = 1) -> dict:
        """List reviewers' co-authored papers (co-author name and year), 20 per page.

        Args:
            reviewer_id: Only this reviewer's papers when non-zero.
        """
        where, args = (" WHERE reviewer_id = ?", (reviewer_id,)) if reviewer_id else ("", ())
        return self.query_page("SELECT reviewer_id, coauthor, year, venue FROM collaborations" + where + " ORDER BY id", args, page)

    @tool
    def assign_reviewer(self, proposal_id: int, reviewer_id: int) -> dict:
        """Assign a reviewer to a proposal; returns the assignment id.

        Args:
            proposal_id: The proposal's numeric id.
            reviewer_id: The reviewer's numeric id.
        """
        self.require_row("proposals", proposal_id, "use list_proposals")
        reviewer = self.require_row("reviewers", reviewer_id, "use list_reviewers")
        if self.query("SELECT id FROM assignments WHERE proposal_id = ? AND reviewer_id = ?", (proposal_id, reviewer_id)):
            raise ToolError("this reviewer is already assigned to this proposal")
        load = self.query("SELECT count(*) AS n FROM assignments WHERE reviewer_id = ?", (reviewer_id,))[0]["n"]
        if load >= reviewer["max_load"]:
            raise ToolError(f"reviewer {reviewer_id} is at their profile limit of {reviewer['max_load']} proposals")
        cur = self.db.execute("INSERT INTO assignments (proposal_id, reviewer_id) VALUES (?, ?)", (proposal_id, reviewer_id))
        return {"assignment_id": cur.lastrowid, "proposal_id": proposal_id, "reviewer_id": reviewer_id, "reviewer_load": load + 1}

    @tool
    def remove_assignment(self, assignment_id: int) -> dict:
        """Remove an assignment.

        Args:
            assignment_id: The id returned by assign_reviewer.
        """
        self.require_row("assignments", assignment_id)
        self.db.execute("DELETE FROM assignments WHERE id = ?", (assignment_id,))
        return {"assignment_id": assignment_id, "removed": True}

    # Many assignments keep the panel rules, so they are checked against the rules, not against the reference's.
    def broken(self, rule: str) -> int:
        """Assignments to a deferred proposal or an unfit or conflicted reviewer, or reviewers over their limit."""
        values = dict(self.facts, deferred=self.params["deferred_topic"], since=2026 - self.params["coi_years"] + 1)
        sql = {
            "conflict": "FROM assignments a JOIN proposals p ON p.id = a.proposal_id JOIN reviewers r ON r.id = "
                        "a.reviewer_id WHERE p.topic = :deferred OR r.id = :unavailable OR instr(',' || r.expertise "
                        "|| ',', ',' || p.topic || ',') = 0 OR r.institution = p.institution OR instr('; ' || "
                        "p.co_investigators || ';', '; ' || r.name || ';') > 0 OR (r.id = :recuser AND p.id = "
                        ":recused) OR EXISTS (SELECT 1 FROM collaborations c WHERE c.reviewer_id = r.id AND "
                        "c.coauthor = p.pi_name AND c.year >= :since)",
            "load": "FROM (SELECT r.max_load, count(*) AS n FROM assignments a JOIN reviewers r ON r.id = "
                    "a.reviewer_id GROUP BY r.id) WHERE n > min(max_load, :cap)",
        }[rule]
        return self.db.execute(f"SELECT count(*) {sql}", values).fetchone()[0]

    def report_written(self) -> Criterion:
        """The report lists this episode's assignments."""
        name = self.params["report_name"]
        want = self.query("SELECT p.ref AS proposal_ref, r.name AS reviewer FROM assignments a JOIN proposals p ON "
                          "p.id = a.proposal_id JOIN reviewers r ON r.id = a.reviewer_id")
        try:
            problem = compare_rows(parse_rows(self.fs.read_text(name, MAX_FILE_CHARS), "csv"), want, [],
                                   ["proposal_ref", "reviewer"], tolerance=0)
        except Exception as exc:  # noqa: BLE001 - missing, unreadable or not a table: said in the detail
            problem = f"{name}: {str(exc)[:200] or type(exc).__name__}"
        return Criterion("report_written", bool(want) and problem is None, 1.0, problem or f"{len(want)} assignments")

    def criteria(self, final_response: str) -> list[Criterion]:
        per_proposal = ("(SELECT proposal_id, count(DISTINCT reviewer_id) AS reviewers, count(*) AS assignments "
                        "FROM assignments GROUP BY proposal_id)")
        assigned = self.query("SELECT count(*) AS n FROM assignments")[0]["n"]
        conflicts, overloaded = self.broken("conflict"), self.broken("load")
        found = int(re.search(r"I found (\d+) conflicts", self.reference.answer).group(1))
        return [
            self.tables_match(per_proposal, key="proposal_id", columns=["reviewers", "assignments"],
                              criterion="every_proposal_fully_staffed"),
            Criterion("no_conflicted_or_unqualified_reviewer", assigned > 0 and not conflicts, 2.0,
                      f"{conflicts} assignments to the deferred topic, or to a reviewer without the expertise, "
                      "away, or with a conflict of interest"),
            Criterion("loads_within_limits", assigned > 0 and not overloaded, 1.0,
                      f"{overloaded} reviewers over the round's cap or their profile limit"),
            self.report_written(),
            self.answer_states(found, criterion="conflict_count_reported"),
        ]
