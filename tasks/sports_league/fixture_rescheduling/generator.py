"""State for sports_league/fixture_rescheduling: teams, venues, the season's fixtures (some postponed),
free venue slots, and the rules (rest days, TV evening slots, a venue closure) in memos and e-mails."""
import datetime as dt

TOWNS = ["Ashford", "Brackley", "Corbridge", "Dunmow", "Eastleigh", "Frome", "Glossop", "Hexham", "Ilkley",
         "Jarrow", "Kendal", "Ludlow", "Malton", "Nairn", "Oakham", "Penrith", "Ripon", "Selby", "Thirsk",
         "Ulverston", "Ventnor", "Whitby", "Yarm", "Alnwick"]
SUFFIXES = ["Rovers", "Athletic", "United", "Town", "Albion", "Wanderers", "Harriers", "Rangers"]
GROUNDS = ["Park", "Lane", "Road", "Meadow", "Arena", "Stadium"]
TODAY = dt.date(2026, 12, 1)
KICKOFFS = ["12:30", "15:00", "17:30", "19:45", "20:00"]


def _slot_rows(rng, venue_id, start, count, times):
    rows, day = [], start
    for _ in range(count):
        day += dt.timedelta(days=rng.randint(2, 9))
        rows.append((venue_id, day.isoformat(), rng.choice(times)))
    return rows


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE venues (id INTEGER PRIMARY KEY, name TEXT, town TEXT, capacity INTEGER);
        CREATE TABLE teams (id INTEGER PRIMARY KEY, name TEXT UNIQUE, home_venue_id INTEGER, broadcast_tier TEXT);
        CREATE TABLE matches (id INTEGER PRIMARY KEY, home_team_id INTEGER, away_team_id INTEGER, match_date TEXT,
            kickoff TEXT, venue_id INTEGER, status TEXT, slot_id INTEGER, referee TEXT, attendance INTEGER);
        CREATE TABLE slots (id INTEGER PRIMARY KEY, venue_id INTEGER, slot_date TEXT, kickoff TEXT, is_free INTEGER);
        """
    )
    rest = ctx.params["rest_days"]
    evening_from = "19:30"
    n = ctx.size("teams")
    names = [f"{t} {s}" for s in SUFFIXES for t in TOWNS]
    rng.shuffle(names)
    venues, teams = [], []
    for tid in range(1, n + 1):
        town = names[tid - 1].split()[0]
        venues.append((tid, f"{town} {rng.choice(GROUNDS)}", town, rng.randint(3000, 30000)))
        teams.append([tid, names[tid - 1], tid, "national" if rng.random() < 0.35 else "regional"])
    # Special home teams 1..4 (and their opponents 5..8) carry the traps.
    for tid in (1, 4, 5, 8):
        teams[tid - 1][3] = "national"
    for tid in (2, 3, 6, 7):
        teams[tid - 1][3] = "regional"
    closure_start = TODAY + dt.timedelta(days=rng.randint(3, 6))
    closure_end = closure_start + dt.timedelta(days=rng.choice([10, 14, 18]))

    # A double round-robin-ish season: weekly rounds with random pairings.
    matches, day = [], dt.date(2026, 8, 1)
    while day <= dt.date(2027, 2, 27):
        order = list(range(1, n + 1))
        rng.shuffle(order)
        for a, b in zip(order[::2], order[1::2]):
            if rng.random() < 0.35 or (day >= TODAY and min(a, b) <= 8):
                continue  # byes and cup weekends; the trap clubs have a clear run after today
            status = "played" if day < TODAY else "scheduled"
            matches.append([a, b, day.isoformat(), "15:00", a, status, None])
        day += dt.timedelta(days=7)
    # Postponements: random past fixtures, plus the four constructed ones.
    past = [m for m in matches if m[5] == "played" and min(m[0], m[1]) > 8 and m[2] >= "2026-10-01"]
    for m in rng.sample(past, min(len(past), max(2, ctx.rows(3)))):
        m[5] = "postponed"
    special = [(1, 5, "2026-10-03"), (2, 6, "2026-10-10"), (3, 7, "2026-10-17"), (4, 8, "2026-10-24")]
    for home, away, when in special:
        matches.append([home, away, when, "15:00", home, "postponed", None])
    # Team 7 (away in the rest-day case) has a fixture soon after its host's first free slot.
    first_rest_slot = TODAY + dt.timedelta(days=8)
    matches.append([7, 9 if n > 8 else 1, (first_rest_slot + dt.timedelta(days=rest - 1)).isoformat(), "15:00", 7, "scheduled", None])
    matches.sort(key=lambda m: (m[2], m[0]))

    slots = []
    for v in venues:
        if v[0] == 1:    # TV pick: the earliest slot is an afternoon one, the next an evening one
            slots += [(1, (TODAY + dt.timedelta(days=4)).isoformat(), "15:00"), (1, (TODAY + dt.timedelta(days=11)).isoformat(), "19:45")]
            slots += _slot_rows(rng, 1, TODAY + dt.timedelta(days=12), 3, KICKOFFS)
        elif v[0] == 2:  # closed venue: early slots fall in the closure
            slots += [(2, (closure_start + dt.timedelta(days=1)).isoformat(), "15:00"),
                      (2, (closure_end).isoformat(), "19:45"),
                      (2, (closure_end + dt.timedelta(days=2)).isoformat(), "17:30")]
            slots += _slot_rows(rng, 2, closure_end + dt.timedelta(days=3), 3, KICKOFFS)
        elif v[0] == 3:  # rest-day clash on the first slot
            # ... and the second is exactly the rest period after team 7's fixture, so a longer period clashes too
            second = first_rest_slot + dt.timedelta(days=2 * rest - 1)
            slots += [(3, first_rest_slot.isoformat(), "15:00"), (3, second.isoformat(), "15:00")]
            slots += _slot_rows(rng, 3, second, 3, KICKOFFS)
        elif v[0] == 4:  # TV pick with afternoon slots only: cannot be placed
            slots += _slot_rows(rng, 4, TODAY, 5, ["12:30", "15:00", "17:30"])
        else:
            slots += _slot_rows(rng, v[0], TODAY, rng.randint(6, 10), KICKOFFS)
    # Booked slots are offered too but are no longer free.
    rows = [(i + 1, v, d, k, 0 if rng.random() < 0.1 and v > 4 else 1) for i, (v, d, k) in enumerate(sorted(slots, key=lambda s: (s[1], s[0], s[2])))]
    db.executemany("INSERT INTO venues VALUES (?,?,?,?)", venues)
    db.executemany("INSERT INTO teams VALUES (?,?,?,?)", [tuple(t) for t in teams])
    referees = ["A. Marsh", "B. Okoro", "C. Pryce", "D. Venn", "E. Walsh", "F. Yildiz"]
    db.executemany("INSERT INTO matches (home_team_id, away_team_id, match_date, kickoff, venue_id, status, slot_id, "
                   "referee, attendance) VALUES (?,?,?,?,?,?,?,?,?)",
                   [(*m, rng.choice(referees), rng.randint(800, 25000) if m[5] == "played" else None) for m in matches])
    db.executemany("INSERT INTO slots VALUES (?,?,?,?,?)", rows)

    ctx.write("competition/rescheduling_rules.md",
        "# Competition rules: rearranged fixtures\n\n"
        "A postponed fixture is replayed at the home team's own ground, in one of the free slots that ground has\n"
        "offered to the league. Slots offered but already taken are not free.\n\n"
        "Player welfare: no team may play twice within the minimum rest period the league board sets for the season.\n"
        "Two matches of the same team must be at least that many days apart (a Saturday match and the following\n"
        "Wednesday are 4 days apart). This counts every fixture on the calendar, including ones already played and\n"
        "ones you have just rearranged.\n\n"
        "The league takes rearranged fixtures in order of their original date, and gives each the earliest\n"
        "slot that satisfies every rule (earliest date, then earliest kick-off). Fixtures postponed from the same\n"
        "day are taken in fixture-number order.\n"
    )
    ctx.write("mail/2026-11-21_broadcaster.eml",
        "From: scheduling@sportscast.example\nSubject: Rearranged fixtures - TV selections\n\n"
        "As per our contract, any fixture between two of the national-tier clubs is a TV selection and can only\n"
        f"be played in an evening slot, meaning a kick-off at {evening_from} or later. Matches involving a regional-\n"
        "tier club are not affected.\n")
    ctx.write("mail/2026-11-26_ground_closure.eml",
        f"From: secretary@{venues[1][2].lower()}.example\nSubject: {venues[1][1]} closed for pitch works\n\n"
        f"{venues[1][1]} will be closed for re-turfing from {closure_start.strftime('%d %B %Y')} to "
        f"{closure_end.strftime('%d %B %Y')} inclusive.\nWe offered slots in that period before the works were "
        "booked; please do not use them.\n")
    topics = ["ticket prices", "away end segregation", "youth cup draw", "programme sponsorship", "floodlight test",
              "car parking", "steward training"]
    for i in range(ctx.size("club_mail")):
        t = rng.choice(teams)
        ctx.write(f"mail/2026-11-{(i % 27) + 1:02d}_club_{i}.eml",
            f"From: office@{t[1].split()[0].lower()}.example\nSubject: {topics[i % len(topics)]}\n\n"
            f"A note from {t[1]} about {topics[i % len(topics)]}. No bearing on the fixture list.\n")
    for i in range(ctx.size("referee_notes")):
        ctx.write(f"referees/appointments_{i:02d}.txt",
            f"Referee appointments batch {i + 1}: officials confirmed for the next round. Assessors to follow.\n")
