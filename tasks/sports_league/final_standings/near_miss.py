"""A plausible wrong solution: applies the rulings but ranks level clubs by goal difference only."""
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, movers, report_name) -> str:
    docs = [" ".join(t.split()) for t in read_files(tools).values()]
    rules = next(t for t in docs if "Rule 7" in t)
    win = int(re.search(r"(\d+) points for a win", rules).group(1))
    n_move = movers
    minus = {}
    for t in docs:
        m = re.search(r"breaches, (.+?) is deducted (\d+) points", t)
        if m:
            minus[m.group(1)] = int(m.group(2))
    fixed = {}
    for t in docs:
        m = re.search(r"In match (\d+),.*?\(home (\d+), away (\d+)\)", t)
        if m:
            fixed[int(m.group(1))] = (int(m.group(2)), int(m.group(3)))
    clubs = read_all(tools.list_teams)
    out = ["division,position,team,played,won,drawn,lost,goals_for,goals_against,points"]
    champion = None
    last = max(c["division"] for c in clubs)
    for div in range(1, last + 1):
        table = {c["id"]: {"name": c["name"], "p": 0, "w": 0, "d": 0, "l": 0, "f": 0, "a": 0} for c in clubs if c["division"] == div}
        for g in read_all(tools.list_matches, division=div):
            if g["status"] == "abandoned":
                continue
            hg, ag = fixed.get(g["id"], (g["home_goals"], g["away_goals"]))
            for side, gf, ga in ((g["home_id"], hg, ag), (g["away_id"], ag, hg)):
                row = table[side]
                row["p"] += 1
                row["f"] += gf
                row["a"] += ga
                row["w" if gf > ga else "d" if gf == ga else "l"] += 1
        for row in table.values():
            row["pts"] = row["w"] * win + row["d"] - minus.get(row["name"], 0)
        ranked = sorted(table, key=lambda k: (-table[k]["pts"], table[k]["a"] - table[k]["f"], table[k]["name"]))
        for pos, k in enumerate(ranked, 1):
            r = table[k]
            out.append(f"{div},{pos},{r['name']},{r['p']},{r['w']},{r['d']},{r['l']},{r['f']},{r['a']},{r['pts']}")
        if div == 1:
            champion = table[ranked[0]]["name"]
            tools.record_season_outcome(team_id=ranked[0], outcome="champion")
        else:
            for k in ranked[:n_move]:
                tools.record_season_outcome(team_id=k, outcome="promoted")
        if div < last:
            for k in ranked[-n_move:]:
                tools.record_season_outcome(team_id=k, outcome="relegated")
    tools.write_file(path=report_name, content="\n".join(out))
    return f"Champion: {champion}"
