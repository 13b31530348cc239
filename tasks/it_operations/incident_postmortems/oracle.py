import datetime as dt
import json
import re

from progagent_lib.task.oracle_kit import read_all, read_files

FMT = "%Y-%m-%d %H:%M"


def solve(tools, excluded_service, metrics_name, last_resolution=True) -> str:
    texts = read_files(tools)
    duplicates = set()
    for text in texts.values():
        if "# Incident management standard" in text:
            budget = {1: int(re.search(r"Tier 1 services may have at most (\d+) minutes", text).group(1)),
                      2: int(re.search(r"tier 2 services at most (\d+) minutes", text).group(1))}
            sev2_limit = int(re.search(r"lasted more than (\d+) minutes", text).group(1))
            due_days = int(re.search(r"due (\d+) business days", text).group(1))
        duplicates |= set(re.findall(r"(INC-\d+) was confirmed as a duplicate", text))

    services = {s["id"]: s for s in read_all(tools.list_services) if s["name"] != excluded_service}
    acks, fixes, downtime, opened_pms = {}, {}, {s["name"]: 0.0 for s in services.values()}, 0
    for inc in read_all(tools.list_incidents):
        if not inc["opened_at"].startswith("2026-11") or inc["ref"] in duplicates or inc["service_id"] not in services:
            continue
        events = read_all(tools.list_incident_events, incident_id=inc["id"])
        start = dt.datetime.strptime(inc["opened_at"], FMT)
        first = lambda kind: min(dt.datetime.strptime(e["at"], FMT) for e in events if e["kind"] == kind)
        final = (max if last_resolution else min)(dt.datetime.strptime(e["at"], FMT) for e in events
                                                   if e["kind"] == "resolved")
        minutes = lambda t: (t - start).total_seconds() / 60
        acks.setdefault(inc["severity"], []).append(minutes(first("acknowledged")))
        fixes.setdefault(inc["severity"], []).append(minutes(final))
        impact = minutes(first("mitigated"))
        svc = services[inc["service_id"]]
        if inc["severity"] in ("sev1", "sev2"):
            downtime[svc["name"]] += impact
        if inc["severity"] == "sev1" or (inc["severity"] == "sev2" and impact > sev2_limit):
            due, left = final.date(), due_days
            while left:
                due += dt.timedelta(days=1)
                left -= due.weekday() < 5
            pm = tools.open_postmortem(incident_id=inc["id"], owner_team=svc["team"], due_date=due.isoformat())
            if inc["caused_by_change"]:
                tools.link_change(postmortem_id=pm["postmortem_id"], change_id=inc["caused_by_change"])
            opened_pms += 1
    metrics = {"mtta_minutes": {k: round(sum(v) / len(v), 1) for k, v in sorted(acks.items())},
               "mttr_minutes": {k: round(sum(v) / len(v), 1) for k, v in sorted(fixes.items())},
               "downtime_minutes": {k: round(v, 1) for k, v in downtime.items()},
               "budget_breaches": sorted(s["name"] for s in services.values() if downtime[s["name"]] > budget[s["tier"]])}
    tools.write_file(path=metrics_name, content=json.dumps(metrics, indent=2))
    worst = max(downtime.items(), key=lambda kv: (kv[1], kv[0]))
    return f"{worst[0]} had the most downtime in November ({worst[1]:.1f} minutes). I opened {opened_pms} postmortems."
