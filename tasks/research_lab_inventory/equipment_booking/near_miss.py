"""A plausible wrong solution: decides requests first come, first served, ignoring the funding priority."""
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, closing_hour, report_name) -> str:
    notes = [" ".join(t.split()) for t in read_files(tools).values()]
    policy = next(t for t in notes if "booking policy" in t)
    cap = int(re.search(r"at most (\d+) approved", policy).group(1))
    special = {}
    down = []
    for t in notes:
        q = re.search(r"the (.+?) may hold up to (\d+)", t)
        if q:
            special[q.group(1)] = int(q.group(2))
        m = re.search(r"(\S+) will be out of service on \w+ (\d+) \w+ from (\d+):00 to (\d+):00", t)
        if m:
            down.append(m.groups())
    kit = sorted(read_all(tools.list_instruments), key=lambda i: i["asset_tag"])
    teams = {g["id"]: g["name"] for g in read_all(tools.list_groups)}
    hours, taken, out, refused = {}, [], [], 0
    for tag, dom, a, b in down:  # outages are keyed by day of month, as the e-mail gives them
        taken.append((tag, dom, int(a), int(b)))
    for r in sorted(read_all(tools.list_requests), key=lambda r: r["submitted_at"]):
        a, b = r["start_hour"], r["start_hour"] + r["hours"]
        dom = str(int(r["day"][8:]))
        if a < 8 or b > closing_hour:
            tools.reject_request(request_id=r["id"], reason="outside hours")
        elif hours.get(r["group_id"], 0) + r["hours"] > special.get(teams[r["group_id"]], cap):
            tools.reject_request(request_id=r["id"], reason="over quota")
        else:
            pick = next((i for i in kit if i["kind"] == r["kind"] and not any(
                t == i["asset_tag"] and d in (r["day"], dom) and s < b and a < e for t, d, s, e in taken)), None)
            if pick is None:
                tools.reject_request(request_id=r["id"], reason="no capacity")
            else:
                tools.approve_request(request_id=r["id"], instrument_id=pick["id"])
                taken.append((pick["asset_tag"], r["day"], a, b))
                hours[r["group_id"]] = hours.get(r["group_id"], 0) + r["hours"]
                out.append(f"{r['request_no']},approved,{pick['asset_tag']}")
                continue
        refused += 1
        out.append(f"{r['request_no']},rejected,")
    tools.write_file(path=report_name, content="request_no,decision,instrument\n" + "\n".join(out))
    return f"Rejected: {refused}"
