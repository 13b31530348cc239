"""A plausible wrong solution: treats every report of no heating as an emergency, never checking the forecast."""
import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, routine_days, urgent_hours, report_name) -> str:
    guide = tools.read_file(path="guides/triage_guide.md")
    levels, section = {}, None
    for line in guide.splitlines():
        if line.startswith(("Emergency (", "Urgent (", "Routine (")):
            section = line.split(" ")[0].lower()
        elif line.startswith("  - "):
            levels[line[4:]] = section
    mail = read_files(tools, "mail/*")
    banned = {m for t in mail.values() for m in re.findall(r"do not send any new work to\s+(.+?) until", t)}
    special = None
    for t in read_files(tools, "site_notes/*").values():
        m = re.search(r"^(.+?) is still under .*? All (\w+) and (\w+) faults there go to\s+(.+?),", t, flags=re.S)
        if m:
            special = m.groups()
    units = {u["id"]: u for u in read_all(tools.list_units)}
    vend = [v for trade in ("plumbing", "electrical", "heating", "appliance", "locksmith") for v in read_all(tools.list_vendors, trade=trade)]
    busy = {v["id"]: v["open_jobs"] for v in vend}
    todo = []
    for r in read_all(tools.list_requests):
        what = r["description"][len("Tenant reports: "):-1]
        level = "emergency" if what.startswith("no heating at all") else levels[what]
        todo.append((["emergency", "urgent", "routine"].index(level), r["reported_at"], r["id"], r, level))
    out, count, tally = [], 0, {}
    for _, at, _, r, level in sorted(todo, key=lambda t: t[:3]):
        u = units[r["unit_id"]]
        if special and u["building"] == special[0] and r["trade"] in special[1:3]:
            v = next(v for v in vend if v["name"] == special[3])
        else:
            v = min((v for v in vend if v["trade"] == r["trade"] and u["district"] in v["districts"] and v["name"] not in banned
                     and busy[v["id"]] < v["max_open_jobs"]), key=lambda v: (v["hourly_rate"], -v["rating"], v["id"]))
        busy[v["id"]] += 1
        due = (dt.datetime.strptime(at, "%Y-%m-%d %H:%M") + dt.timedelta(hours={"emergency": 4, "urgent": urgent_hours, "routine": 24 * routine_days}[level])).strftime("%Y-%m-%d %H:%M")
        tools.triage_request(request_id=r["id"], priority=level, due_by=due)
        wo = tools.create_work_order(request_id=r["id"], vendor_id=v["id"])["work_order_id"]
        if level == "emergency":
            tools.page_vendor(work_order_id=wo)
            count += 1
        tally[v["name"]] = tally.get(v["name"], 0) + 1
        out.append(f"{r['id']},{level},{v['name']},{due}")
    tools.write_file(path=report_name, content="request_id,priority,vendor,due_by\n" + "\n".join(out) + "\n")
    best = max(tally, key=tally.get)
    return f"{count} emergencies; busiest contractor: {best}."
