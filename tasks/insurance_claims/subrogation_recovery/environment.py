"""Tools and verifier for insurance_claims/subrogation_recovery."""
import csv
import io
import json
import re

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool

HANDLERS = ("outside_counsel", "recovery_desk")


class SubrogationEnv(WorkspaceEnvironment):
    @tool
    def list_claims(self, page: int = 1, status: str = "") -> dict:
        """List claims with loss date, amount paid, third party and their assessed share of fault, 20 per page.

        Args:
            page: 1-based page number.
            status: Only claims in this status ("paid", "open" or "denied"); empty for all.
        """
        if status and status not in ("paid", "open", "denied"):
            raise ToolError('status must be "paid", "open", "denied" or empty')
        sql = ("SELECT id, claim_no, line, loss_date, status, paid_amount, third_party_id, third_party_fault_pct, description "
               "FROM claims")
        return self.query_page(sql + (" WHERE status = ?" if status else "") + " ORDER BY id", (status,) if status else (), page)

    @tool
    def get_third_party(self, third_party_id: int) -> dict:
        """Get one third party: name, kind (business, individual or municipality) and their insurer, if any.

        Args:
            third_party_id: The third party's numeric id.
        """
        return self.require_row("third_parties", third_party_id, what="third party")

    @tool
    def open_recovery_case(self, claim_id: int, expected_recovery: float) -> dict:
        """Open a subrogation recovery case for a paid claim; returns the new case id.

        Args:
            claim_id: The claim to recover.
            expected_recovery: The expected recovery in dollars.
        """
        claim = self.require_row("claims", claim_id, "use list_claims")
        if claim["status"] != "paid":
            raise ToolError(f"claim {claim_id} is {claim['status']}; only paid claims can be recovered")
        if self.query("SELECT id FROM recovery_cases WHERE claim_id = ?", (claim_id,)):
            raise ToolError(f"claim {claim_id} already has a recovery case")
        cur = self.db.execute("INSERT INTO recovery_cases (claim_id, expected_recovery, handler) VALUES (?,?,NULL)",
                              (claim_id, round(float(expected_recovery), 2)))
        return {"case_id": cur.lastrowid, "claim_id": claim_id, "handler": None}

    @tool
    def assign_case(self, case_id: int, handler: str) -> dict:
        """Assign an open recovery case to a handler.

        Args:
            case_id: The id returned when the case was opened.
            handler: "outside_counsel" or "recovery_desk".
        """
        if handler not in HANDLERS:
            raise ToolError(f"handler must be one of {HANDLERS}, got {handler!r}")
        self.require_row("recovery_cases", case_id, "open the case first")
        self.db.execute("UPDATE recovery_cases SET handler = ? WHERE id = ?", (handler, case_id))
        return {"case_id": case_id, "handler": handler}

    # --- verifier --------------------------------------------------------------------------------
    def _ranking(self) -> tuple[list[dict], dict]:
        memo = json.loads(self.query("SELECT value FROM _verifier_facts WHERE key = 'memo'")[0]["value"])
        rows = self.query("SELECT c.*, t.name AS party, t.kind, t.insurer FROM claims c JOIN third_parties t "
                          "ON t.id = c.third_party_id WHERE c.status = 'paid'")
        ranked = []
        for c in rows:
            if c["third_party_fault_pct"] < self.params["min_fault"] or c["loss_date"] < memo["stale_before"]:
                continue
            if c["kind"] == "municipality" or c["insurer"] == memo["kfk"]:
                continue
            rate = memo["coll"]["business"] if c["kind"] == "business" else memo["coll"]["insured" if c["insurer"] else "uninsured"]
            value = round(c["paid_amount"] * c["third_party_fault_pct"] / 100 * rate / 100, 2)
            if value >= memo["min_recovery"]:
                ranked.append({"claim_id": c["id"], "claim_no": c["claim_no"], "party": c["party"], "value": value,
                               "loss_date": c["loss_date"]})
        ranked.sort(key=lambda r: (-r["value"], r["loss_date"]))
        return ranked[: self.params["capacity"]], memo

    def criteria(self, final_response: str) -> list[Criterion]:
        chosen, memo = self._ranking()
        cases = {c["claim_id"]: c for c in self.query("SELECT claim_id, expected_recovery, handler FROM recovery_cases")}
        want = {r["claim_id"]: r for r in chosen}
        set_ok = set(cases) == set(want)
        # Judged on the cases that should exist, so one wrong pick does not fail every criterion.
        common = [k for k in want if k in cases]
        values_ok = bool(common) and all(abs(cases[k]["expected_recovery"] - want[k]["value"]) < 0.01 for k in common)
        handlers_ok = bool(common) and all(
            cases[k]["handler"] == ("outside_counsel" if want[k]["value"] > memo["counsel_over"] else "recovery_desk")
            for k in common) and all(c["handler"] for c in cases.values())

        report_ok, detail = False, f"{self.params['report_name']} not found"
        path = self.workspace / self.params["report_name"]
        if path.is_file():
            try:
                rows = list(csv.DictReader(io.StringIO(path.read_text().strip())))
                got = [(int(r["rank"]), r["claim_no"].strip(), r["third_party"].strip(), round(float(r["expected_recovery"]), 2))
                       for r in rows]
                expect = [(i + 1, r["claim_no"], r["party"], r["value"]) for i, r in enumerate(chosen)]
                report_ok = sorted(got) == expect
                detail = "ranking matches" if report_ok else f"{len(got)} rows; ranking differs from the expected one"
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                detail = f"cannot parse {self.params['report_name']}: {exc}"
        total = round(sum(r["value"] for r in chosen), 2)
        numbers = [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*(?:\.\d+)?", final_response)]
        return [
            Criterion("cases_opened_for_the_top_candidates", set_ok, 2.0, f"{len(cases)} cases opened, {len(want)} expected"),
            Criterion("expected_recoveries_recorded", values_ok, 1.0, "paid x fault share x collectability"),
            Criterion("handlers_assigned", handlers_ok, 1.0, f"outside counsel above {memo['counsel_over']}"),
            Criterion("ranking_report_written", report_ok, 1.0, detail),
            Criterion("total_expected_recovery_reported", any(abs(n - total) < 0.01 for n in numbers), 1.0,
                      f"expected {total:.2f}"),
        ]
