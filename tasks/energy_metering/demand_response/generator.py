"""State for energy_metering/demand_response: customers, evening-peak interval data and programme notes."""
from datetime import date, timedelta

FIRST = ["Ada", "Bram", "Cleo", "Dylan", "Edie", "Finn", "Gwen", "Hari", "Iris", "Jude", "Kai", "Lola", "Milo", "Nell",
         "Otto", "Pia", "Reuben", "Sadie", "Theo", "Wren"]
LAST = ["Baxter", "Chambers", "Dalton", "Emery", "Fowler", "Hobbs", "Kirby", "Lowry", "Mercer", "Norris", "Pryce", "Quayle"]


def _in_area(postcode: str, area: str) -> str:
    return area + postcode.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE customers (id INTEGER PRIMARY KEY, account_no TEXT UNIQUE, name TEXT, meter_type TEXT, postcode TEXT);
        CREATE TABLE peak_readings (id INTEGER PRIMARY KEY, customer_id INTEGER, reading_date TEXT, hour INTEGER, kwh REAL);
        CREATE TABLE enrolments (id INTEGER PRIMARY KEY, customer_id INTEGER, tier TEXT, flexible_kwh REAL, welcome_sent INTEGER);
        """
    )
    end = date(2026, 11, 27) + timedelta(days=rng.randint(0, 14))
    start = end - timedelta(days=27)
    holiday = start + timedelta(days=rng.randint(3, 20))
    while holiday.weekday() >= 5:
        holiday += timedelta(days=1)
    min_peak = rng.choice([5.0, 6.0, 7.0])
    share = rng.choice([25, 30, 40])
    gold_from = rng.choice([2.5, 3.0])
    n = ctx.size("customers")
    capacity = round(n * rng.uniform(1.0, 1.4), 1)  # kWh of flexible load the programme can take

    areas = ctx.choices("excluded_area")  # every postcode area: any of them may have its own local trial
    customers, readings = [], []
    for cid in range(1, n + 1):
        meter = "smart" if rng.random() < 0.75 else "legacy"
        customers.append([cid, f"DR-{30000 + cid * 7}", f"{rng.choice(FIRST)} {rng.choice(LAST)}", meter,
                          f"{rng.choice(areas)}{rng.randint(1, 30)} {rng.randint(1, 9)}{rng.choice('ABDEF')}{rng.choice('GHJLN')}"])
        level = rng.uniform(1.0, 6.0)
        day = start - timedelta(days=3)  # a few days before the window are in the data too
        while day <= end + timedelta(days=1):
            for hour in (17, 18):
                readings.append((cid, day.isoformat(), hour, round(max(0.1, rng.gauss(level, 0.6) * (0.6 if day.weekday() >= 5 else 1)), 2)))
            day += timedelta(days=1)
    for cid in (1, 2, 3, 4):
        customers[cid - 1][3] = "smart" if cid != 4 else "legacy"
    # Customer 3 (big, would otherwise get in) lives in the excluded area; customer 4 (the exchanged meter) does not.
    excluded = ctx.params["excluded_area"]
    customers[2][4] = _in_area(customers[2][4], excluded)
    if customers[3][4].startswith(excluded) and not customers[3][4][len(excluded)].isalpha():
        customers[3][4] = _in_area(customers[3][4], areas[(areas.index(excluded) + 1) % len(areas)])
    db.executemany("INSERT INTO customers VALUES (?,?,?,?,?)", [tuple(c) for c in customers])
    # Guaranteed cases: 1 on the priority register, 2 declined, 3 a big customer in the excluded area, 4 a legacy meter
    # swapped for a smart one last week; all four comfortably above the peak threshold.
    boosted = {1: 6.5, 2: 6.2, 3: 6.0, 4: 5.8}
    readings = [(c, d, h, round(boosted[c] + rng.uniform(-0.3, 0.3), 2) if c in boosted and date.fromisoformat(d).weekday() < 5 else k)
                for c, d, h, k in readings]
    db.executemany("INSERT INTO peak_readings (customer_id, reading_date, hour, kwh) VALUES (?,?,?,?)", readings)  # customer, date, hour order

    ctx.write("programme/programme_rules.md",
        "# Evening demand-response programme - enrolment rules\n\n"
        f"Use the evening peak readings (the 17:00 and 18:00 hours) from {start.day} {start:%B %Y} to {end.day} {end:%B %Y} inclusive,\n"
        "weekdays only. A customer's average peak is the average over those weekdays of their daily evening total (both\n"
        "hours added together). Public holidays do not count as weekdays.\n\n"
        f"A customer qualifies if they have a smart meter and an average peak of at least {min_peak} kWh. Their flexible\n"
        f"load is {share} percent of their average peak, rounded to two decimals.\n\n"
        f"The programme can take {capacity} kWh of flexible load in total. Go through the qualifying customers from the\n"
        "largest flexible load down (equal loads in account number order) and enrol each one whose load still fits in\n"
        "the remaining capacity; skip any that do not fit and carry on with the next.\n\n"
        f"Tier: gold for a flexible load of {gold_from} kWh or more, silver otherwise. Every enrolled customer gets the\n"
        "welcome pack.\n"
    )
    ctx.write("mail/priority_register.eml",
        f"From: vulnerability.team@grid.example\nSubject: Priority services register\n\nPlease make sure {customers[0][1]}\n"
        "is never put into load-shifting programmes: the household relies on powered medical equipment in the evenings.\n"
    )
    ctx.write("mail/declined.eml",
        f"From: programme.team@grid.example\nSubject: Opt-outs\n\nAccount {customers[1][1]} told us on the phone they do not\n"
        "want to take part this winter. Do not enrol them.\n"
    )
    ctx.write("mail/meter_exchange_log.txt",
        f"Metering log\n\n{(end - timedelta(days=5)).isoformat()}: legacy meter at {customers[3][1]} replaced with a smart meter.\n"
        "The customer record still says legacy until the nightly sync catches up; treat it as smart from now on.\n"
    )
    ctx.write("mail/bank_holiday.eml",
        f"From: ops@grid.example\nSubject: Public holiday\n\nReminder: {holiday:%A} {holiday.day} {holiday:%B %Y} was a public holiday.\n"
    )
    # Unrelated programme chatter, alternating between the two folders.
    subjects = ["tariff leaflet", "heat pump trial", "EV charger survey", "call scripts", "smart app release",
                "winter fuel payments", "billing calendar", "press enquiry"]
    for written in range(ctx.size("distractors")):
        about, who = subjects[written % len(subjects)], rng.choice(customers)
        place = "programme" if written % 2 else "mail"
        ctx.write(f"{place}/{about.replace(' ', '_')}_{written:03d}.txt",
            f"{about.title()}\n\nUpdate on the {about}; {who[2]} ({who[1]}) took part in the survey. "
            "This does not affect programme eligibility.\n")
