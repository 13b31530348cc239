"""State for library_circulation/overdue_fines: patrons, items, a loan history, earlier fines and staff notices."""
import math
from datetime import date, timedelta

FORMATS = ["book", "dvd", "audiobook", "magazine"]
TITLES = ["The Quiet Harbour", "Atlas of Small Things", "Winter Orchard", "Signals", "A Field Guide to Moss",
          "Paper Lanterns", "The Long Division", "Salt and Cedar", "Night Trains", "Copper Sky", "The Glass Forest",
          "Tidelines", "Borrowed Light", "Kitchen Science", "Northern Lights", "The Cartographer"]
GIVEN = ["Ada", "Bruno", "Cleo", "Dev", "Esme", "Finn", "Gita", "Hal", "Iris", "Jude", "Kai", "Lena", "Milo", "Noor"]
FAMILY = ["Abbott", "Baker", "Chen", "Diaz", "Ellis", "Fox", "Grant", "Hughes", "Ito", "Jensen", "Khan", "Lowe"]

FORMAT_PLURALS = {"books": "book", "DVDs": "dvd", "audiobooks": "audiobook", "magazines": "magazine"}


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE patrons (id INTEGER PRIMARY KEY, card_number TEXT UNIQUE, name TEXT, card_type TEXT, blocked INTEGER,
            block_reason TEXT);
        CREATE TABLE items (id INTEGER PRIMARY KEY, barcode TEXT, title TEXT, format TEXT);
        CREATE TABLE loans (id INTEGER PRIMARY KEY, item_id INTEGER, patron_id INTEGER, checked_out TEXT, due_date TEXT,
            returned_on TEXT);
        CREATE TABLE fines (id INTEGER PRIMARY KEY, patron_id INTEGER, loan_id INTEGER, amount REAL, status TEXT,
            entered_on TEXT);
        """
    )
    patrons = []
    for pid in range(1, ctx.size("patrons") + 1):
        kind = rng.choices(["adult", "child", "senior", "staff"], weights=[6, 2, 2, 1])[0]
        patrons.append((pid, f"2100{pid:05d}{rng.randint(0, 9)}", f"{rng.choice(GIVEN)} {rng.choice(FAMILY)}", kind, 0, None))
    items = [(iid, f"31{iid:07d}", f"{rng.choice(TITLES)}{'' if iid % 3 else ' (2nd ed.)'}", rng.choices(FORMATS, weights=[6, 2, 1, 1])[0])
             for iid in range(1, ctx.size("items") + 1)]
    items[:4] = [item[:3] + (fmt,) for item, fmt in zip(items, FORMATS)]  # every format is in the catalogue
    db.executemany("INSERT INTO patrons VALUES (?,?,?,?,?,?)", patrons)
    db.executemany("INSERT INTO items VALUES (?,?,?,?)", items)

    rates = {"book": rng.choice([0.20, 0.25, 0.30]), "dvd": rng.choice([1.00, 1.50]), "audiobook": 0.50,
             "magazine": rng.choice([0.10, 0.15])}
    cap = float(rng.choice([6, 8, 10]))
    grace = rng.choice([1, 2, 3])
    block_at = float(rng.choice([10, 15, 20]))
    amnesty_start = date(2026, 11, rng.choice([16, 23]))
    amnesty_end = amnesty_start + timedelta(days=6)
    # One closure early enough that a loan spanning it is returned before any amnesty week.
    early_closure = rng.choice([date(2026, 10, 30), date(2026, 11, 3)])
    closures = sorted([early_closure] + rng.sample([date(2026, 10, 26), date(2026, 11, 11), date(2026, 11, 26),
                                                    date(2026, 11, 27)], 2))

    loans = []

    def loan(patron, item, due, returned):
        loans.append([len(loans) + 1, item, patron, (due - timedelta(days=21)).isoformat(), due.isoformat(),
                      returned.isoformat() if returned else None])

    adults = [p[0] for p in patrons if p[3] != "child"]
    children = [p[0] for p in patrons if p[3] == "child"] or [patrons[0][0]]
    if patrons[children[0] - 1][3] != "child":
        patrons[children[0] - 1] = patrons[children[0] - 1][:3] + ("child", 0, None)
        db.execute("UPDATE patrons SET card_type = 'child' WHERE id = ?", (children[0],))
        adults.remove(children[0])
    books = [i[0] for i in items if i[3] == "book"]
    dvds = [i[0] for i in items if i[3] == "dvd"] or books
    for _ in range(ctx.size("loans") - 14):
        due = date(2026, 10, 1) + timedelta(days=rng.randint(0, 58))
        late = rng.choice([0, 0, 0, 1, 2, 3, 4, 6, 9, 15, 30])
        returned = due + timedelta(days=late - rng.randint(0, 5) if late == 0 else late)
        if returned > date(2026, 11, 30) or rng.random() < 0.1:
            returned = None  # still out
        loan(rng.randint(1, len(patrons)), rng.randint(1, len(items)), due, returned)
    # Guaranteed cases, whatever the scale.
    loan(rng.choice(adults), rng.choice(books), amnesty_end - timedelta(days=8), amnesty_end)          # amnesty: waived
    loan(rng.choice(adults), rng.choice(books), amnesty_end - timedelta(days=8), amnesty_end + timedelta(days=1))
    loan(rng.choice(children), rng.choice(dvds), date(2026, 11, 2), date(2026, 11, 8))
    loan(rng.choice(adults), rng.choice(books), early_closure - timedelta(days=2), early_closure + timedelta(days=grace + 3))
    loan(rng.choice(adults), rng.choice(books), date(2026, 11, 1), date(2026, 11, 1) + timedelta(days=grace))  # only grace
    heavy = rng.choice(adults)
    loan(heavy, rng.choice(dvds), date(2026, 10, 5), date(2026, 11, 5))  # hits the cap
    loan(rng.choice(adults), rng.choice(dvds), date(2026, 11, 29), None)

    def charged_loan(item, fmt, back, amount):
        """A loan returned on `back` whose fine (before the cap) is just at or above `amount` dollars."""
        need = math.ceil(round(amount / rates[fmt], 6)) + grace
        due, late = back, 0
        while late < need:
            late += due not in closures
            due -= timedelta(days=1)
        loan(rng.choice(adults), item, due, back)

    # A late item of every format (fine 4.50 or more, so never under the write-off limit) ...
    for k, fmt in enumerate(FORMATS):
        charged_loan(k + 1, fmt, date(2026, 11, 5 + k), 4.5)
    # ... and fines of about 1.50, 2.50 and 3.50 dollars, between the possible write-off limits, in a format still fined.
    fmt = "audiobook" if FORMAT_PLURALS[ctx.params["fine_free_format"]] != "audiobook" else "book"
    for k, amount in enumerate((1.5, 2.5, 3.5)):
        charged_loan(FORMATS.index(fmt) + 1, fmt, date(2026, 11, (10, 12, 13)[k]), amount)
    db.executemany("INSERT INTO loans VALUES (?,?,?,?,?,?)", [tuple(x) for x in loans])

    old = []
    for _ in range(ctx.size("old_fines")):
        old.append((rng.randint(1, len(patrons)), None, round(rng.uniform(0.5, 6), 2), rng.choice(["paid", "unpaid", "waived"]),
                    (date(2026, 9, 1) + timedelta(days=rng.randint(0, 55))).isoformat()))
    # The heavy borrower already owes just under the limit; someone else has paid a large sum (does not count).
    old.append((heavy, None, round(block_at - 1.5, 2), "unpaid", "2026-10-02"))
    old.append((rng.choice([a for a in adults if a != heavy]), None, block_at + 4, "paid", "2026-10-09"))
    db.executemany("INSERT INTO fines (patron_id, loan_id, amount, status, entered_on) VALUES (?,?,?,?,?)", old)

    rate_words = ", ".join(f"{fmt}s {rates[fmt]:.2f} a day" if fmt != "dvd" else f"DVDs {rates[fmt]:.2f} a day" for fmt in FORMATS)
    ctx.write("staff/fines_policy.md",
        "# Overdue fines policy\n\n"
        f"Late items are charged per day, by format: {rate_words} (all in dollars). A day counts as late when it "
        "falls after the due date, up to and including the day the item came back, but days on which the branch "
        f"was closed are never counted. The first {grace} late day{'s' if grace > 1 else ''} of every loan "
        f"{'are' if grace > 1 else 'is'} forgiven as a courtesy, and no single loan is ever charged more than "
        f"{cap:.2f} dollars.\n\n"
        "Children's cards are fine-free: never charge a fine to a child card.\n\n"
        f"Blocking: once a patron's unpaid fines add up to {block_at:.2f} dollars or more, their card is blocked "
        "until they settle. Paid and waived fines do not count towards the limit.\n"
    )
    spoken = [d.strftime("%A %d %B").replace(" 0", " ") for d in closures]
    closure_text = ", ".join(spoken[:-1]) + " and " + spoken[-1]
    ctx.write("staff/2026-11-01_closures_autumn.txt",
        f"Staff notice - autumn closures\n\nThe branch is closed to the public on {closure_text}. Book drops will be "
        "emptied the next morning. Please update the hold shelf signs.\n"
    )
    ctx.write("staff/2026-11-05_food_for_fines.txt",
        "Staff notice - Food for Fines\n\nThis year's Food for Fines week runs from "
        f"{amnesty_start.strftime('%A %d %B').replace(' 0', ' ')} to {amnesty_end.strftime('%A %d %B').replace(' 0', ' ')}, both days "
        "included. Anything returned during that week is forgiven: no overdue fine is charged for it, however late "
        "it was. Donations go to the Eastside food bank.\n"
    )
    notes = ["new self-checkout", "printer credits", "volunteer rota", "story time", "meeting room bookings",
             "lost property", "wifi outage", "book sale"]
    for i in range(ctx.size("staff_notices")):
        topic = notes[i % len(notes)]
        ctx.write(f"staff/2026-{rng.randint(9, 11):02d}-{rng.randint(1, 28):02d}_{topic.replace(' ', '_')}_{i}.txt",
            f"Staff notice - {topic}\n\nA reminder about the {topic}: see the desk binder. This does not change how "
            f"fines are charged. The {rng.choice(['Saturday', 'Sunday', 'Monday'])} shift covers it. Ref {rng.randint(100, 999)}.\n"
        )
