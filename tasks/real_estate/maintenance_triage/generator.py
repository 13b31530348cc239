"""State for real_estate/maintenance_triage: buildings, tenants' requests, contractors and the property team's files.
The request (task.toml [params]) sets this month's routine target in days and urgent target in hours (they override the
guide's 7 days and 24 hours; routine requests and an urgent no-heat report on a mild day are pinned at every scale)."""
import datetime as dt

DISTRICTS = ["Harbor", "Midtown", "Old Quarter", "Eastside"]
BUILDINGS = ["Alder House", "Birch Court", "Cedar Yard", "Damson Lofts", "Elm Terrace", "Foxglove Mews", "Gorse Place", "Heron Wharf"]
TRADES = ["plumbing", "electrical", "heating", "appliance", "locksmith"]
VENDOR_WORDS = ["Swift", "Reliable", "Metro", "Premier", "Ace", "Bright", "City", "Rapid", "Prime", "Allied", "United", "Quality"]
# (trade, text, class) - class is "emergency", "urgent", "routine" or "heat" (depends on the weather)
ISSUES = [
    ("plumbing", "water pouring through the kitchen ceiling from a burst pipe", "emergency"),
    ("plumbing", "bathroom is flooding from under the bath", "emergency"),
    ("plumbing", "no hot water since yesterday", "urgent"),
    ("plumbing", "dripping tap in the bathroom basin", "routine"),
    ("plumbing", "toilet cistern runs constantly", "routine"),
    ("electrical", "socket is sparking and smells of burning", "emergency"),
    ("electrical", "half the flat has no power after the breaker tripped", "urgent"),
    ("electrical", "hallway light fitting flickers", "routine"),
    ("heating", "strong gas smell near the boiler", "emergency"),
    ("heating", "no heating at all, radiators stone cold", "heat"),
    ("heating", "one radiator will not warm up", "routine"),
    ("appliance", "fridge has stopped cooling", "urgent"),
    ("appliance", "oven door hinge is loose", "routine"),
    ("appliance", "washing machine drum makes a loud noise", "routine"),
    ("locksmith", "front door lock is broken and the flat cannot be secured", "urgent"),
    ("locksmith", "window lock key is lost", "routine"),
]


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE properties (id INTEGER PRIMARY KEY, name TEXT, district TEXT);
        CREATE TABLE units (id INTEGER PRIMARY KEY, property_id INTEGER, unit_no TEXT, tenant TEXT);
        CREATE TABLE requests (id INTEGER PRIMARY KEY, unit_id INTEGER, reported_at TEXT, trade TEXT, description TEXT, status TEXT);
        CREATE TABLE vendors (id INTEGER PRIMARY KEY, name TEXT, trade TEXT, districts TEXT, hourly_rate REAL, rating REAL,
            max_open_jobs INTEGER, open_jobs INTEGER);
        CREATE TABLE triage (request_id INTEGER PRIMARY KEY, priority TEXT, due_by TEXT);
        CREATE TABLE work_orders (id INTEGER PRIMARY KEY, request_id INTEGER, vendor_id INTEGER, paged INTEGER DEFAULT 0);
        """
    )
    props = []
    for pid in range(1, ctx.size("properties") + 1):
        base = BUILDINGS[(pid - 1) % len(BUILDINGS)]
        props.append({"id": pid, "name": base if pid <= len(BUILDINGS) else f"{base} {(pid - 1) // len(BUILDINGS) + 1}",
                      "district": DISTRICTS[(pid - 1) % len(DISTRICTS)]})
    db.executemany("INSERT INTO properties VALUES (:id, :name, :district)", props)
    units = [(uid, (uid - 1) % len(props) + 1, f"{rng.randint(1, 6)}{rng.choice('ABCD')}", f"Tenant {uid:04d}")
             for uid in range(1, ctx.size("units") + 1)]
    db.executemany("INSERT INTO units VALUES (?,?,?,?)", units)

    vendors = []
    n_v = ctx.size("vendors")
    for vid in range(1, n_v + 1):
        trade = TRADES[(vid - 1) % len(TRADES)]
        served = sorted(rng.sample(DISTRICTS, rng.randint(2, 4)))
        vendors.append({"id": vid, "name": f"{VENDOR_WORDS[(vid - 1) % len(VENDOR_WORDS)]} {trade.capitalize()}" + ("" if vid <= len(VENDOR_WORDS) else f" {vid}"),
                        "trade": trade, "districts": ", ".join(served), "hourly_rate": float(rng.choice([45, 50, 55, 60, 65, 70])),
                        "rating": rng.choice([3.8, 4.1, 4.4, 4.7]), "max_open_jobs": rng.randint(3, 6), "open_jobs": 0})
        vendors[-1]["open_jobs"] = rng.randint(0, vendors[-1]["max_open_jobs"])
    # Every trade can always be served everywhere by at least one "catch-all" vendor with room.
    for i, trade in enumerate(TRADES):
        v = vendors[i]
        v.update(districts=", ".join(DISTRICTS), max_open_jobs=ctx.rows(6) + 10, open_jobs=0, hourly_rate=75.0)
    week_start = dt.date(2026, 11, 30)  # a Monday
    lows = {week_start + dt.timedelta(days=i): rng.randint(-4, 11) for i in range(7)}
    frost = rng.choice([3, 4, 5])
    lows[week_start + dt.timedelta(days=rng.randint(0, 2))] = frost - rng.randint(1, 4)  # a cold night...
    lows[week_start + dt.timedelta(days=rng.randint(3, 6))] = frost + rng.randint(0, 3)  # ...and a mild one, maybe exactly at the limit

    # Special rules in the files: a suspended vendor and a warranty contractor for one building.
    suspended = rng.choice([v for v in vendors[len(TRADES):] if v["trade"] in ("plumbing", "electrical")])
    # The suspended contractor would otherwise be the cheapest choice everywhere, so the suspension always matters.
    suspended.update(hourly_rate=40.0, districts=", ".join(DISTRICTS), max_open_jobs=ctx.rows(6) + 10, open_jobs=0)
    warranty_prop = props[1]
    warranty_vendor = rng.choice([v for v in vendors[len(TRADES):] if v["trade"] == "heating"] or [vendors[2]])
    db.executemany("INSERT INTO vendors VALUES (:id, :name, :trade, :districts, :hourly_rate, :rating, :max_open_jobs, :open_jobs)", vendors)

    requests = []
    for _ in range(ctx.size("old_requests")):
        trade, text, _ = rng.choice(ISSUES)
        when = dt.datetime(2026, rng.randint(6, 11), rng.randint(1, 28), rng.randint(7, 20), rng.choice([0, 15, 30, 45]))
        requests.append([rng.randint(1, len(units)), when.strftime("%Y-%m-%d %H:%M"), trade, text, "closed"])
    cold = "no heating at all, radiators stone cold"
    pinned = [("heating", cold, min(d for d in lows if lows[d] < frost)), ("heating", cold, max(d for d in lows if lows[d] >= frost)),
              None, ("plumbing", "dripping tap in the bathroom basin", week_start), ("electrical", "hallway light fitting flickers", week_start)]
    for i in range(ctx.size("new_requests")):
        if i < len(pinned) and pinned[i]:
            trade, text, day = pinned[i]
        else:
            trade, text, _ = rng.choice(ISSUES)
            day = week_start + dt.timedelta(days=rng.randint(0, 6))
        unit = rng.randint(1, len(units))
        if i == 2:  # an appliance fault in the warranty building
            trade, text, unit = "appliance", "oven door hinge is loose", warranty_prop["id"]
        when = dt.datetime.combine(day, dt.time(rng.randint(6, 22), rng.choice([0, 10, 20, 30, 40, 50])))
        requests.append([unit, when.strftime("%Y-%m-%d %H:%M"), trade, f"Tenant reports: {text}.", "new"])
    rng.shuffle(requests)
    db.executemany("INSERT INTO requests (unit_id, reported_at, trade, description, status) VALUES (?,?,?,?,?)", requests)

    # --- workspace ---------------------------------------------------------------------------------
    def phrases(cls):
        return "\n".join(f"  - {t}" for _, t, c in ISSUES if c == cls)
    ctx.write("guides/triage_guide.md",
        "# Maintenance triage guide\n\nClassify each request by what the tenant reports.\n\nEmergency (complete within 4 hours of the report):\n"
        f"{phrases('emergency')}\n\nUrgent (within 24 hours):\n{phrases('urgent')}\n\nRoutine (within 7 days):\n{phrases('routine')}\n\n"
        f"A report of no heating at all is an emergency when the forecast overnight low for the day it was reported is below {frost} "
        "degrees C, otherwise it is urgent.\n\n## Choosing the contractor\n\nWork through the requests with emergencies first, then "
        "urgent, then routine; within a priority, oldest report first. Pick a contractor of the right trade who covers the "
        "building's district and still has capacity (open jobs below their maximum; each work order you raise adds one). Among "
        "those, the lowest hourly rate wins, then the higher rating. Page the contractor for every emergency.\n")
    forecast = "\n".join(f"{d.strftime('%A %d %B')}: overnight low {t} C" for d, t in sorted(lows.items()))
    ctx.write("mail/weather_forecast.eml",
        f"From: facilities@props.example\nSubject: Forecast for the week\n\nThe forecast for this week, for planning:\n{forecast}\n")
    ctx.write("mail/contractor_suspension.eml",
        f"From: compliance@props.example\nSubject: {suspended['name']} suspended\n\nPlease do not send any new work to "
        f"{suspended['name']} until they send us a valid public liability certificate.\n")
    ctx.write(f"site_notes/{warranty_prop['name'].lower().replace(' ', '_')}_warranty.txt",
        f"{warranty_prop['name']} is still under the developer's warranty. All heating and appliance faults there go to "
        f"{warranty_vendor['name']}, whatever their rate or current workload; other trades follow the normal rules.\n")
    for i in range(ctx.size("tenant_mail")):
        ctx.write(f"mail/tenant_{i:03d}.eml",
            f"From: tenant{rng.randint(1, len(units)):04d}@mail.example\nSubject: {rng.choice(['Bin collection', 'Parking', 'Noise', 'Rent query'])}\n\n"
            "Just a quick question, nothing to repair. Thanks.\n")
    for i in range(ctx.size("site_notes")):
        p = rng.choice(props)
        ctx.write(f"site_notes/visit_{i:03d}.txt",
            f"Site visit to {p['name']}: communal areas clean, {rng.choice(['lift serviced', 'gutters cleared', 'fire doors checked'])}.\n")

    ctx.facts(suspended=suspended["id"])
