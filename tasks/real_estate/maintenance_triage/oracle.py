import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all, read_files

HOURS = {"emergency": 4, "urgent": 24, "routine": 24 * 7}


def solve(tools, routine_days, urgent_hours, report_name, read_forecast=True) -> str:
    texts = read_files(tools)
    phrase_class, lows, suspended, warranty = {}, {}, set(), {}
    for text in texts.values():
        if "# Maintenance triage guide" in text:
            current = None
            for line in text.splitlines():
                head = re.match(r"(Emergency|Urgent|Routine) \(", line)
                if head:
                    current = head.group(1).lower()
                elif line.startswith("  - ") and current:
                    phrase_class[line[4:].strip()] = current
            frost = int(re.search(r"below (-?\d+) degrees", text).group(1))
            heat_phrase = re.search(r"A report of (no heating at all)", text).group(1)
        for name, low in re.findall(r"^\w+ (\d+ \w+): overnight low (-?\d+) C", text, flags=re.M):
            lows[name] = int(low)
        m = re.search(r"do not send any new work to\s+(.+?) until", text)
        if m:
            suspended.add(m.group(1).strip())
        m = re.search(r"^(.+?) is still under the developer's warranty\. All (\w+) and (\w+) faults there go to\s+(.+?), whatever", text)
        if m:
            warranty = {"building": m.group(1), "trades": {m.group(2), m.group(3)}, "vendor": m.group(4).strip()}

    units = {u["id"]: u for u in read_all(tools.list_units)}
    vendors = {}
    for trade in ("plumbing", "electrical", "heating", "appliance", "locksmith"):
        for v in read_all(tools.list_vendors, trade=trade):
            vendors[v["id"]] = v
    load = {v["id"]: v["open_jobs"] for v in vendors.values()}
    jobs = []
    for r in read_all(tools.list_requests, status="new"):
        issue = r["description"].removeprefix("Tenant reports: ").rstrip(".")
        if issue.startswith(heat_phrase):
            day = dt.datetime.strptime(r["reported_at"][:10], "%Y-%m-%d").strftime("%d %B")
            priority = "emergency" if lows[day] < frost or not read_forecast else "urgent"
        else:
            priority = phrase_class[issue]
        hours = {**HOURS, "urgent": urgent_hours, "routine": 24 * routine_days}[priority]  # the request overrides the guide
        due = dt.datetime.strptime(r["reported_at"], "%Y-%m-%d %H:%M") + dt.timedelta(hours=hours)
        jobs.append((("emergency", "urgent", "routine").index(priority), r["reported_at"], r["id"], r, priority, due.strftime("%Y-%m-%d %H:%M")))
    jobs.sort(key=lambda j: j[:3])

    rows, emergencies, per_vendor = [], 0, {}
    for _, _, _, r, priority, due in jobs:
        unit = units[r["unit_id"]]
        if warranty and unit["building"] == warranty["building"] and r["trade"] in warranty["trades"]:
            vendor = next(v for v in vendors.values() if v["name"] == warranty["vendor"])
        else:
            fits = [v for v in vendors.values() if v["trade"] == r["trade"] and unit["district"] in v["districts"].split(", ")
                    and v["name"] not in suspended and load[v["id"]] < v["max_open_jobs"]]
            vendor = min(fits, key=lambda v: (v["hourly_rate"], -v["rating"], v["id"]))
        load[vendor["id"]] += 1
        tools.triage_request(request_id=r["id"], priority=priority, due_by=due)
        order = tools.create_work_order(request_id=r["id"], vendor_id=vendor["id"])
        if priority == "emergency":
            tools.page_vendor(work_order_id=order["work_order_id"])
            emergencies += 1
        per_vendor[vendor["name"]] = per_vendor.get(vendor["name"], 0) + 1
        rows.append(f"{r['id']},{priority},{vendor['name']},{due}")
    tools.write_file(path=report_name, content="request_id,priority,vendor,due_by\n" + "\n".join(sorted(rows, key=lambda s: int(s.split(',')[0]))) + "\n")
    top = min(per_vendor.items(), key=lambda kv: (-kv[1], kv[0]))
    return f"There were {emergencies} emergencies. {top[0]} received the most work orders ({top[1]})."
