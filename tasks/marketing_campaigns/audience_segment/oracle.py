import json
import re
from collections import Counter
from datetime import date, timedelta

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, excluded_domain, min_spend, report_name, fold_case=True, window_inclusive=True) -> str:
    def address(text: str) -> str:
        return text.strip().lower() if fold_case else text.strip()

    texts = read_files(tools)
    brief = next(t for t in texts.values() if "campaign brief" in t)
    first_paragraph = brief.split("\n\n")[1]
    countries = set(re.findall(r"\(([A-Z]{2})\)", first_paragraph))  # "Germany (DE), ..."
    window = int(re.search(r"within the (\d+) days", brief).group(1))
    name = re.search(r'name the segment "([^"]+)"', brief).group(1)
    cutoff = (date(2026, 12, 1) - timedelta(days=window)).isoformat()

    # Opt-outs and opt-ins in date order (file names start with the date); the latest word wins.
    opted_out = set()
    for path in sorted(p for p in texts if p.startswith("inbox/")):
        sender = re.search(r"^From: .*<([^>]+)>", texts[path], re.M)
        if not sender:
            continue
        if "put me back" in texts[path].lower():
            opted_out.discard(address(sender.group(1)))
        else:
            opted_out.add(address(sender.group(1)))
    blocked = opted_out | {address(s["email"]) for s in read_all(tools.list_suppressions)}

    audience = []
    for code in sorted(countries):
        for c in read_all(tools.list_contacts, country=code):
            recent = c["last_purchase_date"] and (c["last_purchase_date"] >= cutoff if window_inclusive
                                                  else c["last_purchase_date"] > cutoff)
            if (c["lifecycle_stage"] == "customer" and recent
                    and c["total_spend"] >= min_spend and address(c["email"]) not in blocked
                    and c["email"].lower().split("@")[1] != excluded_domain):
                audience.append(c)
    segment_id = tools.create_segment(name=name)["segment_id"]
    ids = [c["id"] for c in audience]
    for start in range(0, len(ids), 50):
        tools.add_segment_members(segment_id=segment_id, contact_ids=ids[start:start + 50])
    summary = {"segment_id": segment_id, "size": len(ids), "by_country": dict(Counter(c["country"] for c in audience))}
    tools.write_file(path=report_name, content=json.dumps(summary, indent=2))
    return f"Segment '{name}' (id {segment_id}) is ready with {len(ids)} contacts."
