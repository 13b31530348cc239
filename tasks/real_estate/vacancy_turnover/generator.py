"""State for real_estate/vacancy_turnover: units, leases with move-outs, inspection findings, and the
office documents that hold the deduction rules (cleaning clause date, floor depreciation, a waiver).
The request (task.toml [params]) sets the share of each deposit that is the most we keep this round (a pinned lease
owes more than its whole deposit, so every cap changes its refund)."""
import datetime as dt

BUILDINGS = [("HC", "Harbor Court"), ("LV", "Linden View"), ("MP", "Mill Pond Flats"), ("QS", "Quarry Square"),
             ("ER", "Elm Row")]
FIRST = ["Ada", "Bram", "Cleo", "Dmitri", "Esme", "Farid", "Greta", "Hugo", "Ines", "Jonah", "Kiri", "Luca",
         "Mara", "Nils", "Oona", "Pavel", "Rosa", "Sami", "Tove", "Umar"]
LAST = ["Abbott", "Brandt", "Castillo", "Dunn", "Eriksen", "Fagan", "Gill", "Haas", "Ibarra", "Jansen",
        "Kowal", "Lund", "Moreau", "Novak", "Okafor", "Price"]
AREAS = ["kitchen", "bathroom", "bedroom", "living room", "floor", "walls", "balcony", "entry"]
KINDS = ["wear", "damage", "cleaning", "missing"]


