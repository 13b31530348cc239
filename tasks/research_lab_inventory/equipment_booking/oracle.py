import re
from datetime import datetime

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, closing_hour, report_name, by_funding=True) -> str:
    outages, quota_for = [], {}
    for text in read_files(tools).values():
        flat = " ".join(text.split())
        if "booking policy" in flat:
            quota = int(re.search(r"at most (\d+) approved instrument-hours", flat).group(1))
            open_from, open_to = int(re.search(r"opens at (\d\d):00", flat).group(1)), closing_hour
        m = re.search(r"The .+? (\S+) will be\s+out of service on \w+ (\d+ \w+) from (\d\d):00 to (\d\d):00", flat)
        if m:
            outages.append(m.groups())
        q = re.search(r"the ([A-Z][\w ]+?) may hold up to (\d+) instrument-hours in the week starting \w+ (\d+ \w+)", flat)
        if q:
            quota_for[q.group(1)] = int(q.group(2))

    instruments = read_all(tools.list_instruments)
    groups = {g["id"]: g for g in read_all(tools.list_groups)}
    requests = read_all(tools.list_requests)
    year = requests[0]["day"][:4]
    busy = {i["id"]: [] for i in instruments}
    for tag, day, start, end in outages:
        when = datetime.strptime(f"{day} {year}", "%d %B %Y").date().isoformat()
        inst = next(i for i in instruments if i["asset_tag"] == tag)
        busy[inst["id"]].append((when, int(start), int(end)))
    used = {g: 0 for g in groups}

    rows, rejected = ["request_no,decision,instrument"], 0
    rank = {"teaching": 0, "grant": 1, "internal": 2}
    for r in sorted(requests, key=lambda r: (rank[groups[r["group_id"]]["funding"]] if by_funding else 0,
                                             r["submitted_at"], r["request_no"])):
        start, end = r["start_hour"], r["start_hour"] + r["hours"]
        limit = quota_for.get(groups[r["group_id"]]["name"], quota)
        reason, chosen = None, None
        if start < open_from or end > open_to:
            reason = "outside hours"
        elif used[r["group_id"]] + r["hours"] > limit:
            reason = "over quota"
        else:
            free = sorted((i for i in instruments if i["kind"] == r["kind"] and all(
                d != r["day"] or e <= start or end <= s for d, s, e in busy[i["id"]])), key=lambda i: i["asset_tag"])
            if free:
                chosen = free[0]
            else:
                reason = "no capacity"
        if chosen:
            tools.approve_request(request_id=r["id"], instrument_id=chosen["id"])
            busy[chosen["id"]].append((r["day"], start, end))
            used[r["group_id"]] += r["hours"]
            rows.append(f"{r['request_no']},approved,{chosen['asset_tag']}")
        else:
            tools.reject_request(request_id=r["id"], reason=reason)
            rejected += 1
            rows.append(f"{r['request_no']},rejected,")
    tools.write_file(path=report_name, content="\n".join(rows) + "\n")
    return f"{rejected} requests had to be rejected; the other {len(requests) - rejected} are approved."
