"""State for accounts_payable/duplicate_invoices: a ledger seeded with re-keyed duplicates and a weekly biller."""
import datetime as dt

TRADES = ["Signage", "Catering", "Couriers", "Cleaning", "Security", "Printing", "Staffing", "Waste", "Telecom",
          "Plumbing", "Electrical", "Landscaping", "IT Support", "Uniforms", "Water Coolers", "Pest Control"]


def variant(number: str, rng) -> str:
    """The same invoice number as a clerk might re-key it: other case, separators or leading zeros."""
    prefix, digits = number.split("-")
    return rng.choice([f"{prefix.lower()} {int(digits)}", f"{prefix}/{digits.lstrip('0')}", f"{prefix}{digits}",
                       f"{prefix.title()}-0{digits}"])


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE vendors (id INTEGER PRIMARY KEY, name TEXT);
        CREATE TABLE invoices (id INTEGER PRIMARY KEY, vendor_id INTEGER, invoice_no TEXT, invoice_date TEXT, amount REAL,
            status TEXT, description TEXT, duplicate_of INTEGER);
        CREATE TABLE recovery_cases (id INTEGER PRIMARY KEY, vendor_id INTEGER);
        CREATE TABLE recovery_items (case_id INTEGER, invoice_id INTEGER UNIQUE);
        """
    )
    window = ctx.params["window_days"]
    n_vendors = ctx.size("vendors")
    names = [f"{rng.choice(['Apex', 'Bright', 'Civic', 'Delta', 'Eagle', 'Front', 'Globe', 'Hub'])} "
             f"{TRADES[v % len(TRADES)]}" + (f" {v // len(TRADES) + 1}" if v >= len(TRADES) else "") for v in range(n_vendors)]
    db.executemany("INSERT INTO vendors VALUES (?,?)", [(i + 1, n) for i, n in enumerate(names)])
    weekly = rng.randint(2, n_vendors)
    others = [v for v in range(1, n_vendors + 1) if v != weekly]  # every supplier but the weekly biller

    start = dt.date(2026, 6, 1)
    entries = []  # (vendor, number, date, amount, status, description)
    counters = {v: rng.randint(100, 900) for v in range(1, n_vendors + 1)}

    def fresh(vendor: int, day: dt.date, amount: float) -> tuple:
        counters[vendor] += rng.randint(1, 9)
        prefix = "".join(w[0] for w in names[vendor - 1].split()[:2]).upper() + "INV"
        status = "paid" if day < dt.date(2026, 10, 15) and rng.random() < 0.8 else "posted"
        return (vendor, f"{prefix}-{counters[vendor]:06d}", day, amount, status,
                rng.choice(["monthly service", "call-out", "materials", "consumables", "project phase"]))

    for week in range(ctx.rows(3)):  # the weekly biller sends the same fixed charge every week
        entries.append(fresh(weekly, start + dt.timedelta(days=7 * week), 412.50))
    # One invoice between each two possible recovery minimums, later paid again under a re-keyed number, so
    # the minimum always changes what is recovered.
    planted = []
    min_recoveries = ctx.choices("min_recovery")
    for low, high in zip(min_recoveries, min_recoveries[1:]):
        vendor = rng.choice(others)
        planted.append(fresh(vendor, start + dt.timedelta(days=rng.randint(0, 140)), round(rng.uniform(low + 5, high - 5), 2)))
    entries += planted
    # Same-amount pairs dated between each two possible windows apart, so the window always changes what is a duplicate.
    spaced = []
    windows = ctx.choices("window_days")
    for low, high in zip(windows, windows[1:]):
        vendor = rng.choice(others)
        spaced.append((fresh(vendor, start + dt.timedelta(days=rng.randint(0, 140)), round(rng.uniform(60, 9000), 2)),
                       rng.randint(low + 1, high)))
    entries += [first for first, _ in spaced]
    while len(entries) < ctx.size("invoices"):
        vendor = rng.choice(others)
        entries.append(fresh(vendor, start + dt.timedelta(days=rng.randint(0, 180)), round(rng.uniform(60, 9000), 2)))
    entries.sort(key=lambda e: e[2])

    # Duplicates: re-keyed numbers (any gap) and same amount within the window under a new number.
    originals = rng.sample(range(len(entries)), max(6, len(entries) // 12))
    dupes = []
    for k, idx in enumerate(originals):
        vendor, number, day, amount, _, desc = entries[idx]
        if vendor == weekly:
            continue
        status = "paid" if k % 2 else "posted"
        if k % 3 == 0:
            dupes.append((idx, (vendor, variant(number, rng), day + dt.timedelta(days=rng.randint(0, 40)), amount, status, desc)))
        else:
            again = fresh(vendor, day + dt.timedelta(days=rng.randint(1, window)), amount)
            dupes.append((idx, again[:4] + (status, desc)))
    for vendor, number, day, amount, _, desc in planted:
        dupes.append((None, (vendor, variant(number, rng), day + dt.timedelta(days=rng.randint(0, 40)), amount, "paid", desc)))
    for (vendor, _, day, amount, _, desc), gap in spaced:
        dupes.append((None, fresh(vendor, day + dt.timedelta(days=gap), amount)[:4] + ("posted", desc)))
    # One weekly-biller number re-keyed: the exception covers amounts, not numbers.
    first_weekly = next(i for i, e in enumerate(entries) if e[0] == weekly)
    w = entries[first_weekly]
    dupes.append((first_weekly, (weekly, variant(w[1], rng), w[2] + dt.timedelta(days=3), w[3], "posted", w[5])))
    # Ids follow entry order: originals always come before their duplicates.
    rows = [e for e in entries] + [d for _, d in sorted(dupes, key=lambda d: d[1][2])]
    db.executemany("INSERT INTO invoices (vendor_id, invoice_no, invoice_date, amount, status, description) VALUES (?,?,?,?,?,?)",
                   [(v, n, d.isoformat(), a, s, desc) for v, n, d, a, s, desc in rows])

    ctx.write("ap_procedures/duplicate_check.md",
        "# Duplicate invoice check\n\n"
        "Compare invoices from the same supplier only.\n\n"
        "1. **Same number.** Two invoices whose numbers match once you ignore letter case, spaces, hyphens and\n"
        "   slashes, and leading zeros in the numeric part, are the same invoice (rule `number`).\n"
        "2. **Same amount, close dates.** Two invoices with exactly the same amount dated close together are\n"
        "   treated as the same invoice entered under a new number (rule `amount_date`). How many days apart still\n"
        "   counts as close is set with each audit request.\n\n"
        "Of each pair, the invoice entered first (the lower invoice id) is the original and the other is the\n"
        "duplicate. A duplicate not yet paid is voided; a paid duplicate goes on a recovery case for its supplier.\n"
    )
    ctx.write("ap_inbox/weekly_supplier.eml",
        f"From: controller@company.example\nSubject: {names[weekly - 1]}\n\n"
        f"Reminder: {names[weekly - 1]} bills us the same fixed charge every single week, so their invoices share\n"
        "amounts and sit a few days apart by design. Do not treat their invoices as duplicates because of the\n"
        "amount and dates; only a matching invoice number counts for them.\n"
    )
    for i in range(ctx.size("team_mail")):
        subject = ["coffee rota", "new starter", "system downtime", "training day", "month-end", "desk moves",
                   "expense policy", "IT survey"][i % 8]
        ctx.write(f"ap_inbox/team_{i:03d}.eml",
            f"Subject: {subject}\n\nHi team - {subject}: details to follow. {rng.choice(names)} called about a statement.\n"
            "Nothing here changes the duplicate check.\n")
    ctx.facts(weekly=weekly)
