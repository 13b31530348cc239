"""Tools and verifier for marketing_campaigns/audience_segment."""
import json
import re
from collections import Counter

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

MAX_BATCH = 50


class AudienceSegmentEnv(WorkspaceEnvironment):
    @tool
    def list_contacts(self, country: str = "", page: int = 1) -> dict:
        """List marketing contacts with purchase history, 20 per page.

        Args:
            country: Only contacts with this two-letter country code (e.g. "DE") when non-empty.
            page: 1-based page number.
        """
        sql = ("SELECT id, email, first_name, country, lifecycle_stage, signup_date, last_purchase_date, total_spend "
               "FROM contacts")
        if country:
            return self.query_page(sql + " WHERE country = ? ORDER BY id", (country.upper(),), page)
        return self.query_page(sql + " ORDER BY id", page=page)

    @tool
    def list_suppressions(self, page: int = 1) -> dict:
        """List addresses the sending platform refuses to mail, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT email, reason, added_on FROM suppressions ORDER BY id", page=page)

    @tool
    def create_segment(self, name: str) -> dict:
        """Create an empty audience segment; returns its id.

        Args:
            name: The segment's display name.
        """
        if not name.strip():
            raise ToolError("the segment name must not be empty")
        if self.query("SELECT id FROM segments WHERE lower(name) = lower(?)", (name.strip(),)):
            raise ToolError(f"a segment named {name!r} already exists; add members to it instead")
        cur = self.db.execute("INSERT INTO segments (name, created_by) VALUES (?, 'assistant')", (name.strip(),))
        return {"segment_id": cur.lastrowid, "name": name.strip(), "size": 0}

    def _segment(self, segment_id: int) -> None:
        self.require_row("segments", segment_id, "create_segment returns the id to use")

    @tool
    def add_segment_members(self, segment_id: int, contact_ids: list[int]) -> dict:
        """Add up to 50 contacts to a segment; contacts already in it are ignored.

        Args:
            segment_id: The id returned by create_segment.
            contact_ids: Contact ids to add (at most 50 per call).
        """
        self._segment(segment_id)
        if not contact_ids or len(contact_ids) > MAX_BATCH:
            raise ToolError(f"pass between 1 and {MAX_BATCH} contact ids per call; split larger lists into batches")
        known = {r["id"] for r in self.query(
            f"SELECT id FROM contacts WHERE id IN ({','.join('?' * len(contact_ids))})", tuple(contact_ids))}
        unknown = sorted(set(contact_ids) - known)
        if unknown:
            raise ToolError(f"unknown contact ids {unknown[:10]}; nothing was added")
        self.db.executemany("INSERT OR IGNORE INTO segment_members VALUES (?, ?)", [(segment_id, c) for c in contact_ids])
        size = self.query("SELECT count(*) AS n FROM segment_members WHERE segment_id = ?", (segment_id,))[0]["n"]
        return {"segment_id": segment_id, "size": size}

    @tool
    def remove_segment_members(self, segment_id: int, contact_ids: list[int]) -> dict:
        """Remove contacts from a segment.

        Args:
            segment_id: The segment's id.
            contact_ids: Contact ids to remove (at most 50 per call).
        """
        self._segment(segment_id)
        if not contact_ids or len(contact_ids) > MAX_BATCH:
            raise ToolError(f"pass between 1 and {MAX_BATCH} contact ids per call")
        self.db.executemany("DELETE FROM segment_members WHERE segment_id = ? AND contact_id = ?",
                            [(segment_id, c) for c in contact_ids])
        size = self.query("SELECT count(*) AS n FROM segment_members WHERE segment_id = ?", (segment_id,))[0]["n"]
        return {"segment_id": segment_id, "size": size}

    # --- verifier --------------------------------------------------------------------------------
    def expected_members(self, facts: dict) -> dict[int, str]:
        blocked = {r["email"].lower() for r in self.query("SELECT email FROM suppressions")} | set(facts["opted_out"])
        rows = self.query("SELECT id, email, country, lifecycle_stage, last_purchase_date, total_spend FROM contacts")
        return {r["id"]: r["country"] for r in rows
                if r["country"] in facts["countries"] and r["lifecycle_stage"] == "customer"
                and r["last_purchase_date"] >= facts["cutoff"] and r["total_spend"] >= facts["min_spend"]
                and r["email"].lower() not in blocked
                and not r["email"].lower().endswith("@" + self.params["excluded_domain"])}

    def criteria(self, final_response: str) -> list[Criterion]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        expected = self.expected_members(facts)
        named = self.query("SELECT id FROM segments WHERE lower(trim(name)) = lower(?)", (facts["segment_name"],))
        segment_id = named[0]["id"] if len(named) == 1 else None
        members = {r["contact_id"] for r in self.query("SELECT contact_id FROM segment_members WHERE segment_id = ?",
                                                       (segment_id,))} if segment_id else set()
        blocked_hit = members - set(expected)
        report_name = self.params["report_name"]
        summary_ok, detail = False, f"{report_name} not found"
        path = self.workspace / report_name
        if path.is_file():
            try:
                data = json.loads(path.read_text())
                by_country = {str(k).upper(): int(v) for k, v in data["by_country"].items() if int(v) != 0}
                summary_ok = (int(data["segment_id"]) == segment_id and int(data["size"]) == len(expected)
                              and by_country == dict(Counter(expected.values())))
                detail = "matches the segment" if summary_ok else f"reported {data.get('size')} members, {len(expected)} expected"
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                detail = f"cannot parse the summary: {exc}"
        numbers = {int(n.replace(",", "")) for n in re.findall(r"(?<![\d.])\d[\d,]*(?![\d.])", final_response)}
        return [
            Criterion("segment_created_with_the_brief_name", segment_id is not None, 1.0,
                      f"one segment named {facts['segment_name']!r}"),
            Criterion("members_exactly_the_audience", segment_id is not None and members == set(expected), 2.0,
                      f"{len(members)} members, {len(expected)} expected (none at {self.params['excluded_domain']})"),
            Criterion("no_opted_out_or_ineligible_contact_mailed", segment_id is not None and not blocked_hit, 1.0,
                      f"{len(blocked_hit)} members who should not be there"),
            Criterion("summary_file_written", summary_ok, 1.0, detail),
            Criterion("size_reported", len(expected) in numbers, 1.0, f"expected {len(expected)}"),
        ]
