import re

from progagent_lib.task.oracle_kit import read_all, read_files

def solve(tools, movers, report_name, head_to_head=True) -> str:
    texts = {p: " ".join(t.split()) for p, t in read_files(tools).items()}
    rules = next(t for t in texts.values() if "Rule 8" in t)
    win = int(re.search(r"earns (\d+) points for a win", rules).group(1))
    tiebreaks = []
    for phrase in re.search(r"by: first, (.+?); second, (.+?); third, (.+?)\. ", rules).groups():
        tiebreaks.append("h2h" if "between" in phrase else "gd" if "difference" in phrase else "gf")
    tiebreaks = tiebreaks if head_to_head else ["gd"]
    deductions, awarded = {}, {}
    for text in texts.values():
        d = re.search(r"breaches, (.+?) is\s+deducted (\d+) points", text)
        if d:
            deductions[d.group(1)] = int(d.group(2))
        a = re.search(r"In match (\d+),.*?score of \d+-\d+ \(home (\d+), away (\d+)\)", text)
        if a:
            awarded[int(a.group(1))] = (int(a.group(2)), int(a.group(3)))

    teams = read_all(tools.list_teams)
    name = {t["id"]: t["name"] for t in teams}
    divisions = sorted({t["division"] for t in teams})
    lines = ["division,position,team,played,won,drawn,lost,goals_for,goals_against,points"]
    final = {}
    for div in divisions:
        members = [t["id"] for t in teams if t["division"] == div]
        rec = {tid: [0, 0, 0, 0, 0, 0, 0] for tid in members}  # P W D L GF GA Pts
        results = []
        for m in read_all(tools.list_matches, division=div):
            if m["status"] != "played":
                continue
            hg, ag = awarded.get(m["id"], (m["home_goals"], m["away_goals"]))
            results.append((m["home_id"], m["away_id"], hg, ag))
            for tid, gf, ga in ((m["home_id"], hg, ag), (m["away_id"], ag, hg)):
                r = rec[tid]
                r[0] += 1
                r[1 if gf > ga else 2 if gf == ga else 3] += 1
                r[4] += gf
                r[5] += ga
                r[6] += win if gf > ga else (1 if gf == ga else 0)
        for tid in members:
            rec[tid][6] -= deductions.get(name[tid], 0)
        h2h = {tid: 0 for tid in members}
        for h, a, hg, ag in results:
            if rec[h][6] == rec[a][6]:
                h2h[h] += win if hg > ag else (1 if hg == ag else 0)
                h2h[a] += win if ag > hg else (1 if hg == ag else 0)
        measures = {"h2h": lambda t: h2h[t], "gd": lambda t: rec[t][4] - rec[t][5], "gf": lambda t: rec[t][4]}
        members.sort(key=lambda t: [-rec[t][6]] + [-measures[k](t) for k in tiebreaks] + [name[t]])
        final[div] = members
        for pos, tid in enumerate(members, start=1):
            lines.append(",".join(str(x) for x in [div, pos, name[tid]] + rec[tid]))
    tools.write_file(path=report_name, content="\n".join(lines) + "\n")

    tools.record_season_outcome(team_id=final[divisions[0]][0], outcome="champion")
    for div in divisions:
        if div != divisions[-1]:
            for tid in final[div][-movers:]:
                tools.record_season_outcome(team_id=tid, outcome="relegated")
        if div != divisions[0]:
            for tid in final[div][:movers]:
                tools.record_season_outcome(team_id=tid, outcome="promoted")
    return f"The league champion is {name[final[divisions[0]][0]]}."
