"""A plausible wrong solution: applies the change freeze to every wave, not just production ones."""
import datetime as dt
import json
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, first_wave_date, excluded_os, plan_name) -> str:
    texts = read_files(tools, "mail/*")
    texts.update(read_files(tools, "runbooks/decommission*"))
    parse = lambda s: dt.datetime.strptime(s, "%d %B %Y").date()
    holidays, skip_services, skip_hosts = set(), set(), set()
    for text in texts.values():
        if "cycle covers" in text:
            kbs = [k for k in re.findall(r"(KB\d+) \(([^)]+)\)", text) if k[1] != excluded_os]
        if "change freeze" in text:
            lo, hi = (parse(d) for d in re.findall(r"\w+day (\d+ \w+ \d{4})", text)[:2])
        if "moving offices" in text:
            holidays.add(parse(re.search(r"moving offices on \w+ (\d+ \w+ \d{4})", text).group(1)))
        skip_services |= set(re.findall(r"leave every (\S+) server", text))
        if "switched off" in text:
            skip_hosts |= {ln.strip() for ln in text.splitlines() if ln.startswith("  ")}
    day = parse(first_wave_date.split(" ", 1)[1])
    std = tools.read_file(path="standards/patching_standard.md")
    gap = {"two": 2, "three": 3}[re.search(r"scheduled (\w+) working days", std).group(1)]
    tier = {s["id"]: (s["tier"], s["name"]) for s in read_all(tools.list_services)}
    waves = {1: [], 2: [], 3: [], 4: []}
    for kb, os_name in kbs:
        done = {r["host_id"] for r in read_all(tools.list_installations, kb=kb)}
        for h in read_all(tools.list_hosts):
            if h["os"] != os_name or h["id"] in done or h["hostname"] in skip_hosts or tier[h["service_id"]][1] in skip_services:
                continue
            waves[{"dev": 1, "staging": 2}.get(h["environment"]) or (4 if tier[h["service_id"]][0] == 1 else 3)].append(h)

    def forward(d, n):
        while n:
            d += dt.timedelta(days=1)
            n -= d.weekday() < 5 and d not in holidays
        return d

    plan = []
    for w in (1, 2, 3, 4):
        day = forward(day, gap) if w > 1 else day
        if lo <= day <= hi:
            day = forward(hi, 1)
        cid = tools.create_change(wave=w, scheduled_date=day.isoformat(), summary=f"Patch wave {w}")["change_id"]
        for h in waves[w]:
            tools.add_host_to_change(change_id=cid, host_id=h["id"])
        plan.append({"wave": w, "date": day.isoformat(), "change_id": cid, "hosts": [h["hostname"] for h in waves[w]]})
    tools.write_file(path=plan_name, content=json.dumps({"waves": plan}))
    return f"Patching {sum(len(v) for v in waves.values())} servers; final wave on {day.isoformat()}."