def _day(d: dt.date) -> str:
    return d.isoformat()


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE units (id INTEGER PRIMARY KEY, code TEXT UNIQUE, building TEXT, building_name TEXT, bedrooms INTEGER, floor_area_m2 INTEGER);
        CREATE TABLE leases (id INTEGER PRIMARY KEY, unit_id INTEGER, tenant TEXT, start_date TEXT, move_out_date TEXT,
            deposit REAL, pet_addendum INTEGER);
        CREATE TABLE inspection_items (id INTEGER PRIMARY KEY, lease_id INTEGER, area TEXT, finding TEXT, category TEXT,
            repair_cost REAL);
        CREATE TABLE work_orders (id INTEGER PRIMARY KEY, unit_id INTEGER, estimated_cost REAL, status TEXT);
        CREATE TABLE deposit_settlements (id INTEGER PRIMARY KEY, lease_id INTEGER, deduction REAL, refund REAL,
            work_order_id INTEGER);
        """
    )
    fee = rng.choice([120, 150, 175, 200])
    floor_share = rng.choice([40, 50, 60])
    clause_date = dt.date(rng.choice([2022, 2023]), rng.choice([3, 6, 9]), 1)
    waived_code, waived_name = rng.choice(BUILDINGS)

    n_units = ctx.size("units")
    units, leases, items = [], [], []
    lease_id = 0
    for uid in range(1, n_units + 1):
        code, bname = BUILDINGS[uid % len(BUILDINGS)]
        units.append((uid, f"{code}-{100 + uid}", code, bname, rng.randint(0, 3), rng.randint(35, 110)))
        lease_id += 1
        start = dt.date(2020, 1, 1) + dt.timedelta(days=rng.randint(0, 1700))
        roll = rng.random()
        if roll < 0.45:
            move_out = dt.date(2026, 11, rng.randint(1, 30))
        elif roll < 0.6:
            move_out = dt.date(2026, 10, rng.randint(1, 31))   # last month's turnovers, already settled
        elif roll < 0.72:
            move_out = dt.date(2026, 12, rng.randint(1, 15))   # notice given, not yet vacated
        else:
            move_out = None
        leases.append([lease_id, uid, f"{rng.choice(FIRST)} {rng.choice(LAST)}", _day(start),
                       _day(move_out) if move_out else "", float(rng.choice([800, 1000, 1200, 1500, 1800])),
                       int(rng.random() < 0.25)])
        if move_out:
            for _ in range(rng.randint(2, 6)):
                kind = rng.choice(KINDS)
                items.append([lease_id, rng.choice(AREAS), kind, float(rng.randrange(40, 900, 5))])

    # Guarantee every rule bites at every scale: pick November leases and shape their findings.
    november = [l for l in leases if l[4].startswith("2026-11")]
    waived_units = {u[0] for u in units if u[2] == waived_code}
    in_waived = [l for l in november if l[1] in waived_units]
    if not in_waived:  # vanishingly rare, but the waiver must matter at every seed
        forced = next(l for l in leases if l[1] in waived_units)
        forced[4] = "2026-11-20"
        in_waived = [forced]
    others = [l for l in november if l[1] not in waived_units]
    old, new, floor_case, capped, waived = others[0], others[1], others[2], others[3], in_waived[0]
    old[3] = _day(clause_date - dt.timedelta(days=rng.randint(30, 400)))
    new[3] = _day(clause_date + dt.timedelta(days=rng.randint(0, 400)))
    items.append([old[0], "kitchen", "cleaning", 90.0])
    items.append([new[0], "bathroom", "cleaning", 60.0])
    floor_case[6] = 0
    items.append([floor_case[0], "floor", "damage", 480.0])
    capped[5] = 800.0
    items.append([capped[0], "walls", "damage", 760.0])
    items.append([capped[0], "entry", "missing", 210.0])
    items.append([waived[0], "entry", "missing", 150.0])
    # A lease starting exactly on the clause date carries the clause ("on or after").
    others[4][3] = _day(clause_date)
    items.append([others[4][0], "balcony", "cleaning", 45.0])

    findings = {"wear": ["scuffs from normal use", "faded paint", "minor carpet flattening", "loose hinge from age"],
                "damage": ["hole in plasterboard", "burn mark", "cracked tile", "broken blind", "stained carpet"],
                "cleaning": ["oven left dirty", "grease on extractor", "rubbish left behind", "limescale build-up"],
                "missing": ["smoke alarm cover missing", "second key fob not returned", "shower head missing",
                            "curtain rail missing"]}
    db.executemany("INSERT INTO units VALUES (?,?,?,?,?,?)", units)
    db.executemany("INSERT INTO leases VALUES (?,?,?,?,?,?,?)", [tuple(l) for l in leases])
    db.executemany("INSERT INTO inspection_items (lease_id, area, finding, category, repair_cost) VALUES (?,?,?,?,?)",
                   [(lid, area, rng.choice(findings[kind]), kind, cost) for lid, area, kind, cost in items])

    ctx.write("policies/deposit_deductions.md",
        "# How we settle security deposits\n\n"
        "The move-out inspection sorts every finding into one of four categories. Ordinary wear and tear is the\n"
        "landlord's cost and is never taken from a deposit. Damage and missing items are charged to the tenant\n"
        "at the full repair cost shown on the inspection, with one exception for floors: floor coverings wear\n"
        f"out anyway, so for damage in the floor area the tenant only pays {floor_share}% of the repair cost.\n"
        "That depreciation allowance does not apply to tenants whose lease includes the pet addendum; they pay\n"
        "floor damage in full.\n\n"
        "Dirty units are handled through the cleaning clause, not at cost: see the clause note in this folder.\n"
        "Whatever the findings, the total deduction can never be more than the deposit that was paid.\n"
    )
    ctx.write("policies/lease_clause_history.txt",
        "Lease template history (legal team)\n\n"
        f"The professional cleaning clause was added to our standard lease on {clause_date.strftime('%d %B %Y')}.\n"
        "Tenants whose lease started on or after that day agreed to a flat cleaning charge of "
        f"${fee} when the\nmove-out inspection records any cleaning finding; it is charged once per lease, however "
        "many cleaning\nfindings there are, and the listed cost of those findings is irrelevant for the deduction.\n"
        "Tenants on older leases never agreed to it and cannot be charged anything for cleaning.\n"
    )
    ctx.write("mail/2026-11-04_goodwill_waiver.eml",
        f"From: regional.manager@ourlettings.example\nSubject: {waived_name} - package room break-ins\n\n"
        f"Team, after the break-ins at {waived_name} this autumn we agreed with the residents' association that\n"
        "nobody moving out of that building this year will be charged for missing items - too many of them\n"
        "were taken from the shared package room. Damage and cleaning rules apply as normal there.\n\nThanks, Priya\n"
    )
    chatter = ["boiler service dates", "parking permits", "bin collection change", "new letting agent",
               "fire door checks", "window cleaning rota", "rent review calendar", "lift outage"]
    for i in range(ctx.size("office_mail")):
        topic = chatter[i % len(chatter)]
        b = rng.choice(BUILDINGS)[1]
        ctx.write(f"mail/2026-{10 + i % 2}-{1 + i:02d}_{topic.replace(' ', '_')}.eml",
            f"From: office@ourlettings.example\nSubject: {topic} at {b}\n\n"
            f"Quick note on the {topic} at {b}. Contractors will be on site on day {rng.randint(1, 28)}.\n"
            "This does not change how we handle deposits or move-outs.\n")
    for i in range(ctx.size("inspector_notes")):
        lease = rng.choice(leases)
        ctx.write(f"inspections/inspector_note_{i:03d}.txt",
            f"Inspector's diary, visit {i + 1}: walked unit {units[lease[1] - 1][1]} with the caretaker. Photos are on\n"
            "the shared drive. Reminder to myself: record findings in the system, categories as usual.\n")
