import json
import re
from datetime import datetime, timedelta

from progagent_lib.task.oracle_kit import read_all, read_files


def normalise(subject):
    text = subject.lower()
    previous = None
    while previous != text:
        previous, text = text, re.sub(r"^\s*(re|fw|fwd)\s*:\s*", "", text)
    return " ".join(re.sub(r"[^a-z0-9 ]", " ", text).split())


def solve(tools, cutoff_date, excluded_domain, log_name, window_from_primary=True) -> str:
    texts = read_files(tools)
    playbook = next(t for t in texts.values() if "duplicate tickets" in t.lower() and "primary" in t)
    window = timedelta(hours=int(re.search(r"within (\d+) hours of the primary", playbook).group(1)))
    same_person = {}
    for text in texts.values():
        pair = re.search(r"(\S+@\S+) and (\S+@\S+) are the same person", text)
        if pair:
            same_person[pair.group(2).lower()] = pair.group(1).lower()
    legal_excluded = any("tagged legal" in t for t in texts.values())

    cutoff = datetime.strptime(cutoff_date, "%d %B %Y")
    threads = {}
    for t in read_all(tools.list_tickets):  # oldest first
        if t["status"] in ("solved", "merged") or (legal_excluded and "legal" in t["tags"].split(",")):
            continue
        if datetime.strptime(t["created_at"], "%Y-%m-%d %H:%M") < cutoff or t["requester_email"].lower().endswith("@" + excluded_domain):
            continue
        who = t["requester_email"].lower()
        threads.setdefault((same_person.get(who, who), normalise(t["subject"])), []).append(t)

    log = {}
    for tickets in threads.values():
        primary = None
        for t in tickets:
            when = datetime.strptime(t["created_at"], "%Y-%m-%d %H:%M")
            if primary and when - primary[1] <= window:
                tools.merge_ticket(source_id=t["id"], target_id=primary[0])
                log[primary[0]].append(t["id"])
                primary = primary if window_from_primary else (primary[0], when)  # else chained from the last one
            else:
                primary = (t["id"], when)
                log[t["id"]] = []
    log = {p: ids for p, ids in log.items() if ids}
    for primary, ids in log.items():
        # the playbook asks for a note listing the ticket numbers merged into the primary
        tools.add_internal_note(ticket_id=primary, body=", ".join(f"#{i}" for i in ids))
    tools.write_file(path=log_name, content=json.dumps({str(k): v for k, v in log.items()}, indent=2))
    return f"Merged {sum(map(len, log.values()))} duplicate tickets into {len(log)} primary tickets."
