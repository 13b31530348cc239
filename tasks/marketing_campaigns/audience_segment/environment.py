from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

MAX_BATCH = 50


class AudienceSegmentEnv(WorkspaceEnvironment):
    @tool
    def list_contacts(self, country: str = "", page: int = 1) -> dict:
        """List marketing contacts with purchase history, 20 per page.

        Args:
            country: Only contacts with this two-letter country code (e.g. "DE") when non-empty.
        """
        sql = ("SELECT id, email, first_name, country, lifecycle_stage, signup_date, last_purchase_date, total_spend "
               "FROM contacts")
        where, args = (" WHERE country = ?", (country.upper(),)) if country else ("", ())
        return self.query_page(sql + where + " ORDER BY id", args, page)

    @tool
    def list_suppressions(self, page: int = 1) -> dict:
        """List addresses the sending platform refuses to mail, 20 per page."""
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

    def criteria(self, final_response: str) -> list[Criterion]:
        brief_name = self.reference.query("SELECT name FROM segments WHERE created_by = 'assistant'")[0]["name"]
        named = "lower(trim(s.name)) = lower('{}')".format(brief_name.replace("'", "''"))
        members = "segment_members m JOIN segments s ON s.id = m.segment_id"
        sql = f"SELECT m.contact_id FROM {members} WHERE {named}"
        mine, audience = ({r[0] for r in db.execute(sql)} for db in (self.db, self.reference.db))
        segment_made = bool(self.query(f"SELECT 1 FROM segments s WHERE {named}"))
        return [
            self.tables_match("segments s", key="lower(trim(s.name))", where=named,
                              criterion="segment_created_with_the_brief_name"),
            self.tables_match(members, key="m.contact_id", where=named, weight=2.0,
                              criterion="members_exactly_the_audience"),
            # Partial credit: a segment that misses people still mails nobody it must not.
            Criterion("no_opted_out_or_ineligible_contact_mailed", segment_made and not mine - audience, 1.0,
                      f"{len(mine - audience)} members who should not be there" if segment_made else "no segment"),
            self.file_matches(self.params["report_name"], as_="json", criterion="summary_file_written"),
            self.answer_states(len(audience), criterion="size_reported"),
        ]
