"""A plausible wrong solution: follows expiry dates and streams but skips the peroxide-former rules."""
import json
import re
from datetime import datetime

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, perox_months, report_name) -> str:
    docs = read_files(tools)
    rules = " ".join(next(t for t in docs.values() if "What must go" in t).split())
    audit = datetime.strptime(re.search(r"audit - (\d+ \w+ \d{4})", rules).group(1), "%d %B %Y").date().isoformat()
    keep = {code for t in docs.values() if "approved until" in t for code in re.findall(r"RG\d+", t)}
    codes = dict(zip(["flammable", "oxidizer", "corrosive", "toxic", "non-hazardous"],
                     re.findall(r"(?:code|under|go to|materials to|waste,) ([A-Z]{4})", rules)))
    open_manifests, totals = {}, {}
    for item in read_all(tools.list_reagents):
        if item["status"] == "in stock" and item["barcode"] not in keep and item["expiry_date"] <= audit:
            code = codes[item["hazard_class"]]
            open_manifests.setdefault(code, tools.create_manifest(stream=code)["manifest_id"])
            tools.add_to_manifest(manifest_id=open_manifests[code], reagent_id=item["id"])
            t = totals.setdefault(code, {"containers": 0, "volume_ml": 0})
            t["containers"] += 1
            t["volume_ml"] += item["container_ml"]
    tools.write_file(path=report_name, content=json.dumps(totals))
    return f"Total containers for disposal: {sum(t['containers'] for t in totals.values())}"
