"""Tools and verifier for nonprofit_donors/matching_gift_claims."""
import csv
import datetime as dt
import io
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

TODAY = dt.date(2026, 12, 1)


class MatchingGiftEnv(WorkspaceEnvironment):
    @tool
    def list_employers(self, page: int = 1) -> dict:
        """List the companies our donors work for, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, name, contact_email FROM employers ORDER BY id", page=page)

    @tool
    def list_donors(self, page: int = 1) -> dict:
        """List donors with their employer id (null if none) and employment status, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, name, employer_id, employment_status, email FROM donors ORDER BY id", page=page)

    @tool
    def get_donor_matching_total(self, donor_id: int) -> dict:
        """Get how much of a donor's 2026 giving has already been matched by their employer.

        Args:
            donor_id: The donor's numeric id.
        """
        self.require_row("donors", donor_id, "use list_donors")
        row = self.query("SELECT matched_amount FROM matched_this_year WHERE donor_id = ?", (donor_id,))
        return {"donor_id": donor_id, "year": 2026, "matched_amount": row[0]["matched_amount"] if row else 0.0}

    @tool
    def list_gifts(self, page: int = 1, donor_id: int = 0) -> dict:
        """List gifts (donor, date, amount, fund), in date order, 50 per page.

        Args:
            page: 1-based page number.
            donor_id: Only this donor's gifts when non-zero.
        """
        sql = "SELECT id, donor_id, gift_date, amount, fund, method FROM gifts"
        return self.query_page(sql + (" WHERE donor_id = ?" if donor_id else "") + " ORDER BY gift_date, id", (donor_id,) if donor_id else (), page, page_size=50)

    @tool
    def create_claim(self, employer_id: int) -> dict:
        """Start a matching-gift claim to one company, dated today; returns the claim id.

        Args:
            employer_id: The company the claim goes to.
        """
        self.require_row("employers", employer_id, "use list_employers")
        cur = self.db.execute("INSERT INTO claims (employer_id, submitted_on) VALUES (?, ?)", (employer_id, TODAY.isoformat()))
        return {"claim_id": cur.lastrowid, "employer_id": employer_id}

    @tool
    def add_claim_line(self, claim_id: int, gift_id: int, match_amount: float) -> dict:
        """Add a gift to a claim with the amount the company should match.

        Args:
            claim_id: The id returned by create_claim.
            gift_id: The gift being matched.
            match_amount: Matching amount requested, in dollars (positive).
        """
        self.require_row("claims", claim_id, "create the claim first")
        self.require_row("gifts", gift_id, "use list_gifts")
        if match_amount <= 0:
            raise ToolError("match_amount must be positive")
        if self.query("SELECT id FROM claim_lines WHERE gift_id = ?", (gift_id,)):
            raise ToolError(f"gift {gift_id} is already on a claim")
        cur = self.db.execute("INSERT INTO claim_lines (claim_id, gift_id, match_amount) VALUES (?,?,?)",
                              (claim_id, gift_id, round(float(match_amount), 2)))
        return {"line_id": cur.lastrowid, "claim_id": claim_id, "gift_id": gift_id}

    # --- verifier --------------------------------------------------------------------------------
    def _expected(self) -> dict[int, dict[int, float]]:
        rules = json.loads(self.query("SELECT value FROM _verifier_facts WHERE key = 'rules'")[0]["value"])
        employers = {e["id"]: e["name"] for e in self.query("SELECT id, name FROM employers")}
        donors = {d["id"]: d for d in self.query("SELECT * FROM donors")}
        used = {(r["donor_id"], 2026): r["matched_amount"] for r in self.query("SELECT * FROM matched_this_year")}
        out: dict[int, dict[int, float]] = {}
        for g in self.query("SELECT * FROM gifts ORDER BY gift_date, id"):
            donor = donors[g["donor_id"]]
            if not donor["employer_id"]:
                continue
            company = employers[donor["employer_id"]]
            if company == self.params["excluded_company"]:
                continue
            p = rules["programmes"][company]
            day = dt.date.fromisoformat(g["gift_date"])
            if g["fund"] == "gala tickets" or g["fund"] == p["excluded"] or g["amount"] < p["minimum"]:
                continue
            if donor["employment_status"] == "retiree" and not p["retirees"]:
                continue
            if company == rules["suspended"] and g["gift_date"] >= rules["suspended_from"]:
                continue
            if p["deadline"][0] == "days":
                if (TODAY - day).days > p["deadline"][1]:
                    continue
            elif TODAY > dt.date(day.year + 1, 6, 30):
                continue
            key = (donor["id"], day.year)
            room = p["cap"] - used.get(key, 0.0)
            match = round(min(g["amount"] * p["ratio"], room), 2)
            if match <= 0:
                continue
            used[key] = used.get(key, 0.0) + match
            out.setdefault(donor["employer_id"], {})[g["id"]] = match
        return out

    def criteria(self, final_response: str) -> list[Criterion]:
        expected = self._expected()
        claims = self.query("SELECT id, employer_id FROM claims")
        per_employer = {}
        for c in claims:
            per_employer.setdefault(c["employer_id"], []).append(c["id"])
        claims_ok = set(per_employer) == set(expected) and all(len(v) == 1 for v in per_employer.values())
        lines = self.query("SELECT l.gift_id, l.match_amount, c.employer_id FROM claim_lines l JOIN claims c ON c.id = l.claim_id")
        got = {l["gift_id"]: (l["employer_id"], l["match_amount"]) for l in lines}
        want = {gid: (emp, amt) for emp, gs in expected.items() for gid, amt in gs.items()}
        gifts_ok = set(got) == set(want) and all(got[g][0] == want[g][0] for g in want)
        common = [g for g in want if g in got]
        amounts_ok = bool(common) and all(abs(got[g][1] - want[g][1]) < 0.01 for g in common)
        total = round(sum(a for _, a in want.values()), 2)
        names = {e["id"]: e["name"] for e in self.query("SELECT id, name FROM employers")}
        report_name = self.params["report_name"]
        report_ok, detail = False, f"{report_name} not found"
        path = self.workspace / report_name
        if path.is_file():
            try:
                rows = list(csv.DictReader(io.StringIO(path.read_text().strip())))
                got_rows = {r["company"].strip(): (int(r["gifts"]), round(float(r["match_total"]), 2)) for r in rows}
                want_rows = {names[emp]: (len(gs), round(sum(gs.values()), 2)) for emp, gs in expected.items()}
                report_ok = got_rows == want_rows and len(rows) == len(want_rows)
                detail = "matches the claims" if report_ok else f"{len(rows)} rows; {len(want_rows)} companies expected"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                detail = f"cannot parse the summary: {exc}"
        numbers = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*(?:\.\d+)?", final_response)]
        return [
            Criterion("one_claim_per_matching_company", claims_ok, 1.0, f"{len(per_employer)} companies claimed, {len(expected)} expected (not {self.params['excluded_company']})"),
            Criterion("eligible_gifts_claimed", gifts_ok, 2.0, f"{len(got)} gifts on claims, {len(want)} eligible"),
            Criterion("match_amounts_with_ratio_and_cap", amounts_ok, 1.0, "ratio applied, limited by the yearly cap"),
            Criterion("claims_summary_written", report_ok, 1.0, detail),
            Criterion("total_claimed_reported", any(abs(n - total) < 0.01 for n in numbers), 1.0, f"expected {total:.2f}"),
        ]
