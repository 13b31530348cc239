"""State for research_lab_inventory/equipment_booking: instruments, research groups and booking requests."""
from datetime import date, datetime, timedelta

KINDS = ["confocal microscope", "flow cytometer", "HPLC system"]
FUNDING = ["teaching", "grant", "internal"]
SURNAMES = ["Achebe", "Bergstrom", "Castillo", "Dimitrov", "Eriksen", "Fujita", "Gupta", "Hoffmann", "Ivanova", "Jensen",
            "Kowalski", "Larsen", "Mensah", "Nakamura", "Oliveira", "Petrov", "Quist", "Rahman", "Silva", "Takahashi"]


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE instruments (id INTEGER PRIMARY KEY, asset_tag TEXT UNIQUE, kind TEXT, room TEXT);
        CREATE TABLE groups (id INTEGER PRIMARY KEY, name TEXT, funding TEXT);
        CREATE TABLE requests (id INTEGER PRIMARY KEY, request_no TEXT UNIQUE, group_id INTEGER, kind TEXT, day TEXT,
            start_hour INTEGER, hours INTEGER, submitted_at TEXT);
        CREATE TABLE decisions (id INTEGER PRIMARY KEY, request_id INTEGER, decision TEXT, instrument_id INTEGER, reason TEXT);
        """
    )
    monday = date(2026, 11, 9) + timedelta(weeks=rng.randint(0, 5))
    cap = rng.choice([10, 12, 14])
    per_kind = ctx.size("instruments") // len(KINDS)
    instruments = []
    for k, kind in enumerate(KINDS):
        for j in range(per_kind):
            iid = len(instruments) + 1
            instruments.append((iid, f"{kind.split()[0][:3].upper()}-{k + 1}{j + 1:02d}", kind, f"Core {rng.choice('ABC')}{rng.randint(1, 9)}"))
    rng.shuffle(instruments)  # ids do not follow asset tags; the policy talks about asset tags
    instruments = [(i + 1,) + row[1:] for i, row in enumerate(instruments)]
    db.executemany("INSERT INTO instruments VALUES (?,?,?,?)", instruments)

    groups = [(g, f"{SURNAMES[(g - 1) % len(SURNAMES)]} lab" + (f" {(g - 1) // len(SURNAMES) + 1}" if g > len(SURNAMES) else ""),
               FUNDING[(g - 1) % 3]) for g in range(1, ctx.size("groups") + 1)]
    db.executemany("INSERT INTO groups VALUES (?,?,?)", groups)
    internal = [g[0] for g in groups if g[2] == "internal"]
    boosted = next(g[0] for g in groups if g[2] == "grant")
    days = [monday + timedelta(days=i) for i in range(5)]

    def reserved(kind, day, start, hours):
        end = start + hours
        return ((kind == KINDS[0] and day == days[0] and start < 12 and end > 10)        # priority contest
                or (kind == KINDS[1] and day == days[1] and start < 13 and end > 8)       # maintenance morning
                or (day == days[3] and end > 14))                                          # boosted group's slots

    requests = []

    def add(group, kind, day, start, hours, submitted):
        requests.append([group, kind, day.isoformat(), start, hours, submitted])

    week_before = datetime.combine(monday - timedelta(days=10), datetime.min.time())
    while len(requests) < ctx.size("requests"):
        kind, day = rng.choice(KINDS), rng.choice(days)
        start, hours = rng.randint(7, 19), rng.randint(1, 4)
        group = rng.choice([g[0] for g in groups if g[0] != boosted])
        if reserved(kind, day, start, hours):
            continue
        add(group, kind, day, start, hours, week_before + timedelta(minutes=rng.randint(600, 9000)))
    # Guaranteed cases.
    for n in range(per_kind):  # early internal requests filling every confocal on Monday 10-12 ...
        add(internal[n % len(internal)], KINDS[0], days[0], 10, 2, week_before + timedelta(minutes=10 + n))
    teaching = next(g[0] for g in groups if g[2] == "teaching")
    add(teaching, KINDS[0], days[0], 10, 2, week_before + timedelta(minutes=9500))  # ... and a late teaching one
    add(boosted, KINDS[1], days[1], 9, 2, week_before + timedelta(minutes=30))     # hits the maintenance window
    for kind, hours in zip(KINDS, [6, 6, cap + 3 - 12]):                           # over the usual cap, within the boost
        add(boosted, kind, days[3], 14, hours, week_before + timedelta(minutes=rng.randint(700, 9000)))
    # Late requests ending at every possible closing hour but the earliest, so the closing hour always matters.
    late_groups = [g[0] for g in groups if g[0] != boosted]
    for n, end in enumerate(ctx.choices("closing_hour")[1:]):
        add(late_groups[n % len(late_groups)], KINDS[n % len(KINDS)], days[2 + 2 * (n % 2)], end - 2, 2,
            week_before + timedelta(minutes=rng.randint(700, 9000)))
    requests.sort(key=lambda r: r[5])
    rows = [(i, f"BR-{i * 7 + 1000}", g, kind, d, s, h, t.isoformat(timespec="minutes"))
            for i, (g, kind, d, s, h, t) in enumerate(requests, start=1)]
    rng.shuffle(rows)
    db.executemany("INSERT INTO requests VALUES (?,?,?,?,?,?,?,?)", rows)

    down = min((i for i in instruments if i[2] == KINDS[1]), key=lambda i: i[1])
    ctx.write("core_facility/booking_policy.md",
        "# Core facility booking policy\n\n"
        "Requests are decided one at a time in priority order: teaching requests first, then grant-funded\n"
        "research, then internal projects (a request's priority is its group's funding type). Requests of the same\n"
        "priority are decided in the order they were submitted.\n\n"
        "For each request, check in this order:\n"
        "1. Opening hours. The core opens at 08:00 and closes at the closing hour set for the week; a booking must\n"
        "   start and finish inside those hours, otherwise reject it as \"outside hours\".\n"
        f"2. Quota. A group may hold at most {cap} approved instrument-hours in the week. If approving the request\n"
        "   would take the group over its quota, reject it as \"over quota\".\n"
        "3. Capacity. Give the request the free instrument of the requested kind with the lowest asset tag (in\n"
        "   alphabetical order). An instrument is free if nothing already approved on it, and no maintenance, overlaps\n"
        "   the requested hours. If none is free, reject it as \"no capacity\".\n"
    )
    ctx.write("mail/maintenance_notice.eml",
        f"From: core.manager@institute.example\nSubject: Service visit {down[1]}\n\nThe {down[2]} {down[1]} will be\n"
        f"out of service on {days[1]:%A} {days[1].day} {days[1]:%B} from 08:00 to 13:00 for its annual service. It\n"
        "is available as normal outside that window.\n"
    )
    ctx.write("mail/quota_exception.eml",
        f"From: director@institute.example\nSubject: Quota for {groups[boosted - 1][1]}\n\nGiven the grant deadline,\n"
        f"the {groups[boosted - 1][1]} may hold up to {cap + 6} instrument-hours in the week starting {monday:%A} "
        f"{monday.day} {monday:%B}.\nAll other groups keep the normal quota.\n"
    )
    faq = ["sample labelling", "training slots", "liquid waste", "glove sizes", "data storage", "software licences",
           "visitor access", "freezer inventory"]
    askers = [rng.choice(groups)[1] for _ in range(ctx.size("distractors"))]
    for i, asker in enumerate(askers):
        topic = faq[i % len(faq)]
        target = f"core_facility/faq_{i:03d}.txt" if i % 2 else f"mail/user_meeting_{i:03d}.txt"
        ctx.write(target, f"About {topic}\n\n{asker} raised a question about {topic} at the user meeting. "
                          "No change to bookings.\n")
    ctx.facts(maintenance=[down[0], days[1].isoformat(), 8, 13])
