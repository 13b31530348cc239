"""A plausible wrong solution: compares opt-out addresses case-sensitively and treats the window as
exclusive of its first day, so several opted-out people are still mailed."""
import json
import re
from collections import Counter
from datetime import date, timedelta

from progagent_lib.task.oracle_kit import read_all, read_files

CODES = {"Germany": "DE", "France": "FR", "Netherlands": "NL", "Spain": "ES", "Italy": "IT", "Poland": "PL",
         "Sweden": "SE", "Ireland": "IE"}


def solve(tools, excluded_domain, min_spend, report_name) -> str:
    texts = read_files(tools)
    brief = next(t for t in texts.values() if "campaign brief" in t)
    countries = {code for country, code in CODES.items() if country in brief.split("\n\n")[1]}
    cutoff = (date(2026, 12, 1) - timedelta(days=int(re.search(r"within the (\d+) days", brief).group(1)))).isoformat()
    floor = min_spend
    name = re.search(r'name the segment "([^"]+)"', brief).group(1)
    unsubscribed = set(re.findall(r"^From: .*<([^>]+)>", "\n".join(texts.values()), re.M))
    unsubscribed |= {s["email"] for s in read_all(tools.list_suppressions)}
    chosen = [c for c in read_all(tools.list_contacts)
              if c["country"] in countries and c["lifecycle_stage"] == "customer" and c["last_purchase_date"] > cutoff
              and c["total_spend"] >= floor and c["email"] not in unsubscribed and not c["email"].endswith(excluded_domain)]
    seg = tools.create_segment(name=name)["segment_id"]
    for i in range(0, len(chosen), 50):
        tools.add_segment_members(segment_id=seg, contact_ids=[c["id"] for c in chosen[i:i + 50]])
    tools.write_file(path=report_name, content=json.dumps(
        {"segment_id": seg, "size": len(chosen), "by_country": Counter(c["country"] for c in chosen)}))
    return f"The segment has {len(chosen)} contacts."
