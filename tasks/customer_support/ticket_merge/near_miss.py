"""A plausible wrong solution: groups each requester's tickets by subject but chains the time window from
the previous ticket instead of from the primary, and does not know about the second address."""
import json
import re
from datetime import datetime, timedelta

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, cutoff_date, excluded_domain, log_name) -> str:
    book = next(t for t in read_files(tools, "playbook/*").values())
    hours = int(re.search(r"within (\d+) hours", book).group(1))
    groups = {}
    for t in read_all(tools.list_tickets):
        if t["status"] == "solved" or "legal" in t["tags"] or excluded_domain in t["requester_email"].lower():
            continue
        if datetime.strptime(t["created_at"], "%Y-%m-%d %H:%M") < datetime.strptime(cutoff_date, "%d %B %Y"):
            continue
        subject = re.sub(r"^((re|fwd?)\s*:\s*)+", "", t["subject"].lower())
        key = (t["requester_email"].lower(), " ".join(re.sub(r"[^a-z0-9 ]", " ", subject).split()))
        groups.setdefault(key, []).append(t)
    log = {}
    for items in groups.values():
        head, last = None, None
        for t in items:
            at = datetime.strptime(t["created_at"], "%Y-%m-%d %H:%M")
            if head and at - last <= timedelta(hours=hours):
                tools.merge_ticket(source_id=t["id"], target_id=head)
                log.setdefault(head, []).append(t["id"])
            else:
                head = t["id"]
            last = at
    for head, ids in log.items():
        tools.add_internal_note(ticket_id=head, body="merged: " + " ".join(map(str, ids)))
    tools.write_file(path=log_name, content=json.dumps(log))
    return f"{sum(len(v) for v in log.values())} tickets merged."
