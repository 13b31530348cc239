"""State for logistics/carrier_assignment: waiting shipments, carriers, lane rates and the shipping office's notes."""
import datetime as dt

COUNTRIES = ["Austria", "Belgium", "Czechia", "Denmark", "Estonia", "Finland", "Greece", "Hungary", "Ireland",
             "Latvia", "Norway", "Portugal"]
CARRIER_WORDS = ["Swift", "Polar", "Atlas", "Vector", "Beacon", "Horizon", "Meridian", "Summit", "Coastal", "Ranger",
                 "Apex", "Nordic", "Granite", "Zephyr", "Harbor", "Falcon"]
KINDS = ["Freight", "Logistics", "Haulage", "Express", "Cargo", "Transport"]


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    sites = ctx.choices("held_site")  # every site we ship from; the request holds one of them
    db.executescript(
        """
        CREATE TABLE carriers (id INTEGER PRIMARY KEY, name TEXT UNIQUE, max_weight_kg INTEGER, hazmat_certified INTEGER,
            on_time_pct REAL);
        CREATE TABLE rates (carrier_id INTEGER, destination_country TEXT, rate_per_kg REAL, minimum_charge REAL);
        CREATE TABLE shipments (id INTEGER PRIMARY KEY, ref TEXT UNIQUE, origin TEXT, destination_country TEXT,
            weight_kg INTEGER, hazmat INTEGER, ready_date TEXT, status TEXT, hold_reason TEXT);
        CREATE TABLE manifests (id INTEGER PRIMARY KEY, carrier_id INTEGER, created_seq INTEGER);
        CREATE TABLE bookings (id INTEGER PRIMARY KEY, manifest_id INTEGER, shipment_id INTEGER UNIQUE, base_charge REAL);
        """
    )
    n = ctx.size("carriers")
    words = rng.sample(CARRIER_WORDS, len(CARRIER_WORDS))
    carriers = {1: ["National Post Cargo", 6000, 1, 88.0]}  # expensive, goes everywhere: every shipment has a carrier
    for cid in range(2, n + 1):
        name = f"{words[cid % len(words)]} {KINDS[(cid // len(words)) % len(KINDS)]}"  # unique up to 96 carriers
        carriers[cid] = [name, rng.choice([1500, 2500, 4000, 5000]), int(rng.random() < 0.5), round(rng.uniform(80, 99), 1)]
    tied_a, tied_b, banned, lapsed = rng.sample(range(2, n + 1), 4)
    tied_a, tied_b = sorted((tied_a, tied_b))
    carriers[tied_a][3], carriers[tied_b][3] = 84.5, 96.5  # the later id is the more punctual one
    carriers[lapsed][2] = 1
    for cid in (tied_a, tied_b, banned, lapsed):
        carriers[cid][1] = max(carriers[cid][1], 2500)

    countries = rng.sample(COUNTRIES, 10)
    tie_land, ban_land, hazmat_land, closed_land = countries[:4]
    rates = {}
    for country in countries:
        rates[(1, country)] = (round(rng.uniform(2.8, 3.2), 2), 200.0)
        for cid in range(2, n + 1):
            if rng.random() < 0.7 or cid in (tied_a, tied_b, banned, lapsed):
                rates[(cid, country)] = (round(rng.uniform(0.8, 2.5), 2), float(rng.randint(60, 180)))

    def undercut(country: str, favourites: tuple) -> None:
        """Make the favourites strictly cheapest on this lane (same price for all of them)."""
        others = [v for (cid, c), v in rates.items() if c == country and cid not in favourites]
        cheap = (round(min(r for r, _ in others) * 0.85, 2), round(min(m for _, m in others) * 0.85, 2))
        for cid in favourites:
            rates[(cid, country)] = cheap

    for country, favourites in ((tie_land, (tied_a, tied_b)), (ban_land, (banned,)), (hazmat_land, (lapsed,))):
        undercut(country, favourites)
    db.executemany("INSERT INTO carriers VALUES (?,?,?,?,?)", [(cid, *v) for cid, v in sorted(carriers.items())])
    db.executemany("INSERT INTO rates VALUES (?,?,?,?)", [(cid, c, r, m) for (cid, c), (r, m) in sorted(rates.items())])

    week = dt.date(2026, 11, 2)
    cutoff = week + dt.timedelta(days=rng.randint(3, 8))
    shipments = []
    fixed = [(tie_land, 400, 0, week), (ban_land, 300, 0, week + dt.timedelta(days=1)),
             (hazmat_land, 350, 1, cutoff + dt.timedelta(days=rng.randint(0, 2))),
             (hazmat_land, 500, 1, cutoff - dt.timedelta(days=1)), (closed_land, 220, 0, week)]
    open_sites = [site for site in sites if site != ctx.params["held_site"]]
    open_lands = [c for c in countries if c != closed_land]
    # Just above each possible weight limit (the last one above them all), from an open site.
    fixed += [(rng.choice(open_lands), weight, 0, week + dt.timedelta(days=rng.randint(0, 4))) for weight in (1650, 1900, 2100, 2300)]
    n_traps = len(fixed)
    # One ordinary shipment from every site, so whichever site is closed, something stays put.
    fixed += [(rng.choice(open_lands), rng.randint(100, 1000), 0, week + dt.timedelta(days=rng.randint(0, 4)))
              for _ in sites]
    for sid in range(1, ctx.size("shipments") + 1):
        if sid <= len(fixed):
            country, weight, hazmat, ready = fixed[sid - 1]
            origin = rng.choice(open_sites) if sid <= n_traps else sites[sid - n_traps - 1]
        else:
            country = rng.choice(countries)
            weight, hazmat = rng.randint(40, 2400), int(rng.random() < 0.2)
            ready = week + dt.timedelta(days=rng.randint(0, 11))
            origin = rng.choice(sites)
        shipments.append((sid, f"SHP-{rng.randint(100, 999)}{sid:04d}", origin, country, weight, hazmat, ready.isoformat()))
    order = rng.sample(shipments, len(shipments))  # the fixed cases are spread through the list
    db.executemany("INSERT INTO shipments VALUES (?,?,?,?,?,?,?, 'waiting', NULL)",
                   [(k + 1, *s[1:]) for k, s in enumerate(order)])
    hazmat_fee = rng.choice([35.0, 45.0, 60.0])

    ctx.write("shipping_office/routing_guide.md",
        "# Routing guide\n\n"
        "A carrier can take a shipment when it has a rate for the destination country, the shipment's weight\n"
        "does not exceed the carrier's limit, and - for hazardous goods - the carrier holds a dangerous-goods\n"
        "certificate.\n\n"
        "Among the carriers that can take it, book the one with the lowest freight: the lane's rate per kg\n"
        "times the weight, but never less than the lane's minimum charge. Hazardous shipments also carry a\n"
        f"handling surcharge of {hazmat_fee:.2f} on top, whoever carries them. If two carriers quote the same\n"
        "freight to the cent, choose the one with the better on-time percentage.\n"
    )
    ctx.write("notices/compliance_embargo.md",
        "# Compliance notice\n\n"
        f"Effective immediately, no shipment of ours may leave for {closed_land}: the export licence is under review.\n"
        "Shipments for that destination must be held, not booked.\n\n"
        f"Separately, {carriers[banned][0]} has lost its transit permit for {ban_land}. Do not book them on that lane;\n"
        "their other lanes are unaffected.\n"
    )
    ctx.write("notices/carrier_certificates.eml",
        "From: safety@company.example\nSubject: Dangerous goods certificates\n\n"
        f"Heads-up: the dangerous-goods certificate of {carriers[lapsed][0]} expires on {cutoff:%d %B %Y} and will not\n"
        "be renewed in time. Their system record still shows them as certified. They may take hazardous shipments\n"
        "that are ready before that date, but none that are ready on it or later.\n"
    )
    topics = ["forklift training", "dock door repairs", "pallet returns", "yard lighting", "driver check-in",
              "winter tyres", "label printer", "canteen hours"]
    count = ctx.size("ops_notes")
    picks = [(topics[i % len(topics)], carriers[rng.randint(1, n)][0], rng.randint(1, 9), rng.randint(1000, 9999))
             for i in range(count)]
    for number, (topic, carrier_name, gate, ticket) in enumerate(picks):
        ctx.write(f"notices/ops_{number:03d}_{topic.replace(' ', '_')}.txt",
            f"Ops note: {topic}. {carrier_name} drivers should use gate {gate} next week.\n"
            f"This has no effect on which carrier we book. Ticket {ticket}.\n")
    ctx.facts(closed=closed_land, ban=[banned, ban_land], lapsed=[lapsed, cutoff.isoformat()], tie_land=tie_land)
