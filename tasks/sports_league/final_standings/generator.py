"""State for sports_league/final_standings: clubs, a double round-robin per division, and league papers."""
import itertools

TOWNS = ["Ashby", "Brackley", "Colne", "Dorking", "Egham", "Frome", "Garstang", "Hexham", "Ilkley", "Jarrow",
         "Keswick", "Ledbury", "Malton", "Nelson", "Otley", "Penrith", "Ripon", "Selby", "Thame", "Ulverston",
         "Wantage", "Yeovil", "Alston", "Bude"]
SUFFIXES = ["United", "Rovers", "Athletic", "Town", "Wanderers", "Albion", "City", "Rangers", "Borough"]


def season(rng, teams):
    """Double round-robin results for one division: [home, away, home_goals, away_goals, status]."""
    games = []
    for home, away in itertools.permutations(teams, 2):
        games.append([home, away, rng.choice([0, 0, 1, 1, 1, 2, 2, 3, 4]), rng.choice([0, 0, 1, 1, 2, 2, 3]), "played"])
    rng.shuffle(games)
    return games


def rankings(games, win_points, fixes, deduction, name):
    """Final order of a division under each tie-break order: {"h2h": [...], "gd": [...], "gd_only": [...]}."""
    pts, gd, gf = {}, {}, {}
    counted = []
    for i, (h, a, hg, ag, status) in enumerate(games):
        if status != "played":
            continue
        hg, ag = fixes.get(i, (hg, ag))
        counted.append((h, a, hg, ag))
        for me, f_, a_ in ((h, hg, ag), (a, ag, hg)):
            pts[me] = pts.get(me, 0) + (win_points if f_ > a_ else 1 if f_ == a_ else 0)
            gd[me] = gd.get(me, 0) + f_ - a_
            gf[me] = gf.get(me, 0) + f_
    for tid, minus in deduction.items():
        pts[tid] -= minus
    h2h = dict.fromkeys(pts, 0)
    for h, a, hg, ag in counted:
        if pts[h] == pts[a]:
            h2h[h] += win_points if hg > ag else 1 if hg == ag else 0
            h2h[a] += win_points if ag > hg else 1 if hg == ag else 0
    return {
        "h2h": sorted(pts, key=lambda t: (-pts[t], -h2h[t], -gd[t], -gf[t], name[t])),
        "gd": sorted(pts, key=lambda t: (-pts[t], -gd[t], -gf[t], -h2h[t], name[t])),
        "gd_only": sorted(pts, key=lambda t: (-pts[t], -gd[t], name[t])),
    }


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE teams (id INTEGER PRIMARY KEY, name TEXT UNIQUE, division INTEGER);
        CREATE TABLE matches (id INTEGER PRIMARY KEY, division INTEGER, round INTEGER, home_id INTEGER,
            away_id INTEGER, home_goals INTEGER, away_goals INTEGER, status TEXT, played_on TEXT, attendance INTEGER,
            referee TEXT);
        CREATE TABLE season_outcomes (id INTEGER PRIMARY KEY, team_id INTEGER, outcome TEXT);
        """
    )
    win_points = rng.choice([2, 3])
    h2h_first = rng.random() < 0.5
    names = [f"{t} {s}" for s, t in itertools.product(SUFFIXES, TOWNS)]
    rng.shuffle(names)
    n_div = ctx.size("teams") // 8
    teams = [(tid, names[tid - 1], (tid - 1) // 8 + 1) for tid in range(1, n_div * 8 + 1)]
    db.executemany("INSERT INTO teams VALUES (?,?,?)", teams)

    matches, facts_overturned = [], None
    deducted = teams[rng.randint(0, 7)]
    deduction = rng.choice([3, 4, 6])
    for div in range(1, n_div + 1):
        members = [t[0] for t in teams if t[2] == div]
        for _ in range(500):  # division 1 must contain a points tie after every ruling is applied
            games = season(rng, members)
            abandoned = rng.randrange(len(games))
            games[abandoned][4] = "abandoned"
            overturned = next(i for i in range(len(games)) if games[i][4] == "played" and games[i][2] >= games[i][3])
            if div != 1:
                break
            ranks = rankings(games, win_points, {overturned: (0, 3)}, {deducted[0]: deduction}, {t[0]: t[1] for t in teams})
            rule = ranks["h2h" if h2h_first else "gd"]
            # The rule's tie-break order must matter: it differs from the other order and from goal difference alone.
            if rule != ranks["gd" if h2h_first else "h2h"] and rule != ranks["gd_only"]:
                break
        else:
            if div == 1:
                raise RuntimeError("no division-1 season where the tie-break rule matters; widen the search")
        for i, (h, a, hg, ag, status) in enumerate(games):
            kickoff = f"2026-{8 + (i // 4) // 6:02d}-{1 + (i // 4) % 6 * 5:02d}"  # a round every five days from August
            matches.append((len(matches) + 1, div, i // 4 + 1, h, a, hg, ag, status, kickoff, rng.randint(300, 9000),
                            f"{rng.choice(['A.', 'B.', 'C.', 'D.', 'J.', 'M.', 'R.', 'S.'])} {rng.choice(['Hale', 'Moss', 'Tate', 'Webb', 'Kerr', 'Lowe'])}"))
            if div == 1 and i == overturned:
                facts_overturned = (len(matches), h, a)
    db.executemany("INSERT INTO matches VALUES (?,?,?,?,?,?,?,?,?,?,?)", matches)

    name = {t[0]: t[1] for t in teams}
    mid, home, away = facts_overturned
    order = (["points in the matches played between the clubs concerned", "goal difference", "goals scored"]
             if h2h_first else ["goal difference", "goals scored", "points in the matches played between the clubs concerned"])
    ctx.write("league/constitution.md",
        "# League constitution (extract)\n\n"
        "## Rule 7 - Points\n"
        f"A club earns {win_points} points for a win, 1 for a draw and none for a defeat. A match abandoned before\n"
        "full time does not count in the tables, whatever the score at the time; it is replayed next season.\n\n"
        "## Rule 8 - Ranking\n"
        "Clubs are ranked by points. Where two or more clubs finish level on points they are separated, in this order,\n"
        f"by: first, {order[0]}; second, {order[1]}; third, {order[2]}. Head-to-head points\n"
        "are counted across all the clubs level on points together, not pair by pair. If clubs are still level\n"
        "they are placed in alphabetical order of their names.\n\n"
        "## Rule 9 - Promotion and relegation\n"
        "At the end of the season the clubs in the relegation places at the bottom of each division are relegated to\n"
        "the division below and the clubs in the promotion places at the top of each division below the first are\n"
        "promoted; the annual general meeting sets the number of places (the same at the top and the bottom) each\n"
        "season. The club finishing top of Division 1 is the league champion.\n\n"
        "## Rule 12 - Fines\nClubs receiving more than twenty cautions in a season pay a fine. This does not affect points.\n"
    )
    ctx.write("correspondence/disciplinary_decision.txt",
        f"Disciplinary committee - decision\n\nFollowing the inquiry into registration breaches, {name[deducted[0]]} is\n"
        f"deducted {deduction} points from its final total this season. The club has not appealed.\n"
    )
    ctx.write("correspondence/competitions_committee_ruling.txt",
        f"Competitions committee - ruling on match {mid}\n\nIn match {mid}, {name[home]} (home) against {name[away]},\n"
        f"{name[home]} fielded an ineligible player. The recorded result is void and the match is awarded to\n"
        f"{name[away]} by a score of 0-3 (home 0, away 3). The result in the system has not been changed.\n"
    )
    ctx.write("correspondence/appeal_rejected.txt",
        f"Appeals panel\n\n{name[teams[8 % len(teams)][0]]} asked for a points deduction against a rival to be reviewed.\n"
        "The request was out of time and has been rejected; no change to any result or points total.\n"
    )
    agenda = ["referee expenses", "ground grading", "youth cup draw", "kit clash policy", "floodlight inspection",
              "annual dinner", "media rights", "volunteer awards"]
    for index in range(ctx.size("distractors")):
        club, item = rng.choice(teams)[1], agenda[index % len(agenda)]
        folder = "league" if index % 2 else "correspondence"
        ctx.write(f"{folder}/item_{index:03d}_{item.replace(' ', '_')}.txt",
                  f"{item.title()}\n\nThe secretary of {club} wrote about the {item}.\n"
                  f"Noted by the committee; it has no bearing on results or the tables. Ref {rng.randint(100, 999)}.\n")
    ctx.facts(deducted=deducted[0])
