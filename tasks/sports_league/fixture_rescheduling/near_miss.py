"""A plausible wrong solution: treats the ground closure's end date as already open again (off by one day)."""
import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all


def solve(tools, rest_days, report_name) -> str:
    rest = rest_days
    closure_file = [f["path"] for f in read_all(tools.list_files, pattern="mail/*closure*")][0]
    note = " ".join(tools.read_file(path=closure_file).split())
    m = re.search(r"Subject: (.+?) closed .*? from (\d+ \w+ \d{4}) to (\d+ \w+ \d{4})", note)
    shut, start, end = m.group(1), *(dt.datetime.strptime(m.group(i), "%d %B %Y").date() for i in (2, 3))
    bc = " ".join(tools.read_file(path="mail/2026-11-21_broadcaster.eml").split())
    evening = re.search(r"kick-off at (\S+) or later", bc).group(1)
    teams = {t["id"]: t for t in read_all(tools.list_teams)}
    fixtures = read_all(tools.list_matches)
    busy = {}
    for f in fixtures:
        if f["status"] != "postponed":
            busy.setdefault(f["home_team_id"], []).append(f["match_date"])
            busy.setdefault(f["away_team_id"], []).append(f["match_date"])
    rows, stuck = [], []
    for f in [f for f in fixtures if f["status"] == "postponed"]:
        h, a = teams[f["home_team_id"]], teams[f["away_team_id"]]
        pick = None
        for s in read_all(tools.list_venue_slots, venue_id=f["venue_id"]):
            d = dt.date.fromisoformat(s["slot_date"])
            clash = any(abs((d - dt.date.fromisoformat(x)).days) < rest for t in (h["id"], a["id"]) for x in busy.get(t, []))
            tv = h["broadcast_tier"] == a["broadcast_tier"] == "national"
            if s["is_free"] and not clash and not (h["home_venue"] == shut and start <= d < end) and not (tv and s["kickoff"] < evening):
                pick = s
                break
        if not pick:
            stuck.append(f"{h['name']} v {a['name']}")
            continue
        tools.reschedule_match(match_id=f["id"], slot_id=pick["id"])
        for t in (h["id"], a["id"]):
            busy.setdefault(t, []).append(pick["slot_date"])
        rows.append(f"{f['id']},{pick['slot_date']},{pick['kickoff']},{h['home_venue']}")
    tools.write_file(path=report_name, content="match_id,date,kickoff,venue\n" + "\n".join(rows) + "\n")
    return "Could not reschedule: " + ("; ".join(stuck) or "none")
