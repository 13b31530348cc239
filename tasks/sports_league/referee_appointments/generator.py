"""State for sports_league/referee_appointments: clubs, referees, past appointments and the next fixtures."""
from datetime import date, datetime, timedelta

PLACES = ["Aldbourne", "Barnsley", "Crewe", "Didcot", "Epsom", "Fleet", "Goole", "Hythe", "Ipswich", "Kendal", "Leek",
          "Morpeth", "Newbury", "Oakham", "Poole", "Redcar", "Stroud", "Truro", "Wells", "Whitby"]
KINDS = ["Town", "United", "City", "Rangers", "Athletic", "Rovers", "Wanderers"]
GIVEN = ["Alex", "Bea", "Colin", "Dana", "Ewan", "Fay", "Gus", "Holly", "Ian", "Jade", "Karl", "Lena", "Marc", "Nia",
         "Oscar", "Pam", "Ravi", "Sue", "Tom", "Vera"]
FAMILY = ["Archer", "Baines", "Cole", "Dunn", "Eve", "Ford", "Gale", "Hart", "Irwin", "Judd", "Keane", "Lamb"]


def plant_rest_cases(history, referees, fixture, unavailable_day, periods):
    """Make the rest period decide the first fixture: the four referees the policy would rank first for it each
    refereed its home club just beyond one of the possible `periods` and within the next, and saw neither club
    otherwise within the longest one; so every possible period appoints a different referee. Only dates change."""
    division, kickoff, home, away = fixture
    day = date.fromisoformat(kickoff[:10])
    count = {r[0]: 0 for r in referees}
    for h in history:
        count[h[1]] += 1
    eligible = [r for r in referees if r[2] <= division and r[3] not in (home, away) and unavailable_day.get(r[0]) != day]
    ranked = sorted(eligible, key=lambda r: (count[r[0]], r[2], r[1]))
    for (rid, *_), just_beyond in zip(ranked, periods):
        own = [h for h in history if h[1] == rid]
        if not own:
            continue
        for h in own:
            if {h[3], h[4]} & {home, away} and (day - date.fromisoformat(h[2])).days <= periods[-1]:
                h[2] = (day - timedelta(days=periods[-1] + 2)).isoformat()
        own[0][2] = (day - timedelta(days=just_beyond + 1)).isoformat()
        own[0][3] = home
        if own[0][4] in (home, away):
            own[0][4] = next(club for club in (1, 2, 3) if club not in (home, away))


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE teams (id INTEGER PRIMARY KEY, name TEXT, division INTEGER);
        CREATE TABLE referees (id INTEGER PRIMARY KEY, name TEXT, grade INTEGER, affiliated_team_id INTEGER);
        CREATE TABLE past_appointments (id INTEGER PRIMARY KEY, referee_id INTEGER, match_date TEXT, home_id INTEGER, away_id INTEGER,
            assessor_mark REAL, assessor_comment TEXT);
        CREATE TABLE fixtures (id INTEGER PRIMARY KEY, division INTEGER, kickoff TEXT, home_id INTEGER, away_id INTEGER);
        CREATE TABLE appointments (id INTEGER PRIMARY KEY, fixture_id INTEGER, referee_id INTEGER);
        CREATE TABLE flags (id INTEGER PRIMARY KEY, fixture_id INTEGER, note TEXT);
        """
    )
    saturday = date(2026, 11, 14) + timedelta(weeks=rng.randint(0, 4))
    matchdays = [saturday, saturday + timedelta(days=4)]  # Saturday and the following Wednesday
    names = [f"{p} {k}" for k in KINDS for p in PLACES]
    rng.shuffle(names)
    n_div = ctx.size("teams") // 8
    teams = [(t, names[t - 1], (t - 1) // 8 + 1) for t in range(1, n_div * 8 + 1)]
    db.executemany("INSERT INTO teams VALUES (?,?,?)", teams)

    referees, used_names = [], set()
    for r in range(1, ctx.size("referees") + 1):
        name = f"{rng.choice(GIVEN)} {rng.choice(FAMILY)}"
        while name in used_names:
            name = f"{rng.choice(GIVEN)} {rng.choice(FAMILY)}"
        used_names.add(name)
        grade = 1 if r <= max(3, len(teams) // 8 + 1) else rng.choice([1, 2, 2, 3])
        referees.append((r, name, grade, rng.choice(teams)[0] if rng.random() < 0.6 else None))
    db.executemany("INSERT INTO referees VALUES (?,?,?,?)", referees)

    history = []
    for h in range(1, ctx.size("history") + 1):
        home, away = rng.sample(teams, 2)
        comment = rng.choice(["good positioning", "slow to spot offside", "excellent game management", "inconsistent cautions",
                              "strong fitness", "clear communication with assistants", "missed a penalty incident"])
        history.append([h, rng.randint(1, len(referees)), (saturday - timedelta(days=rng.randint(3, 90))).isoformat(), home[0], away[0],
                        round(rng.uniform(6.5, 8.9), 1), comment])

    fixtures = []
    for day in matchdays:
        for div in range(1, n_div + 1):
            clubs = [t[0] for t in teams if t[2] == div]
            rng.shuffle(clubs)
            for k in range(0, 8, 2):
                hour = rng.choice([12, 15, 15, 17]) if day.weekday() == 5 else rng.choice([19, 19, 20])
                fixtures.append([div, datetime(day.year, day.month, day.day, hour, rng.choice([0, 30])).isoformat(timespec="minutes"),
                                 clubs[k], clubs[k + 1]])
    # An early kick-off in the lowest division (open to every grade) opens the round; it carries the rest-period cases.
    opener = next(f for f in fixtures if f[0] == n_div)
    opener[1] = opener[1][:11] + "11:00"
    fixtures.sort(key=lambda f: (f[1], f[0]))
    db.executemany("INSERT INTO fixtures VALUES (?,?,?,?,?)", [(i + 1,) + tuple(f) for i, f in enumerate(fixtures)])

    unavailable = {}
    for r in rng.sample(referees, k=max(3, len(referees) // 4)):
        unavailable[r[0]] = [rng.choice(matchdays)]
    plant_rest_cases(history, referees, fixtures[0], {rid: days[0] for rid, days in unavailable.items()},
                     ctx.choices("rest_days"))
    history.sort(key=lambda x: x[2])
    db.executemany("INSERT INTO past_appointments VALUES (?,?,?,?,?,?,?)", [(i + 1,) + tuple(x[1:]) for i, x in enumerate(history)])
    seminar_day = matchdays[1]  # every grade 1 referee is away on the Wednesday: division 1 cannot be staffed then
    ctx.write("association/appointments_policy.md",
        "# Referee appointments policy\n\n"
        "Fixtures are staffed one at a time in kickoff order (earliest first; fixtures kicking off at the same time\n"
        "in fixture id order). For each fixture, a referee is eligible only if all of these hold:\n\n"
        "- their grade allows the division: grade 1 referees may take any division, grade 2 referees division 2\n"
        "  and below, grade 3 referees division 3 and below;\n"
        "- they are not affiliated with either club;\n"
        "- they have not refereed either club within the rest period set for the round, counted in days before the\n"
        "  matchday (past appointments count);\n"
        "- they have not already been appointed to another fixture on the same day, and they are available that day.\n\n"
        "Among eligible referees, appoint the one with the fewest appointments so far this season (past appointments\n"
        "plus those made in this run); if tied, the higher grade (grade 1 before 2 before 3); if still tied, the\n"
        "alphabetically first name. If nobody is eligible, flag the fixture to the appointments secretary.\n"
    )
    ctx.write("association/seminar_notice.eml",
        f"From: association@referees.example\nSubject: National seminar\n\nAll grade 1 referees attend the national\n"
        f"seminar on {seminar_day:%A} {seminar_day.day} {seminar_day:%B %Y} and are unavailable for matches that day.\n"
    )
    for rid, days in unavailable.items():
        name = referees[rid - 1][1]
        day = days[0]
        ctx.write(f"referees/availability_{rid:03d}.txt",
            f"From {name}:\n\nSorry, I can't referee on {day:%A} {day.day} {day:%B}, family commitments. "
            "Any other day is fine.\n"
        )
    topics = ["kit allowance", "fitness test", "expenses claim", "law changes", "mentoring scheme", "assessor visits"]
    for i in range(ctx.size("distractors")):
        r, topic = rng.choice(referees), topics[i % len(topics)]
        folder = "referees" if i % 2 else "association"
        ctx.write(f"{folder}/{topic.replace(' ', '_')}_{i:03d}.txt",
            f"{topic.capitalize()}\n\nMessage from {r[1]} about the {topic}. "
            "Available as usual for appointments.\n"
        )
    ctx.facts(seminar_day=seminar_day.isoformat(),
              unavailable={str(k): [d.isoformat() for d in v] for k, v in unavailable.items()})
