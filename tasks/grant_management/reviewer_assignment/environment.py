"""Tools and verifier for grant_management/reviewer_assignment."""
import csv
import io
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class ReviewerAssignmentEnv(WorkspaceEnvironment):
    @tool
    def list_proposals(self, page: int = 1) -> dict:
        """List proposals with topic, principal investigator, institution and co-investigators, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, ref, title, topic, pi_name, institution, co_investigators, requested_amount, summary "
                               "FROM proposals ORDER BY id", page=page)

    @tool
    def list_reviewers(self, page: int = 1) -> dict:
        """List panel reviewers with institution, expertise (comma-separated topics) and profile load limit, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, name, institution, expertise, max_load FROM reviewers ORDER BY id", page=page)

    @tool
    def list_collaborations(self, reviewer_id: int = 0, page: int = 1) -> dict:
        """List reviewers' co-authored papers (co-author name and year), 20 per page.

        Args:
            reviewer_id: Only this reviewer's papers when non-zero.
            page: 1-based page number.
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

    # --- verifier --------------------------------------------------------------------------------
    def eligibility(self) -> tuple[dict, set, dict]:
        """(facts, conflicted qualified pairs, eligible reviewers per proposal)."""
        f = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        reviewers = self.query("SELECT * FROM reviewers")
        coauthors = {(c["reviewer_id"], c["coauthor"]) for c in self.query("SELECT reviewer_id, coauthor FROM collaborations WHERE year >= ?",
                                                                          (f["since_year"],))}
        recusals = {tuple(x) for x in f["recusals"]}
        conflicts, eligible = set(), {}
        for p in self.query("SELECT * FROM proposals WHERE topic != ?", (self.params["deferred_topic"],)):
            named = {n.strip() for n in p["co_investigators"].split(";")}
            eligible[p["id"]] = set()
            for r in reviewers:
                if r["id"] == f["unavailable"] or p["topic"] not in r["expertise"].split(","):
                    continue
                if (r["institution"] == p["institution"] or r["name"] in named or (r["id"], p["pi_name"]) in coauthors
                        or (r["id"], p["id"]) in recusals):
                    conflicts.add((p["id"], r["id"]))
                else:
                    eligible[p["id"]].add(r["id"])
        return f, conflicts, eligible

    def criteria(self, final_response: str) -> list[Criterion]:
        f, conflicts, eligible = self.eligibility()
        limits = {r["id"]: min(r["max_load"], f["cap"]) for r in self.query("SELECT id, max_load FROM reviewers")}
        given = {}
        for a in self.query("SELECT proposal_id, reviewer_id FROM assignments"):
            given.setdefault(a["proposal_id"], []).append(a["reviewer_id"])
        complete = all(len(set(given.get(p, []))) == f["per_proposal"] == len(given.get(p, [])) for p in eligible)
        clean = all(p in eligible and r in eligible[p] for p, rs in given.items() for r in rs)  # deferred topic: none
        loads = {}
        for rs in given.values():
            for r in rs:
                loads[r] = loads.get(r, 0) + 1
        within = all(n <= limits[r] for r, n in loads.items())
        names = {r["id"]: r["name"] for r in self.query("SELECT id, name FROM reviewers")}
        refs = {p["id"]: p["ref"] for p in self.query("SELECT id, ref FROM proposals")}
        report_ok, detail = False, f"{self.params['report_name']} not found"
        path = self.workspace / self.params["report_name"]
        if path.is_file():
            try:
                rows = list(csv.DictReader(io.StringIO(path.read_text().strip())))
                got = sorted((r["proposal_ref"].strip(), r["reviewer"].strip()) for r in rows)
                want = sorted((refs[p], names[r]) for p, rs in given.items() for r in rs)
                report_ok = bool(want) and got == want
                detail = "matches the assignments made" if report_ok else f"{len(got)} rows, {len(want)} assignments made"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                detail = f"cannot parse the report: {exc}"
        counts = {int(n) for n in re.findall(r"(?<![\d.\-])\d+(?![\d.])", final_response)}
        return [
            Criterion("every_proposal_fully_staffed", complete, 1.0, f"each proposal needs {f['per_proposal']} distinct reviewers"),
            Criterion("no_conflicted_or_unqualified_reviewer", bool(given) and clean, 2.0,
                      "deferred topic left alone; expertise, availability, institution, co-investigators, recent co-authorship and declared conflicts"),
            Criterion("loads_within_limits", bool(given) and within, 1.0, f"at most {f['cap']} per reviewer and their profile limit"),
            Criterion("report_written", report_ok, 1.0, detail),
            Criterion("conflict_count_reported", len(conflicts) in counts, 1.0, f"expected {len(conflicts)}"),
        ]
