"""Tools and verifier for nonprofit_donors/tax_receipts."""
import csv
import io
import json
import re
from datetime import date

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


class TaxReceiptsEnv(WorkspaceEnvironment):
    @tool
    def list_donors(self, page: int = 1) -> dict:
        """List supporters with their supporter number, name, e-mail and country of residence, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, donor_no, first_name, last_name, email, country FROM donors ORDER BY id", page=page)

    @tool
    def list_gifts(self, page: int = 1, date_from: str = "", date_to: str = "", donor_id: int = 0) -> dict:
        """List recorded gifts (date, amount, payment method, status), oldest first, 20 per page.

        Args:
            page: 1-based page number.
            date_from: Earliest gift date, YYYY-MM-DD inclusive, when non-empty.
            date_to: Latest gift date, YYYY-MM-DD inclusive, when non-empty.
            donor_id: Only this donor's gifts when non-zero.
        """
        bounds = []
        for label, value in (("date_from", date_from), ("date_to", date_to)):
            try:
                bounds.append(date.fromisoformat(value).isoformat() if value else None)
            except ValueError:
                raise ToolError(f"{label} must be YYYY-MM-DD, got {value!r}") from None
        return self.query_page(
            "SELECT id, donor_id, gift_date, amount, method, campaign, status FROM gifts "
            "WHERE gift_date >= ? AND gift_date <= ? AND (? = 0 OR donor_id = ?) ORDER BY gift_date, id",
            (bounds[0] or "0000-00-00", bounds[1] or "9999-12-31", donor_id, donor_id), page)

    @tool
    def list_declarations(self, page: int = 1) -> dict:
        """List Gift Aid declarations on file: who signed, when, and which gifts they cover, 20 per page.

        Args:
            page: 1-based page number.
        """
        return self.query_page("SELECT id, donor_id, signed_on, covers FROM declarations ORDER BY id", page=page)

    @tool
    def issue_receipt(self, donor_id: int, qualifying_total: float, gift_aid: float) -> dict:
        """Issue this tax year's annual receipt to a donor; returns the new receipt number.

        Args:
            donor_id: The donor's numeric id.
            qualifying_total: Total of the donor's qualifying gifts in the tax year, in pounds.
            gift_aid: Gift Aid reclaimable on those gifts, in pounds (0 if none).
        """
        self.require_row("donors", donor_id, "use list_donors")
        if qualifying_total <= 0 or gift_aid < 0:
            raise ToolError("qualifying_total must be positive and gift_aid cannot be negative")
        if self.query("SELECT 1 FROM receipts WHERE donor_id = ?", (donor_id,)):
            raise ToolError(f"donor {donor_id} already has a receipt for this tax year")
        count = self.query("SELECT COUNT(*) AS n FROM receipts")[0]["n"]
        number = f"RCP-{donor_id * 7 % 1000:03d}{count + 1:04d}"
        self.db.execute("INSERT INTO receipts (receipt_no, donor_id, tax_year, qualifying_total, gift_aid) VALUES (?,?,?,?,?)",
                        (number, donor_id, "current", qualifying_total, gift_aid))
        return {"receipt_no": number, "donor_id": donor_id}

    # --- verifier --------------------------------------------------------------------------------
    def _expected(self) -> tuple[dict, dict]:
        f = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        donors = {d["id"]: d for d in self.query("SELECT * FROM donors")}
        covers = {dc["donor_id"]: dc for dc in self.query("SELECT * FROM declarations")}
        totals, aided = {}, {}
        for g in self.query("SELECT * FROM gifts WHERE gift_date BETWEEN ? AND ? AND status = 'received' "
                            "AND method NOT IN ('raffle ticket', 'auction purchase') AND campaign != ?",
                            (f["start"], f["end"], self.params["excluded_campaign"])):
            did = g["donor_id"]
            totals[did] = totals.get(did, 0) + g["amount"]
            dec = covers.get(did)
            covered = dec is not None and (dec["covers"].startswith("past") or g["gift_date"] >= dec["signed_on"])
            if f["cancelled"].get(str(did), "9999") <= g["gift_date"]:
                covered = False
            if covered and donors[did]["country"] == "United Kingdom":
                aided[did] = aided.get(did, 0) + g["amount"]
        expected = {}
        for did, total in totals.items():
            if total >= f["threshold"]:
                d = donors[did]
                expected[did] = {"donor": "Anonymous" if did in f["anonymous"] else f"{d['first_name']} {d['last_name']}",
                                 "total": round(total, 2), "gift_aid": round(aided.get(did, 0) * 0.25, 2)}
        return expected, f

    def criteria(self, final_response: str) -> list[Criterion]:
        expected, f = self._expected()
        issued = {r["donor_id"]: r for r in self.query("SELECT * FROM receipts")}
        totals_ok = all(k in issued and abs(issued[k]["qualifying_total"] - e["total"]) < 0.005 for k, e in expected.items())
        aid_ok = all(k in issued and abs(issued[k]["gift_aid"] - e["gift_aid"]) < 0.005 for k, e in expected.items())

        report_name = self.params["report_name"]
        report_ok, anon_ok, detail = False, False, f"{report_name} not found"
        path = self.workspace / report_name
        if path.is_file():
            try:
                rows = list(csv.DictReader(io.StringIO(path.read_text().strip())))
                got = {r["receipt_no"].strip(): (r["donor"].strip(), round(float(r["qualifying_total"]), 2), round(float(r["gift_aid"]), 2))
                       for r in rows}
                want = {issued[k]["receipt_no"]: (e["donor"], e["total"], e["gift_aid"]) for k, e in expected.items() if k in issued}
                report_ok = got == want and len(rows) == len(expected)
                named = {r["donor"].strip().lower() for r in rows}
                anon_ok = all(expected[k]["donor"] == "Anonymous" and got.get(issued[k]["receipt_no"], ("",))[0] == "Anonymous"
                              for k in f["anonymous"] if k in expected and k in issued) and not any(
                    f"{d['first_name']} {d['last_name']}".lower() in named
                    for d in self.query("SELECT * FROM donors") if d["id"] in f["anonymous"]
                    and not any(e["donor"].lower() == f"{d['first_name']} {d['last_name']}".lower() for e in expected.values()))
                detail = "matches the issued receipts" if report_ok else f"{len(rows)} rows; differs from the {len(expected)} expected"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                detail = f"cannot parse {report_name}: {exc}"
        grand = round(sum(e["gift_aid"] for e in expected.values()), 2)
        amounts = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*\.\d{2}", final_response)]
        return [
            Criterion("receipts_for_exactly_the_qualifying_donors", set(issued) == set(expected), 2.0,
                      f"{len(issued)} receipts, {len(expected)} expected"),
            Criterion("qualifying_totals_correct", totals_ok, 1.0, f"tax-year gifts, excluding purchases, refunds and the {self.params['excluded_campaign']}"),
            Criterion("gift_aid_correct", aid_ok, 1.0, "declaration scope, cancellations and residence applied"),
            Criterion("anonymity_respected", anon_ok, 1.0, "donors who asked are shown as Anonymous"),
            Criterion("report_written", report_ok, 1.0, detail),
            Criterion("total_gift_aid_reported", any(abs(a - grand) < 0.005 for a in amounts), 1.0, f"expected {grand:.2f}"),
        ]
