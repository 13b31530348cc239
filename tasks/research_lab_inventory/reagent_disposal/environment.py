"""Tools and verifier for research_lab_inventory/reagent_disposal."""
import json
import re
from datetime import date

from progagent_lib import Criterion, ToolError, WorkspaceEnvironment, tool


def opened_longer_than(opened: str, months: int, on: date) -> bool:
    """True when a container opened on `opened` has been open for more than `months` calendar months on `on`."""
    d = date.fromisoformat(opened)
    y, m = divmod(d.month - 1 + months, 12)
    day = d.day
    while True:
        try:
            anniversary = date(d.year + y, m + 1, day)
            break
        except ValueError:
            day -= 1
    return anniversary < on


class ReagentDisposalEnv(WorkspaceEnvironment):
    @tool
    def list_reagents(self, page: int = 1, room: str = "") -> dict:
        """List reagent containers in the inventory (summary fields), 20 per page.

        Opening dates, lots and suppliers are only in get_reagent.

        Args:
            page: 1-based page number.
            room: Only containers stored in this room (e.g. "B-104") when non-empty.
        """
        fields = "id, barcode, name, room, hazard_class, container_ml, expiry_date, status"
        if room:
            return self.query_page(f"SELECT {fields} FROM reagents WHERE room = ? ORDER BY id", (room,), page)
        return self.query_page(f"SELECT {fields} FROM reagents ORDER BY id", page=page)

    @tool
    def get_reagent(self, reagent_id: int) -> dict:
        """Full record of one container, including when it was first opened (null if never opened).

        Args:
            reagent_id: The container's numeric id from list_reagents.
        """
        return self.require_row("reagents", reagent_id, "use list_reagents")

    @tool
    def create_manifest(self, stream: str) -> dict:
        """Open a hazardous-waste manifest for one waste stream and return its id.

        Args:
            stream: The waste stream code from the safety office's rules, e.g. "SOLV".
        """
        code = stream.strip().upper()
        if not re.fullmatch(r"[A-Z]{4}", code):
            raise ToolError(f"stream must be a four-letter waste stream code, got {stream!r}")
        manifest_id = self.db.execute("INSERT INTO manifests (stream, status) VALUES (?, 'open')", (code,)).lastrowid
        return {"manifest_id": manifest_id, "stream": code, "status": "open"}

    @tool
    def add_to_manifest(self, manifest_id: int, reagent_id: int) -> dict:
        """Put a container on a manifest; it is then marked as awaiting collection.

        Args:
            manifest_id: The id returned by create_manifest.
            reagent_id: The container to dispose of.
        """
        self.require_row("manifests", manifest_id, "create one with create_manifest")
        reagent = self.require_row("reagents", reagent_id, "use list_reagents")
        if reagent["status"] != "in stock":
            raise ToolError(f"reagent {reagent_id} is {reagent['status']}; only containers in stock can be manifested")
        item = self.db.execute("INSERT INTO manifest_items (manifest_id, reagent_id) VALUES (?, ?)", (manifest_id, reagent_id))
        self.db.execute("UPDATE reagents SET status = 'awaiting collection' WHERE id = ?", (reagent_id,))
        return {"item_id": item.lastrowid, "manifest_id": manifest_id, "reagent_id": reagent_id}

    # --- verifier --------------------------------------------------------------------------------
    def criteria(self, final_response: str) -> list[Criterion]:
        facts = {r["key"]: json.loads(r["value"]) for r in self.query("SELECT key, value FROM _verifier_facts")}
        audit = date.fromisoformat(facts["audit"])
        # Status is changed by add_to_manifest, so decide from the manifested set plus the untouched rows.
        manifested = {r["reagent_id"]: r for r in self.query(
            "SELECT i.reagent_id, m.stream, m.id AS manifest_id FROM manifest_items i JOIN manifests m ON m.id = i.manifest_id")}
        expected = {}
        for r in self.query("SELECT * FROM reagents"):
            if r["status"] == "disposed" or r["barcode"] in facts["extended"]:
                continue
            former = r["name"] in facts["formers"]
            due = r["expiry_date"] <= audit.isoformat() or (
                former and r["opened_on"] is not None and opened_longer_than(r["opened_on"], self.params["perox_months"], audit))
            if due:
                stream = facts["perox_stream"] if former else facts["streams"][r["hazard_class"]]
                expected[r["id"]] = (r["barcode"], stream, r["container_ml"])
        barcode_of = {r["id"]: r["barcode"] for r in self.query("SELECT id, barcode FROM reagents")}
        got_codes = {barcode_of[i] for i in manifested}
        g = facts["guaranteed"]
        streams_ok = all(i in manifested and manifested[i]["stream"] == s for i, (_, s, _) in expected.items())
        used = {}
        for item in manifested.values():
            used.setdefault(item["stream"], set()).add(item["manifest_id"])
        one_per_stream = all(len(ids) == 1 for ids in used.values())

        want = {}
        for _, stream, ml in expected.values():
            entry = want.setdefault(stream, {"containers": 0, "volume_ml": 0})
            entry["containers"] += 1
            entry["volume_ml"] += ml
        summary_name = self.params["report_name"]
        summary_ok, detail = False, f"{summary_name} not found"
        path = self.workspace / summary_name
        if path.is_file():
            try:
                data = json.loads(path.read_text())
                got = {k.strip().upper(): {"containers": int(v["containers"]), "volume_ml": round(float(v["volume_ml"]))}
                       for k, v in data.items()}
                summary_ok = got == want
                detail = "matches the expected streams" if summary_ok else f"got {got}, expected {want}"
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                detail = f"cannot parse {summary_name}: {exc}"
        numbers = {int(n) for n in re.findall(r"(?<![\d.])\d+(?![\d.])", final_response)}
        return [
            Criterion("exactly_the_due_containers_manifested", set(manifested) == set(expected), 2.0,
                      f"{len(manifested)} manifested, {len(expected)} due"),
            Criterion("aged_peroxide_formers_caught", g["aged"] in got_codes and g["fresh"] not in got_codes
                      and g["unopened"] not in got_codes, 1.0, "opened-too-long rule applied only to opened formers"),
            Criterion("extensions_honoured", not (set(facts["extended"]) & got_codes) and g["refused"] in got_codes, 1.0,
                      "approved extension kept, refused one disposed"),
            Criterion("correct_waste_streams", streams_ok and one_per_stream, 1.0, "right stream, one manifest per stream"),
            Criterion("summary_written", summary_ok, 1.0, detail),
            Criterion("total_containers_reported", len(expected) in numbers, 1.0, f"expected {len(expected)}"),
        ]
