"""State for energy_metering/meter_faults: meters, four weeks of daily registers, open tickets, field notes."""
from datetime import date, timedelta


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE meters (id INTEGER PRIMARY KEY, meter_id TEXT UNIQUE, account_no TEXT, address TEXT, installed_on TEXT);
        CREATE TABLE readings (id INTEGER PRIMARY KEY, meter_id TEXT, read_date TEXT, register_kwh INTEGER);
        CREATE TABLE tickets (id INTEGER PRIMARY KEY, meter_id TEXT, fault TEXT, first_seen TEXT, status TEXT, visit_date TEXT);
        CREATE TABLE ticket_notes (id INTEGER PRIMARY KEY, ticket_id INTEGER, note TEXT);
        """
    )
    first_day = date(2026, 10, 5) + timedelta(days=rng.randint(0, 20))
    n_days = 28
    today = first_day + timedelta(days=n_days)  # the day after the last reading
    stuck_run = rng.choice([4, 5, 6])
    spike_factor = rng.choice([4, 5])
    holiday = today + timedelta(days=rng.randint(1, 6))
    while holiday.weekday() >= 5:
        holiday += timedelta(days=1)

    streets = ctx.choices("excluded_street")  # every street: any of them may be swept by the field team anyway
    meters, readings = [], []
    n = ctx.size("meters")
    plans = {}
    for mid in range(1, n + 1):
        meter_id = f"E{rng.randint(10, 99)}K{mid:05d}"
        meters.append((mid, meter_id, f"AC-{60000 + mid * 17}", f"{rng.randint(1, 180)} {rng.choice(streets)}",
                       (first_day - timedelta(days=rng.randint(200, 3000))).isoformat()))
        roll = rng.random()
        plans[mid] = "stuck" if roll < 0.08 else "reverse" if roll < 0.15 else "spike" if roll < 0.22 else \
            "short_stuck" if roll < 0.3 else "ok"
    # Guaranteed cases: 1 stuck at a vacant property, 2 reverse on a solar export meter, 3 stuck with an open
    # ticket, 4 a run one day too short, 5/6/7 one real fault of each kind, 8 two faults (reverse wins).
    plans.update({1: "stuck", 2: "reverse", 3: "stuck", 4: "short_stuck", 5: "stuck", 6: "reverse", 7: "spike", 8: "spike+reverse"})
    for mid, meter_id, *_ in meters:
        plan = plans[mid]
        register = rng.randint(2000, 60000)
        steps = [rng.randint(5, 30) for _ in range(n_days)]
        if "stuck" in plan:
            length = stuck_run if plan == "stuck" else stuck_run - 1
            start = rng.randint(3, n_days - length - 1)
            for k in range(start, start + length - 1):  # length equal readings need length-1 zero steps
                steps[k] = 0
        if "reverse" in plan:
            steps[rng.randint(14, n_days - 2)] = -rng.randint(3, 40)
        if "spike" in plan:
            steps[rng.randint(2, 12)] = 30 * spike_factor + rng.randint(5, 60)
        day = first_day
        readings.append((meter_id, day.isoformat(), register))
        for step in steps:
            register += step
            day += timedelta(days=1)
            if day < today:
                readings.append((meter_id, day.isoformat(), register))
    # Meter 5 (a real stuck register) is on the excluded street; the other guaranteed cases are not.
    excluded = ctx.params["excluded_street"]
    other = streets[(streets.index(excluded) + 1) % len(streets)]
    for k in range(8):
        number = meters[k][3].split(" ", 1)[0]
        street = excluded if k == 4 else (other if meters[k][3].endswith(" " + excluded) else meters[k][3].split(" ", 1)[1])
        meters[k] = meters[k][:3] + (f"{number} {street}",) + meters[k][4:]
    db.executemany("INSERT INTO meters VALUES (?,?,?,?,?)", meters)
    db.executemany("INSERT INTO readings (meter_id, read_date, register_kwh) VALUES (?,?,?)",
                   sorted(readings, key=lambda r: (r[0], r[1])))  # meter, then date
    tickets = [(1, meters[2][1], "stuck", (first_day - timedelta(days=30)).isoformat(), "open",
                (first_day - timedelta(days=2)).isoformat())]
    for k in range(2, 2 + max(2, n // 12)):
        m = meters[rng.randint(8, n - 1)]
        status = "closed" if k % 2 else "open"
        if status == "open" and plans[m[0]] != "ok":
            status = "closed"  # open tickets only on meters 3 or healthy ones, so the guaranteed case stays unique
        tickets.append((k, m[1], rng.choice(["stuck", "spike"]), (first_day - timedelta(days=rng.randint(40, 200))).isoformat(),
                        status, (first_day - timedelta(days=rng.randint(1, 30))).isoformat()))
    db.executemany("INSERT INTO tickets VALUES (?,?,?,?,?,?)", tickets)

    ctx.write("engineering/meter_health_guidance.md",
        "# Meter health check - guidance for analysts\n\n"
        "Daily consumption on a date is that date's register minus the previous day's register.\n\n"
        f"* **stuck** - the same register value on {stuck_run} or more consecutive daily readings. The fault is first seen\n"
        "  on the first reading of the run.\n"
        "* **reverse** - a register lower than the previous day's. First seen on the date of the lower reading.\n"
        f"* **spike** - a daily consumption more than {spike_factor} times the meter's median daily consumption over the\n"
        "  whole period. First seen on the date of that consumption.\n\n"
        "A meter gets one ticket, for its most serious fault: reverse running is the most serious, then stuck, then\n"
        "spike. If a fault type occurs more than once, first seen is its earliest occurrence.\n\n"
        "## Visits\n"
        "Book the visit 1 working day after today for reverse running, 3 working days after today for a stuck\n"
        "register, and 5 working days after today for a spike. Working days are Monday to Friday, except public\n"
        f"holidays. Today is {today.day} {today:%B %Y}.\n"
    )
    ctx.write("mail/bank_holiday.eml",
        f"From: scheduling@grid.example\nSubject: Holiday cover\n\nReminder that {holiday:%A} {holiday.day} {holiday:%B %Y} is a public\n"
        "holiday; no field engineers are rostered that day.\n"
    )
    ctx.write("mail/void_properties.eml",
        f"From: lettings@partner.example\nSubject: Void properties this month\n\nThe property on account {meters[0][2]}\n"
        f"({meters[0][3]}) has been empty all month between tenants, so a meter that does not move there is expected\n"
        "and is not a fault. Anything else unusual on that meter should still be looked at.\n"
    )
    ctx.write("mail/solar_export.eml",
        f"From: renewables@grid.example\nSubject: New export meters\n\nMeter {meters[1][1]} now sits on a home with\n"
        "rooftop panels and an old bidirectional meter, so it legitimately runs backwards on sunny days. Do not treat\n"
        "reverse running on it as a fault.\n"
    )
    field_topics = ["van maintenance", "PPE order", "smart meter firmware", "call routing", "safety briefing", "team social",
                    "parking permits", "tablet upgrade"]
    count = ctx.size("distractors")
    visited = [rng.choice(meters) for _ in range(count)]
    for i, (m, topic) in enumerate(zip(visited, (field_topics * count)[:count])):
        ctx.write(f"{'mail' if i % 2 else 'engineering'}/{i:03d}-{topic.replace(' ', '-')}.md",
            f"# {topic}\n\nField note about the {topic}. Engineer visited {m[3]} last quarter; meter {m[1]} was read normally.\n")
    ctx.facts(pre_tickets=len(tickets))
