import datetime as dt
import json
import re

from progagent_lib.task.oracle_kit import read_all, read_files

NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}


def day_of(text):
    return dt.datetime.strptime(text, "%d %B %Y").date()


def step(day, holidays, n=1):
    while n:
        day += dt.timedelta(days=1)
        if day.weekday() < 5 and day not in holidays:
            n -= 1
    return day


def solve(tools, first_wave_date, excluded_os, plan_name, freeze_all_waves=False) -> str:
    texts = read_files(tools)
    holidays, freeze, held, decommissioned = set(), None, set(), set()
    for path, text in texts.items():
        if "cycle covers" in text:
            kbs = [(kb, os_name) for kb, os_name in re.findall(r"(KB\d+) \(([^)]+)\)", text) if os_name != excluded_os]
        if "working days after" in text:
            gap = NUMBER_WORDS[re.search(r"scheduled (\w+) working days after", text).group(1)]
        if "change freeze" in text.lower() and "production" in text:
            lo, hi = re.search(r"from \w+day (\d{1,2} \w+ \d{4}) until \w+day (\d{1,2} \w+ \d{4})", text).groups()
            freeze = (day_of(lo), day_of(hi))
        if "moving offices" in text:
            holidays.add(day_of(re.search(r"moving offices on \w+day (\d{1,2} \w+ \d{4})", text).group(1)))
        m = re.search(r"leave every (\S+) server", text)
        if m:
            held.add(m.group(1))
        if "being switched off" in text:
            decommissioned |= {line.strip() for line in text.splitlines()[3:] if line.startswith("  ")}

    services = {s["id"]: s for s in read_all(tools.list_services)}
    hosts = read_all(tools.list_hosts)
    in_scope = {}
    for kb, os_name in kbs:
        done = {r["host_id"] for r in read_all(tools.list_installations, kb=kb)}
        for h in hosts:
            if h["os"] == os_name and h["id"] not in done:
                in_scope[h["id"]] = h
    waves = {1: [], 2: [], 3: [], 4: []}
    for h in in_scope.values():
        svc = services[h["service_id"]]
        if svc["name"] in held or h["hostname"] in decommissioned:
            continue
        w = {"dev": 1, "staging": 2}.get(h["environment"]) or (4 if svc["tier"] == 1 else 3)
        waves[w].append(h)

    dates, day = {}, dt.datetime.strptime(first_wave_date, "%A %d %B %Y").date()
    for w in (1, 2, 3, 4):
        if w > 1:
            day = step(day, holidays, gap)
        if (w >= 3 or freeze_all_waves) and freeze[0] <= day <= freeze[1]:  # the freeze covers production only
            day = step(freeze[1], holidays)
        dates[w] = day
    plan = []
    for w in (1, 2, 3, 4):
        change = tools.create_change(wave=w, scheduled_date=dates[w].isoformat(), summary=f"December patch cycle, wave {w}")
        for h in sorted(waves[w], key=lambda h: h["id"]):
            tools.add_host_to_change(change_id=change["change_id"], host_id=h["id"])
        plan.append({"wave": w, "date": dates[w].isoformat(), "change_id": change["change_id"],
                     "hosts": sorted(h["hostname"] for h in waves[w])})
    tools.write_file(path=plan_name, content=json.dumps({"waves": plan}, indent=2))
    total = sum(len(v) for v in waves.values())
    return f"{total} servers are being patched in total; the last wave goes out on {dates[4].isoformat()}."
