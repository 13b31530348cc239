import json
import re
from datetime import date, datetime

from progagent_lib.task.oracle_kit import read_all, read_files


def _open_too_long(opened, months, audit):
    d = date.fromisoformat(opened)
    total = d.month - 1 + months
    year, month = d.year + total // 12, total % 12 + 1
    for day in range(d.day, 0, -1):
        try:
            return date(year, month, day) < audit
        except ValueError:
            continue


def solve(tools, perox_months, report_name, peroxide_rules=True) -> str:
    rules, approved = "", set()
    for text in read_files(tools).values():
        if "Chemical store audit" in text:
            rules = " ".join(text.split())
        if "is approved" in text:
            approved |= set(re.findall(r"RG\d{6}", text))
    audit = datetime.strptime(re.search(r"audit - (\d+ \w+ \d{4})", rules).group(1), "%d %B %Y").date()
    formers = {n.strip() for n in re.search(r"Peroxide-forming solvents \((.+?)\)", rules).group(1).split(", ")}
    months = perox_months
    stream_of = {
        "flammable": re.search(r"solvent stream, code (\w{4})", rules).group(1),
        "oxidizer": re.search(r"their own under\s(\w{4})", rules).group(1),
        "corrosive": re.search(r"Corrosives go to (\w{4})", rules).group(1),
        "toxic": re.search(r"toxic materials to\s(\w{4})", rules).group(1),
        "non-hazardous": re.search(r"general lab waste, (\w{4})", rules).group(1),
    }
    former_stream = re.search(r"stabilised stream\s(\w{4})", rules).group(1)

    due = []
    for r in read_all(tools.list_reagents):
        if r["status"] != "in stock" or r["barcode"] in approved:
            continue
        expired = r["expiry_date"] <= audit.isoformat()
        if r["name"] in formers and peroxide_rules:
            if not expired:
                opened = tools.get_reagent(reagent_id=r["id"])["opened_on"]
                expired = opened is not None and _open_too_long(opened, months, audit)
            if expired:
                due.append((former_stream, r))
        elif expired:
            due.append((stream_of[r["hazard_class"]], r))

    manifests, summary = {}, {}
    for stream, r in due:
        if stream not in manifests:
            manifests[stream] = tools.create_manifest(stream=stream)["manifest_id"]
        tools.add_to_manifest(manifest_id=manifests[stream], reagent_id=r["id"])
        entry = summary.setdefault(stream, {"containers": 0, "volume_ml": 0})
        entry["containers"] += 1
        entry["volume_ml"] += r["container_ml"]
    tools.write_file(path=report_name, content=json.dumps(summary, indent=2, sort_keys=True))
    return f"{len(due)} containers are going for disposal, on {len(manifests)} manifests (one per waste stream)."
