import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, rest_days, report_name, closure_inclusive=True) -> str:
    texts = [" ".join(t.split()) for t in read_files(tools).values()]
    text = " ".join(texts)
    rest = rest_days
    evening = re.search(r"kick-off at (\d{1,2}:\d{2}) or later", text).group(1)
    closure = next(m for m in (re.search(r"Subject: (.+?) closed for pitch works\s.*? from (\d{1,2} \w+ \d{4}) to "
                                         r"(\d{1,2} \w+ \d{4}) inclusive", t) for t in texts) if m)
    closed_venue = closure.group(1)
    closed_from, closed_to = (dt.datetime.strptime(closure.group(i), "%d %B %Y").date() for i in (2, 3))

    teams = {t["id"]: t for t in read_all(tools.list_teams)}
    matches = read_all(tools.list_matches)
    calendar = {}
    for m in matches:
        if m["status"] != "postponed":
            for team in (m["home_team_id"], m["away_team_id"]):
                calendar.setdefault(team, []).append(dt.date.fromisoformat(m["match_date"]))
    slots_by_venue = {}
    lines, stuck = ["match_id,date,kickoff,venue"], []
    for m in sorted((m for m in matches if m["status"] == "postponed"), key=lambda m: (m["match_date"], m["id"])):
        home, away = teams[m["home_team_id"]], teams[m["away_team_id"]]
        tv = home["broadcast_tier"] == away["broadcast_tier"] == "national"
        if m["venue_id"] not in slots_by_venue:
            slots_by_venue[m["venue_id"]] = read_all(tools.list_venue_slots, venue_id=m["venue_id"])
        chosen = None
        for s in slots_by_venue[m["venue_id"]]:  # already sorted by date, kick-off
            day = dt.date.fromisoformat(s["slot_date"])
            if not s["is_free"] or (tv and s["kickoff"] < evening):
                continue
            last_closed = closed_to if closure_inclusive else closed_to - dt.timedelta(days=1)
            if home["home_venue"] == closed_venue and closed_from <= day <= last_closed:
                continue
            if any(abs((day - d).days) < rest for t in (home["id"], away["id"]) for d in calendar.get(t, [])):
                continue
            chosen = s
            break
        if chosen is None:
            stuck.append(f"{home['name']} v {away['name']}")
            continue
        tools.reschedule_match(match_id=m["id"], slot_id=chosen["id"])
        chosen["is_free"] = 0
        for t in (home["id"], away["id"]):
            calendar.setdefault(t, []).append(dt.date.fromisoformat(chosen["slot_date"]))
        lines.append(f"{m['id']},{chosen['slot_date']},{chosen['kickoff']},{home['home_venue']}")
    tools.write_file(path=report_name, content="\n".join(lines) + "\n")
    return (f"Rescheduled {len(lines) - 1} postponed fixtures. These could not be rescheduled: " + "; ".join(stuck) + "."
            if stuck else f"Rescheduled all {len(lines) - 1} postponed fixtures.")
