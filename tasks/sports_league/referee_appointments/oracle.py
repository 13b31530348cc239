import re
from datetime import date, datetime, timedelta

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, rest_days, report_name, by_workload=True) -> str:
    fixtures = sorted(read_all(tools.list_fixtures), key=lambda f: (f["kickoff"], f["id"]))
    year = datetime.fromisoformat(fixtures[0]["kickoff"]).year
    referees = read_all(tools.list_referees)
    by_name = {r["name"]: r for r in referees}
    rest, seminar, away = rest_days, None, {}
    for text in read_files(tools).values():
        flat = " ".join(text.split())
        m = re.search(r"All grade 1 referees attend .*? on \w+ (\d+ \w+ \d{4})", flat)
        if m:
            seminar = datetime.strptime(m.group(1), "%d %B %Y").date().isoformat()
        m = re.search(r"From (.+?):\s+Sorry, I can't referee on \w+ (\d+ \w+)", flat)
        if m:
            day = datetime.strptime(f"{m.group(2)} {year}", "%d %B %Y").date().isoformat()
            away.setdefault(by_name[m.group(1)]["id"], set()).add(day)

    tally = {r["id"]: 0 for r in referees}
    seen = {}
    for h in read_all(tools.list_past_appointments):
        tally[h["referee_id"]] += 1
        for club in (h["home_id"], h["away_id"]):
            seen.setdefault((h["referee_id"], club), []).append(h["match_date"])
    teams = {t["id"]: t["name"] for t in read_all(tools.list_teams)}
    booked = {}
    lines, flagged = ["fixture_id,kickoff,home,away,referee"], 0
    for fx in fixtures:
        day = datetime.fromisoformat(fx["kickoff"]).date().isoformat()
        since = (date.fromisoformat(day) - timedelta(days=rest)).isoformat()
        clubs = (fx["home_id"], fx["away_id"])
        options = [r for r in referees
                   if r["grade"] <= fx["division"] and r["affiliated_team_id"] not in clubs
                   and day not in booked.get(r["id"], set()) and day not in away.get(r["id"], set())
                   and not (r["grade"] == 1 and day == seminar)
                   and not any(since <= d < day for c in clubs for d in seen.get((r["id"], c), []))]
        if options:
            pick = min(options, key=lambda r: (tally[r["id"]] if by_workload else 0, r["grade"], r["name"]))
            tools.appoint_referee(fixture_id=fx["id"], referee_id=pick["id"])
            tally[pick["id"]] += 1
            booked.setdefault(pick["id"], set()).add(day)
            who = pick["name"]
        else:
            tools.flag_fixture(fixture_id=fx["id"], note="nobody is eligible")
            flagged += 1
            who = ""
        lines.append(f"{fx['id']},{fx['kickoff']},{teams[fx['home_id']]},{teams[fx['away_id']]},{who}")
    tools.write_file(path=report_name, content="\n".join(lines) + "\n")
    return f"I had to flag {flagged} fixtures that no referee could take under the policy; the rest are appointed."
