"""State for logistics/sla_breach_report: customers with tiers, timestamped deliveries, service terms and notices."""
import datetime as dt

COMPANIES = ["Arbor", "Brisk", "Corvid", "Dapple", "Evenfall", "Flint", "Gossamer", "Hollow", "Inkwell", "Juno",
             "Kestrel", "Lumen", "Marlow", "Nettle", "Osprey", "Pike", "Quince", "Rook", "Sorrel", "Thistle"]
DAYS = {"standard": 3, "economy": 5}


def add_business_days(day: dt.date, n: int, holidays: set) -> dt.date:
    while n:
        day += dt.timedelta(days=1)
        if day.weekday() < 5 and day not in holidays:
            n -= 1
    return day


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    regions = ctx.choices("excluded_region")  # every delivery region; the request leaves one out
    db.executescript(
        """
        CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT UNIQUE, tier TEXT);
        CREATE TABLE deliveries (id INTEGER PRIMARY KEY, tracking_no TEXT UNIQUE, customer_id INTEGER, service TEXT,
            region TEXT, picked_up_at TEXT, delivered_at TEXT, fee REAL);
        CREATE TABLE breaches (id INTEGER PRIMARY KEY, delivery_id INTEGER UNIQUE, note TEXT);
        CREATE TABLE credits (id INTEGER PRIMARY KEY, breach_id INTEGER UNIQUE, amount REAL);
        """
    )
    month = rng.choice([9, 10])
    first = dt.date(2026, month, 1)
    mondays = [first + dt.timedelta(days=d) for d in range(28) if (first + dt.timedelta(days=d)).weekday() == 0]
    holidays = {mondays[1], mondays[3]}
    cutoff = dt.datetime(2026, month, 28, 18, 0)
    storm_region = rng.choice(regions)
    storm_start = dt.date(2026, month, rng.randint(8, 12))
    storm = (storm_start, storm_start + dt.timedelta(days=2))
    credit_pct = rng.choice([10, 15, 20, 25])

    n_customers = ctx.size("customers")
    kinds = ["Ltd", "Group", "Co", "Works", "Labs", "Goods"]
    customers = [(cid, f"{COMPANIES[cid % len(COMPANIES)]} {kinds[(cid // len(COMPANIES)) % len(kinds)]}"
                  + (f" {cid}" if cid >= len(COMPANIES) * len(kinds) else ""),
                  rng.choice(["Gold", "Silver", "Bronze", "Bronze"])) for cid in range(1, n_customers + 1)]
    premium = customers[2][0]
    customers[0] = (1, customers[0][1], "Gold")
    db.executemany("INSERT INTO customers VALUES (?,?,?)", customers)

    rows = []
    for did in range(1, ctx.size("deliveries") + 1):
        service = rng.choice(["express", "standard", "standard", "economy"])
        picked = dt.datetime.combine(first + dt.timedelta(days=rng.randint(0, 25)), dt.time(rng.randint(7, 18), rng.choice([0, 15, 30, 45])))
        customer = rng.randint(1, n_customers)
        if service == "express":
            delivered = picked + dt.timedelta(hours=rng.choice([6, 12, 20, 23, 25, 30, 40]))
        else:
            due = add_business_days(picked.date(), DAYS[service], holidays)
            delivered = dt.datetime.combine(due + dt.timedelta(days=rng.choice([-2, -1, 0, 0, 0, 1, 2])), dt.time(rng.randint(8, 20), 0))
        rows.append([did, service, customer, rng.choice(regions), picked, delivered, round(rng.uniform(8, 95), 2)])
    def at(day: dt.date, hour: int) -> dt.datetime:
        return dt.datetime.combine(day, dt.time(hour, 0))

    def late_standard(row, customer, region, pick_day):
        """Two business days late."""
        pick = first + dt.timedelta(days=pick_day)
        row[1:6] = ["standard", customer, region, at(pick, 9), at(add_business_days(pick, 5, holidays), 12)]

    # Guaranteed cases at every scale, in regions neither storm-hit nor left out of the review: a standard delivery
    # across the first holiday (on time), an express one after 26 hours (a breach), a late one the storm exempts, the
    # premium contract's (on time by the default terms, late for it), and one still on the road past its promise.
    holiday_pick = mondays[1] - dt.timedelta(days=4)  # the Thursday before the first holiday
    std_pick = first + dt.timedelta(days=14)
    ok = [r for r in regions if r not in (storm_region, ctx.params["excluded_region"])]
    fixed = [["standard", 1, ok[0], at(holiday_pick, 10), at(add_business_days(holiday_pick, 3, holidays), 16)],
             ["express", 1, ok[1], at(first + dt.timedelta(days=3), 9), at(first + dt.timedelta(days=4), 11)],
             ["economy", 1, storm_region, at(storm[0], 8), at(storm[0] + dt.timedelta(days=12), 9)],
             ["standard", premium, ok[2], at(std_pick, 9), at(add_business_days(std_pick, 3, holidays), 12)],
             ["economy", 1, ok[0], at(dt.date(2026, month, 12), 9), None]]
    for row, case in zip(rows, fixed):
        row[1:6] = case
    # A late delivery in every region after the storm, so whichever region is left out, a breach goes with it.
    for k, region in enumerate(regions):
        late_standard(rows[5 + k], rng.choice([c[0] for c in customers if c[0] != premium]), region, 15 + k % 3)
    # Late deliveries for the Gold customer with fees between the possible credit floors.
    for k, fee in enumerate((17.0, 22.0, 27.0)):
        late_standard(rows[11 + k], 1, ok[k], 16 + k)
        rows[11 + k][6] = fee
    for r in rows:
        if r[5] is not None and r[5] > cutoff:
            r[5] = None  # not delivered by the reporting cut-off
    db.executemany("INSERT INTO deliveries VALUES (?,?,?,?,?,?,?,?)",
                   [(r[0], f"TRK{rng.randint(1000, 9999)}{r[0]:05d}", r[2], r[1], r[3], r[4].isoformat(timespec="minutes"),
                     r[5].isoformat(timespec="minutes") if r[5] else None, r[6]) for r in rows])

    names = {c[0]: c[1] for c in customers}

    def pretty(day: dt.date) -> str:
        return f"{day:%A} {day.day} {day:%B %Y}"

    docs = {
        "contracts/service_level_terms.md":
            "# Service-level terms\n\n"
            "- **Express**: delivered within 24 hours of pickup.\n"
            "- **Standard**: delivered by the end of the third business day after the day of pickup.\n"
            "- **Economy**: delivered by the end of the fifth business day after the day of pickup.\n\n"
            "Business days are Monday to Friday, except public holidays. A delivery that has not arrived by the\n"
            f"reporting cut-off ({cutoff:%d %B %Y %H:%M}) counts as a breach once its promise has passed.\n\n"
            f"Gold customers receive a service credit of {credit_pct}% of the delivery fee for every breach, rounded to\n"
            "the cent. Other tiers receive no credit.\n",
        "operations/public_holidays.md":
            "# Public holidays this month\n\n"
            + "".join(f"- {pretty(h)}\n" for h in sorted(holidays)) + "\nThe depots are closed and no deliveries run.\n",
        "operations/force_majeure.md":
            "# Force majeure notice\n\n"
            f"Severe storms closed the roads in the {storm_region} region. Deliveries to {storm_region} picked up between\n"
            f"{pretty(storm[0])} and {pretty(storm[1])} (inclusive) are exempt from the service-level promise.\n",
        "contracts/premium_contract.md":
            "# Contract addendum\n\n"
            f"{names[premium]} has bought our premium standard service: their standard deliveries are promised by the\n"
            "end of the second business day after pickup instead of the third. Express and economy are unchanged.\n",
    }
    for i in range(ctx.size("bulletins")):
        docs[f"operations/bulletin_{i:03d}.md"] = (
            f"# Bulletin {i + 1}\n\nVan {rng.randint(10, 99)} is back from servicing. {rng.choice(regions)} drivers: "
            "new fuel cards\narrive next week. Service levels are unaffected.\n")
    for rel, text in docs.items():
        ctx.write(rel, text)
