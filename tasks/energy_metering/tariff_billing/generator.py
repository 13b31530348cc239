"""State for energy_metering/tariff_billing: accounts, tariffs, daily meter registers and ops notices."""
from datetime import date, timedelta

FIRST = ["Amira", "Ben", "Chloe", "Dev", "Elena", "Femi", "Grace", "Hugo", "Isla", "Jonah", "Kira", "Liam",
         "Maya", "Nico", "Orla", "Priya", "Quinn", "Rosa", "Sami", "Tess"]
LAST = ["Abbott", "Brook", "Carver", "Doyle", "Ellis", "Frost", "Gill", "Hale", "Ives", "Jones", "Kerr", "Lowe"]
TARIFFS = [("FIX12", "Fixed 12 month"), ("FLEX", "Flexible standard"), ("GREEN", "Green saver"), ("EV", "EV overnight")]


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE tariffs (code TEXT PRIMARY KEY, name TEXT, unit_rate_pence REAL, standing_pence_per_day REAL);
        CREATE TABLE customers (id INTEGER PRIMARY KEY, account_no TEXT UNIQUE, name TEXT, tariff_code TEXT,
            meter_id TEXT, status TEXT);
        CREATE TABLE readings (id INTEGER PRIMARY KEY, meter_id TEXT, read_date TEXT, register_kwh INTEGER);
        CREATE TABLE bills (id INTEGER PRIMARY KEY, customer_id INTEGER, kwh INTEGER, energy_charge REAL,
            standing_charge REAL);
        """
    )
    month = rng.choice([9, 10])
    start = date(2026, month, 1)
    end = date(2026, month + 1, 1)  # the closing reading, taken at midnight starting this day
    change_day = start + timedelta(days=rng.randint(8, 20))
    tariffs = [(code, name, round(rng.uniform(19, 31), 1), round(rng.uniform(38, 62), 2)) for code, name in TARIFFS]
    db.executemany("INSERT INTO tariffs VALUES (?,?,?,?)", tariffs)
    skipped = next(t for t in tariffs if t[1] == ctx.params["skipped_tariff"])
    changed = rng.choice([t for t in tariffs[:3] if t is not skipped])  # the repriced tariff is always billed here
    new_rate = round(changed[2] + rng.choice([1.8, 2.4, 3.1, -1.5]), 1)
    later = next(t for t in tariffs if t is not changed)  # a change announced for after this period

    customers, readings = [], []

    def meter_series(meter, first_day, last_day, register):
        day = first_day
        while day <= last_day:
            readings.append([meter, day.isoformat(), register])
            register += rng.randint(3, 38)
            day += timedelta(days=1)
        return register

    n = ctx.size("customers")
    for cid in range(1, n + 1):
        tariff = changed if cid <= 3 else skipped if cid == 4 else rng.choice(tariffs)  # 4: a live account not billed here
        status = "closed" if cid % 9 == 5 else "live"
        meter = f"MTR-{100000 + cid * 7}"
        customers.append((cid, f"AC-{50000 + cid * 13}", f"{rng.choice(FIRST)} {rng.choice(LAST)}", tariff[0], meter, status))
        meter_series(meter, start - timedelta(days=6), end + timedelta(days=3), rng.randint(1000, 90000))
    # A meter exchange during the period on an account whose tariff changes price.
    swapped = customers[1]
    exchange_day = start + timedelta(days=rng.randint(4, 25))
    old_meter, new_meter = swapped[4], f"MTR-{900000 + rng.randint(100, 999)}"
    readings = [r for r in readings if not (r[0] == old_meter and r[1] > exchange_day.isoformat())]
    meter_series(new_meter, exchange_day, end + timedelta(days=3), 0)
    customers[1] = swapped[:4] + (new_meter, "live")
    rng.shuffle(readings)
    readings.sort(key=lambda r: r[1])
    db.executemany("INSERT INTO customers VALUES (?,?,?,?,?,?)", customers)
    db.executemany("INSERT INTO readings (meter_id, read_date, register_kwh) VALUES (?,?,?)", readings)

    live = [c for c in customers if c[5] == "live"]
    hardship = sorted(rng.sample([c[1] for c in live if c[0] > 3], k=max(2, len(live) // 7)))
    hardship.append(customers[0][1])

    ctx.write("operations/billing_procedure.md",
        f"# Monthly billing procedure - {start:%B %Y}\n\n"
        f"This run covers consumption from {start.day} {start:%B} to {(end - timedelta(days=1)).day} {start:%B %Y} inclusive.\n"
        "Registers are read at midnight at the start of the date shown, so the opening register is the one dated\n"
        f"the first day of the period and the closing register is the one dated {end.day} {end:%B}. Consumption is\n"
        "closing minus opening, in whole kWh. Only live accounts are billed.\n\n"
        "Energy charge: kWh times the unit rate in pence, converted to pounds. If a unit rate changes during the\n"
        "period, split the consumption at the change date using the register read on that date. Standing charge:\n"
        "pence per day times the number of days in the period. Round each charge to the penny.\n"
    )
    ctx.write("inbox/price_change_notice.eml",
        f"From: pricing@ourenergy.example\nSubject: {changed[1]} unit rate change\n\n"
        f"The unit rate of the {changed[1]} tariff changes from {changed[2]}p to {new_rate}p per kWh with effect\n"
        f"from {change_day.day} {change_day:%B %Y}, i.e. for all energy used on and after that date. The tariff\n"
        "table in the billing system will only be updated next month, so apply it by hand this run.\n"
        "Standing charges are unchanged.\n"
    )
    ctx.write("inbox/future_price_notice.eml",
        f"From: pricing@ourenergy.example\nSubject: {later[1]} repricing next quarter\n\n"
        f"Advance notice: the {later[1]} tariff moves to {round(later[2] + 2.2, 1)}p per kWh from 1 January 2027.\n"
        "Nothing to do for current billing runs.\n"
    )
    ctx.write("inbox/support_scheme.eml",
        "From: welfare@ourenergy.example\nSubject: Customers on the hardship support scheme\n\n"
        "Hello billing, the following accounts are on the hardship support scheme this period. Their standing\n"
        "charge is waived in full; they still pay for the energy they use.\n\n"
        + "".join(f"  {acc}\n" for acc in hardship) + "\nKind regards, Welfare team\n"
    )
    ctx.write("operations/field_engineering_log.txt",
        "Field engineering log\n\n"
        f"{exchange_day.isoformat()}  Account {swapped[1]}: faulty meter {old_meter} removed and replaced by {new_meter}.\n"
        f"  The old meter's last register is the one dated {exchange_day.isoformat()}; the new meter starts from zero\n"
        "  on the same date. The account now points at the new meter only, so bill both registers.\n"
        f"{(start - timedelta(days=20)).isoformat()}  Routine inspection at {rng.choice(customers)[1]}; no fault found.\n"
    )
    themes = ("smart meter rollout", "call centre hours", "direct debit dates", "meter reader training", "van fleet",
              "complaints summary", "tree cutting", "substation visit")
    bodies = [(k, themes[k % len(themes)], rng.choice(customers)[1], rng.randint(10000, 99999)) for k in range(ctx.size("distractors"))]
    for k, theme, account, case in bodies:
        text = f"{theme.capitalize()}\n\nUpdate for the team: customer {account} called about the {theme}. "
        text += f"Nothing changes for billing. Case {case}.\n"
        folder = "inbox" if k % 2 == 0 else "operations"
        ctx.write(f"{folder}/note_{k:03d}_{theme.replace(' ', '_')}.txt", text)
