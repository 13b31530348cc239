"""State for event_planning/session_schedule: sessions, speakers, rooms, time slots, committee rules and speaker mail."""
import math

TOPICS = ["Data Engineering", "Security", "Cloud Native", "Machine Learning", "Frontend", "DevOps", "Databases",
          "Product", "Accessibility", "Mobile", "Observability", "Testing"]
GIVEN = ["Ada", "Bilal", "Chiara", "Dmitri", "Esther", "Fabio", "Grace", "Hiroshi", "Ingrid", "Jamal", "Kasia",
         "Lorenzo", "Maren", "Nikhil", "Oona", "Priya", "Rafael", "Selin", "Tobias", "Uma"]
FAMILY = ["Adeyemi", "Bauer", "Costa", "Dahl", "Eriksen", "Ferrari", "Gupta", "Hoffman", "Iqbal", "Jovic", "Kim",
          "Lindqvist", "Mendes", "Nakata", "Okafor", "Popescu"]
STARTS = ["09:00", "10:30", "13:00", "14:30", "16:00"]
ABSTRACTS = ["what went wrong when we scaled it tenfold and how we fixed it", "a tour of the tooling we built in-house",
             "patterns and anti-patterns from five years in production", "a hands-on walk through a real migration"]
TAKEAWAYS = ["a checklist they can apply on Monday", "sample code", "a decision framework", "war stories and metrics"]


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE slots (id INTEGER PRIMARY KEY, day INTEGER, start TEXT, end_time TEXT);
        CREATE TABLE rooms (id INTEGER PRIMARY KEY, name TEXT, capacity INTEGER, lab_equipped INTEGER);
        CREATE TABLE sessions (id INTEGER PRIMARY KEY, code TEXT UNIQUE, title TEXT, track TEXT, format TEXT,
            expected_attendance INTEGER, abstract TEXT);
        CREATE TABLE speakers (id INTEGER PRIMARY KEY, name TEXT UNIQUE, affiliation TEXT, bio TEXT);
        CREATE TABLE session_speakers (session_id INTEGER, speaker_id INTEGER, PRIMARY KEY (session_id, speaker_id));
        CREATE TABLE timetable (session_id INTEGER PRIMARY KEY, room_id INTEGER, slot_id INTEGER);
        """
    )
    slots = []
    for day in (1, 2):
        for start in STARTS:
            h, m = map(int, start.split(":"))
            end = h * 60 + m + 75
            slots.append((len(slots) + 1, day, start, f"{end // 60:02d}:{end % 60:02d}"))
    n = ctx.size("sessions")
    n_tracks = max(3, math.ceil(n / 5))
    tracks = [TOPICS[i % len(TOPICS)] + ("" if i < len(TOPICS) else f" {i // len(TOPICS) + 1}") for i in range(n_tracks)]
    n_rooms = math.ceil(n * 2 / len(slots)) + 1
    rooms = [(1, "Main Hall", 900, 0)]
    for rid in range(2, n_rooms + 1):
        lab = int(rid % 3 == 0)
        capacity = rng.choice([80, 120]) if lab else [300, 200, 300, 120, 200, 80][rid % 6]
        rooms.append((rid, f"{'Lab' if lab else 'Room'} {100 + rid}", capacity, lab))
    speakers = [(i, name, rng.choice(["Acme", "Globex", "Initech", "Umbrella Labs", "Stark Data", "independent"]),
                 f"{name} has worked on {rng.choice(TOPICS).lower()} for {rng.randint(3, 20)} years and speaks regularly "
                 f"at {rng.choice(['meetups', 'industry conferences', 'university seminars'])}.")
                for i, name in enumerate(rng.sample([f"{g} {m}. {f}" for g in GIVEN for m in "AJR" for f in FAMILY], max(8, n + n // 3)), start=1)]

    sessions, links = [], []
    sessions.append((1, "KN-1", "Opening keynote", "Keynote", "keynote", 850, "Where our field is heading next."))
    links.append((1, speakers[0][0]))
    for sid in range(2, n + 1):
        fmt = rng.choices(["talk", "workshop", "panel"], weights=[6, 2, 1])[0]
        attendance = rng.randint(30, 70) if fmt == "workshop" else rng.randint(40, 240)
        track = tracks[(sid - 2) % n_tracks]
        sessions.append((sid, f"S-{100 + sid}", f"{rng.choice(['Scaling', 'Lessons from', 'Beyond', 'Practical', 'Rethinking'])} "
                         f"{track.lower()}", track, fmt, attendance,
                         f"A {fmt} on {track.lower()}: {rng.choice(ABSTRACTS)} Attendees leave with {rng.choice(TAKEAWAYS)}."))
        for sp in rng.sample(speakers[1:], 1 if fmt != "panel" else 3):
            links.append((sid, sp[0]))
    # Speakers with several sessions make clashes possible.
    busy = rng.sample(speakers[1:], 3)
    for sp in busy:
        for sid in rng.sample(range(2, n + 1), 2):
            if (sid, sp[0]) not in links:
                links.append((sid, sp[0]))
    db.executemany("INSERT INTO slots VALUES (?,?,?,?)", slots)
    db.executemany("INSERT INTO rooms VALUES (?,?,?,?)", rooms)
    db.executemany("INSERT INTO sessions VALUES (?,?,?,?,?,?,?)", sessions)
    db.executemany("INSERT INTO speakers VALUES (?,?,?,?)", speakers)
    db.executemany("INSERT INTO session_speakers VALUES (?,?)", links)

    talks, crowd = {}, {}  # each speaker's sessions, each session's number of speakers
    for sid, sp in links:
        talks.setdefault(sp, []).append(sid)
        crowd[sid] = crowd.get(sid, 0) + 1
    speaking = sorted(sp for sp in talks if sp != speakers[0][0])
    # The speaker who must leave early has one session, which is not a panel: only one slot fits them.
    single = [sp for sp in speaking if len(talks[sp]) == 1 and crowd[talks[sp][0]] == 1]
    morning_day1 = rng.choice(single)
    only_day2, late_riser = rng.sample([sp for sp in speaking if sp != morning_day1], 2)
    withdrawn = rng.sample([sid for sid in range(2, n + 1) if sid != talks[morning_day1][0]], 2)
    name = {s[0]: s[1] for s in speakers}
    code = {s[0]: s[1] for s in sessions}
    ctx.write("committee/scheduling_rules.md",
        "# Programme committee: scheduling rules\n\n"
        "The opening keynote (KN-1) takes the Main Hall in the first slot of day 1, and nothing else is scheduled "
        "at that time so that everyone can attend.\n\n"
        "A room must seat at least the session's expected attendance. Workshops need a lab-equipped room.\n\n"
        "No speaker can be in two sessions in the same slot, and two sessions of the same track never run at the "
        "same time, so that people can follow a track from start to finish.\n\n"
        "Each room holds one session per slot, and every session runs once.\n"
    )
    ctx.write("mail/availability_day2.eml",
        f"From: {name[only_day2].lower().replace('. ', '.').replace(' ', '.')}@speakers.example\nSubject: My availability\n\n"
        f"Hello, this is {name[only_day2]}. My flight only lands late on the evening of day 1, so please put "
        "my sessions on day 2.\n"
    )
    ctx.write("mail/availability_morning.eml",
        f"From: {name[morning_day1].lower().replace('. ', '.').replace(' ', '.')}@speakers.example\nSubject: Timing request\n\n"
        f"Hi, {name[morning_day1]} here. I have to leave the venue at 13:00 on day 1 and will not be there on day 2, "
        "so my sessions need to finish before I go.\n"
    )
    ctx.write("mail/availability_late.eml",
        f"From: {name[late_riser].lower().replace('. ', '.').replace(' ', '.')}@speakers.example\nSubject: Mornings\n\n"
        f"Dear committee, {name[late_riser]} writing. I do school drop-off every morning, so I cannot do the first "
        "slot of either day. Any later slot is fine.\n"
    )
    ctx.write("mail/withdrawals.eml",
        "From: programme-chair@conf.example\nSubject: Withdrawn sessions\n\n"
        f"Two sessions are withdrawn: {code[withdrawn[0]]} (speaker illness) and {code[withdrawn[1]]} (employer "
        "did not approve the talk). Please leave them out of the timetable.\n"
    )
    chatter = ["slide template", "AV check times", "speaker dinner", "badge pickup", "recording consent",
               "hotel discount code", "lightning talk signup", "travel grants"]
    for i in range(ctx.size("speaker_mail")):
        who = rng.choice(speakers)
        ctx.write(f"mail/speaker_{i:02d}_{chatter[i % len(chatter)].replace(' ', '_')}.eml",
            f"From: {who[1].lower().replace('. ', '.').replace(' ', '.')}@speakers.example\nSubject: {chatter[i % len(chatter)].capitalize()}\n\n"
            f"Hi, {who[1]} here with a question about the {chatter[i % len(chatter)]}. I'm happy with any slot. Thanks!\n"
        )
    ctx.facts(only_day2=only_day2, morning_day1=morning_day1, late_riser=late_riser)
