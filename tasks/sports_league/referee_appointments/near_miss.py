"""A plausible wrong solution: applies every eligibility rule but breaks ties by name only, ignoring workload."""
import re
from datetime import date, datetime, timedelta

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, rest_days, report_name) -> str:
    games = sorted(read_all(tools.list_fixtures), key=lambda f: (f["kickoff"], f["id"]))
    officials = read_all(tools.list_referees)
    texts = [" ".join(t.split()) for t in read_files(tools).values()]
    rest = rest_days
    seminar = next(datetime.strptime(re.search(r"on \w+ (\d+ \w+ \d{4})", t).group(1), "%d %B %Y").date()
                   for t in texts if "national seminar" in t).isoformat()
    off = set()
    for t in texts:
        m = re.search(r"From (.+?): Sorry, I can't referee on \w+ (\d+) (\w+)", t)
        if m:
            off.add((m.group(1), f"{games[0]['kickoff'][:4]}-{datetime.strptime(m.group(3), '%B').month:02d}-{int(m.group(2)):02d}"))
    past = read_all(tools.list_past_appointments)
    names = {t["id"]: t["name"] for t in read_all(tools.list_teams)}
    used, rows, flags = set(), [], 0
    for g in games:
        day = g["kickoff"][:10]
        start = str(date.fromisoformat(day) - timedelta(days=rest))
        fits = [o for o in sorted(officials, key=lambda o: o["name"])
                if o["grade"] <= g["division"] and o["affiliated_team_id"] not in (g["home_id"], g["away_id"])
                and (o["id"], day) not in used and (o["name"], day) not in off and not (o["grade"] == 1 and day == seminar)
                and not any(p["referee_id"] == o["id"] and start <= p["match_date"] < day
                            and {p["home_id"], p["away_id"]} & {g["home_id"], g["away_id"]} for p in past)]
        if fits:
            tools.appoint_referee(fixture_id=g["id"], referee_id=fits[0]["id"])
            used.add((fits[0]["id"], day))
            rows.append(f"{g['id']},{g['kickoff']},{names[g['home_id']]},{names[g['away_id']]},{fits[0]['name']}")
        else:
            tools.flag_fixture(fixture_id=g["id"], note="nobody eligible")
            flags += 1
            rows.append(f"{g['id']},{g['kickoff']},{names[g['home_id']]},{names[g['away_id']]},")
    tools.write_file(path=report_name, content="fixture_id,kickoff,home,away,referee\n" + "\n".join(rows))
    return f"Flagged fixtures: {flags}"
