"""State for accounts_payable/discount_payment_run: vendors with payment terms, open invoices, treasury notes."""
import datetime as dt

NAMES = ["Alder", "Birch", "Cobalt", "Dune", "Ember", "Fjord", "Glade", "Heron", "Indigo", "Jasper", "Kelp",
         "Linden", "Mistral", "Nectar", "Onyx", "Quartz", "Rowan", "Sable", "Topaz", "Umber"]
SUFFIXES = ["Supplies", "Industries", "Services", "Trading", "Components", "Partners"]
TERMS = ["2/10 net 30", "1/10 net 30", "2/15 net 45", "net 30", "net 45", "3/10 net 60", "net 60"]


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE vendors (id INTEGER PRIMARY KEY, name TEXT UNIQUE, terms TEXT);
        CREATE TABLE invoices (id INTEGER PRIMARY KEY, invoice_no TEXT UNIQUE, vendor_id INTEGER, invoice_date TEXT,
            amount REAL, status TEXT);
        CREATE TABLE payment_batches (id INTEGER PRIMARY KEY, payment_date TEXT, status TEXT);
        CREATE TABLE payments (id INTEGER PRIMARY KEY, batch_id INTEGER, invoice_id INTEGER, discount REAL, amount_paid REAL);
        """
    )
    run = dt.date(2026, 11, 2) + dt.timedelta(weeks=rng.randint(0, 5))  # always a Monday
    n_vendors = ctx.size("vendors")
    vendors = [(vid, f"{NAMES[vid % len(NAMES)]} {SUFFIXES[(vid // len(NAMES)) % len(SUFFIXES)]}", rng.choice(TERMS))
               for vid in range(1, n_vendors + 1)]
    blocked, changed = rng.sample(range(3, n_vendors + 1), 2)
    vendors[0] = (1, vendors[0][1], "2/10 net 30")
    vendors[1] = (2, vendors[1][1], "net 30")
    vendors[changed - 1] = (changed, vendors[changed - 1][1], "2/10 net 30")
    change_from = run - dt.timedelta(days=rng.randint(25, 40))
    db.executemany("INSERT INTO vendors VALUES (?,?,?)", vendors)

    approval_limits = ctx.choices("approval_limit")
    invoices = []
    for iid in range(1, ctx.size("invoices") + 1):
        vendor = rng.randint(1, n_vendors)
        dated = run - dt.timedelta(days=rng.randint(0, 70))
        if iid == 1:    # discount deadline falls on the Saturday before the run: rolls onto the run day
            vendor, dated = 1, run - dt.timedelta(days=12)
        elif iid == 2:  # net due on the Sunday before the next run: rolls onto the next run day
            vendor, dated = 2, run + dt.timedelta(days=6) - dt.timedelta(days=30)
        elif iid == 3:  # dated after the term change: only the new terms make the discount live now
            vendor, dated = changed, run - dt.timedelta(days=16)
        elif iid == 4:  # would be paid now, but the vendor is blocked
            vendor, dated = blocked, run - dt.timedelta(days=40)
        amount = round(rng.uniform(120, 9500), 2)
        if 5 <= iid < 5 + len(approval_limits) - 1:  # overdue, with an amount between two possible approval limits
            low, high = approval_limits[iid - 5], approval_limits[iid - 4]
            vendor, dated, amount = 2, run - dt.timedelta(days=rng.randint(31, 45)), round(rng.uniform(low + 50, high - 50), 2)
        invoices.append((iid, f"{rng.choice('ABCDEFGH')}{rng.randint(100, 999)}{iid:04d}", vendor, dated.isoformat(),
                         amount, "approved"))
    shuffled = rng.sample(invoices, len(invoices))
    db.executemany("INSERT INTO invoices VALUES (?,?,?,?,?,?)", [(k + 1, *inv[1:]) for k, inv in enumerate(shuffled)])
    # Some already-paid invoices sit in the same table; they are history, not candidates.
    db.executemany("INSERT INTO invoices (invoice_no, vendor_id, invoice_date, amount, status) VALUES (?,?,?,?, 'paid')",
                   [(f"P{rng.randint(100, 999)}{k:04d}", rng.randint(1, n_vendors), (run - dt.timedelta(days=rng.randint(30, 90))).isoformat(),
                     round(rng.uniform(100, 5000), 2)) for k in range(ctx.rows(10))])

    names = {v[0]: v[1] for v in vendors}
    nxt = run + dt.timedelta(days=7)
    docs = {
        "treasury/payment_run_guidelines.md":
            "# Payment run guidelines\n\n"
            f"We pay suppliers once a week. This run pays on {run:%A %d %B %Y}; the next run will pay on {nxt:%A %d %B %Y}.\n\n"
            "Terms are written like `2/10 net 30`: 2% off if paid within 10 days of the invoice date, otherwise the full\n"
            "amount is due 30 days after the invoice date. `net 45` means no discount and 45 days.\n\n"
            "When the last day of a discount window or a due date falls on a Saturday or Sunday, it moves to the\n"
            "following Monday.\n\n"
            "An invoice goes into this run when either (a) its discount is still available on this run's payment date\n"
            "but would have expired by the next run's date - then pay it net of the discount; or (b) it is due before\n"
            "the next run's payment date (including anything already overdue) - then pay it in full unless its\n"
            "discount is still available. Everything else waits for a later run. Discounts are rounded to the cent.\n",
        "ap_mailbox/supplier_terms_update.eml":
            f"From: credit@{names[changed].split()[0].lower()}.example\nSubject: New payment terms\n\n"
            f"Dear customer, for all invoices dated on or after {change_from:%d %B %Y}, {names[changed]} offers\n"
            "3/20 net 45 instead of the previous terms. Earlier invoices keep their original terms.\n",
        "ap_mailbox/payment_stop.eml":
            "From: ap.manager@company.example\nSubject: Stop payments\n\n"
            f"We are in a quality dispute with {names[blocked]}. Do not pay any of their invoices until I say so, not\n"
            "even the ones that fall due.\n",
    }
    chatter = ["expense claims", "vendor onboarding form", "bank holiday cut-off", "duplicate statement", "audit sample",
               "remittance advice format", "supplier portal login", "year-end accruals"]
    for i in range(ctx.size("ap_mail")):
        docs[f"ap_mailbox/misc_{i:03d}.eml"] = (
            f"Subject: {chatter[i % len(chatter)]}\n\nHi, a note on the {chatter[i % len(chatter)]} for "
            f"{names[rng.randint(1, n_vendors)]}.\nNo change to terms or payments. Ref {rng.randint(1000, 9999)}.\n")
    for rel, body in docs.items():
        ctx.write(rel, body)
    ctx.facts(blocked=blocked)
