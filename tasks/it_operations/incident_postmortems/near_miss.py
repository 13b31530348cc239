"""A plausible wrong solution: uses the first resolution of a reopened incident instead of the last."""
import datetime as dt
import json
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, excluded_service, metrics_name) -> str:
    std = tools.read_file(path="standards/incident_standard.md")
    caps = {1: int(re.search(r"Tier 1 services may have at most (\d+)", std).group(1)), 2: int(re.search(r"tier 2 services at most (\d+)", std).group(1))}
    limit = int(re.search(r"more than (\d+) minutes", std).group(1))
    lag = int(re.search(r"due (\d+) business days", std).group(1))
    svcs = {s["id"]: s for s in read_all(tools.list_services) if s["name"] != excluded_service}
    dupes = {d for t in read_files(tools, "reviews/*").values() for d in re.findall(r"(INC-\d+) was confirmed as a duplicate", t)}
    a, r, down, n = {}, {}, {s["name"]: 0.0 for s in svcs.values()}, 0
    for inc in read_all(tools.list_incidents):
        if inc["opened_at"][:7] != "2026-11" or inc["ref"] in dupes or inc["service_id"] not in svcs:
            continue
        ev = {}
        for e in read_all(tools.list_incident_events, incident_id=inc["id"]):
            ev.setdefault(e["kind"], e["at"])
        t0 = dt.datetime.fromisoformat(inc["opened_at"])
        mins = {k: (dt.datetime.fromisoformat(v) - t0).total_seconds() / 60 for k, v in ev.items()}
        a.setdefault(inc["severity"], []).append(mins["acknowledged"])
        r.setdefault(inc["severity"], []).append(mins["resolved"])
        if inc["severity"] != "sev3":
            down[svcs[inc["service_id"]]["name"]] += mins["mitigated"]
        if inc["severity"] == "sev1" or (inc["severity"] == "sev2" and mins["mitigated"] > limit):
            day = dt.date.fromisoformat(ev["resolved"][:10])
            k = lag
            while k:
                day += dt.timedelta(days=1)
                if day.weekday() < 5:
                    k -= 1
            pid = tools.open_postmortem(incident_id=inc["id"], owner_team=svcs[inc["service_id"]]["team"], due_date=str(day))["postmortem_id"]
            if inc["caused_by_change"]:
                tools.link_change(postmortem_id=pid, change_id=inc["caused_by_change"])
            n += 1
    out = {"mtta_minutes": {k: round(sum(v) / len(v), 1) for k, v in a.items()}, "mttr_minutes": {k: round(sum(v) / len(v), 1) for k, v in r.items()},
           "downtime_minutes": {k: round(v, 1) for k, v in down.items()},
           "budget_breaches": sorted(s["name"] for s in svcs.values() if down[s["name"]] > caps[s["tier"]])}
    tools.write_file(path=metrics_name, content=json.dumps(out))
    return f"Most downtime: {max(down, key=down.get)}; {n} postmortems opened."
