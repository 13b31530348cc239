"""State for library_circulation/interlibrary_loans: our catalogue copies, partner libraries, their
pending requests, and the lending policy plus one agreement e-mail per partner."""

PARTNERS = [("NHL", "Northam Public Library", "Joan"), ("SCU", "St Cuthbert University Library", "Marek"),
            ("RVL", "Riverton Village Library", "Aisha"), ("KCL", "Kingsmead College Library", "Tom"),
            ("BML", "Bellmoor Medical Library", "Ruth"), ("OHA", "Oakhaven Archives Reading Room", "Deepak"),
            ("WFP", "Westfield Prison Library Service", "Carla")]
FORMATS = ["book", "book", "book", "audiobook", "dvd"]
WORDS = ["River", "Silent", "Garden", "Winter", "Atlas", "Harvest", "Lantern", "Orbit", "Copper", "Meadow",
         "Tide", "Ember", "Hollow", "Signal", "Cedar", "Falcon"]
FORMAT_PHRASES = {
    ("book",): "printed books only - nothing else, please",
    ("book", "audiobook"): "printed books and audiobooks, but no DVDs",
    ("book", "audiobook", "dvd"): "anything in your general collection: books, audiobooks and DVDs alike",
}


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE partners (id INTEGER PRIMARY KEY, code TEXT, name TEXT, items_on_loan INTEGER);
        CREATE TABLE titles (isbn TEXT PRIMARY KEY, title TEXT, format TEXT);
        CREATE TABLE copies (id INTEGER PRIMARY KEY, isbn TEXT, barcode TEXT, branch TEXT, collection TEXT, status TEXT);
        CREATE TABLE requests (id INTEGER PRIMARY KEY, partner_id INTEGER, isbn TEXT, requested_on TEXT, status TEXT,
            patron_ref TEXT);
        CREATE TABLE holds (id INTEGER PRIMARY KEY, copy_id INTEGER, request_id INTEGER);
        CREATE TABLE shipments (id INTEGER PRIMARY KEY, request_id INTEGER, hold_id INTEGER, due_date TEXT);
        CREATE TABLE declines (id INTEGER PRIMARY KEY, request_id INTEGER, reason TEXT);
        """
    )
    agreements = {}
    for code, _, _ in PARTNERS:
        agreements[code] = {"days": rng.choice([14, 21, 28, 42]), "formats": rng.choice(list(FORMAT_PHRASES)),
                            "limit": rng.randint(6, 14)}
    suspended = rng.choice([p[0] for p in PARTNERS[1:]])
    agreements[PARTNERS[0][0]]["formats"] = ("book",)          # a format refusal is always possible
    partners = [(i + 1, code, name, rng.randint(0, 4)) for i, (code, name, _) in enumerate(PARTNERS)]
    t_idx = 1 if PARTNERS[1][0] != suspended else 2
    tight = partners[t_idx]
    agreements[tight[1]]["formats"] = ("book", "audiobook")
    partners[t_idx] = (tight[0], tight[1], tight[2], agreements[tight[1]]["limit"] - 1)  # one slot left
    db.executemany("INSERT INTO partners VALUES (?,?,?,?)", partners)

    n_titles = max(20, ctx.size("copies") // 4)
    titles = []
    for t in range(n_titles):
        fmt = rng.choice(FORMATS)
        titles.append((f"978{rng.randint(10**9, 10**10 - 1)}", f"The {rng.choice(WORDS)} {rng.choice(WORDS)}", fmt))
    titles[0] = (titles[0][0], titles[0][1], "dvd")
    for k in (1, 4, 5, 6):
        titles[k] = (titles[k][0], titles[k][1], "book")
    db.executemany("INSERT INTO titles VALUES (?,?,?)", titles)
    copies = []
    for cid in range(1, ctx.size("copies") + 1):
        isbn = titles[cid % n_titles][0] if cid <= n_titles * 2 else rng.choice(titles)[0]
        collection = rng.choices(["general", "reference", "special"], [0.8, 0.12, 0.08])[0]
        status = rng.choices(["available", "on loan", "missing"], [0.75, 0.2, 0.05])[0]
        copies.append([cid, isbn, f"3{rng.randint(10**8, 10**9 - 1)}", rng.choice(["Central", "East", "Harbour"]),
                       collection, status])
    # Title 1 has exactly one lendable copy: the keep-one-on-the-shelf rule must refuse it.
    single = titles[1][0]
    for c in copies:
        if c[1] == single:
            c[4], c[5] = "reference", "available"
    copies[0][1:] = [single, copies[0][2], "Central", "general", "available"]
    for k in (4, 5, 6):  # the tight partner's titles have two lendable copies each
        for c in [c for c in copies if c[1] == titles[k][0]][:2]:
            c[4], c[5] = "general", "available"
    db.executemany("INSERT INTO copies VALUES (?,?,?,?,?,?)", [tuple(c) for c in copies])

    requests = []
    for rid in range(1, ctx.size("requests") + 1):
        partner = rng.choice(partners)
        day = f"2026-11-{rng.randint(1, 29):02d}"
        status = "pending" if rng.random() < 0.85 else rng.choice(["filled", "declined"])
        requests.append([rid, partner[0], rng.choice(titles)[0], day, status, f"PR-{rng.randint(1000, 9999)}"])
    suspended_id = next(p[0] for p in partners if p[1] == suspended)
    requests[0][1:5] = [suspended_id, titles[2][0], "2026-11-02", "pending"]
    requests[1][1:5] = [1, titles[0][0], "2026-11-03", "pending"]           # DVD to a books-only partner
    requests[2][1:5] = [rng.choice([p[0] for p in partners if p[1] != suspended]), single, "2026-11-04", "pending"]
    for k in (3, 4, 5):                                                      # tight partner runs out of slots
        requests[k][1:5] = [tight[0], titles[k + 1][0], f"2026-11-{5 + k:02d}", "pending"]
    for k, day in zip((6, 7, 8, 9), (22, 26, 28, 30)):                      # just after each possible cut-off
        requests[k][3:5] = [f"2026-11-{day:02d}", "pending"]
    db.executemany("INSERT INTO requests VALUES (?,?,?,?,?,?)", [tuple(r) for r in requests])

    ctx.write("policy/ill_lending_policy.md",
        "# Interlibrary lending: how we decide\n\n"
        "Work the queue in order of the date the request was made; same-day requests in the order they arrived.\n"
        "We only lend copies from the general collection that are sitting on the shelf (status available).\n"
        "Reference and special collections never leave the building. We also never send away our last copy:\n"
        "a title must keep at least one lendable copy on our own shelves after we lend.\n\n"
        "When we cannot lend, the decline reason is, checked in this order: `suspended` if the partner's\n"
        "borrowing is suspended; `format` if their agreement does not cover that kind of item; `no_copy` if we\n"
        "have no copy we may lend; `limit` if lending would take the partner over the number of our items their\n"
        "agreement lets them hold at once (count what they already have out plus what we ship today).\n\n"
        "The due date on a shipment is the courier date plus the loan period in the partner's agreement.\n"
    )
    styles = [
        "Under our reciprocal arrangement we can keep your items for {days} days from dispatch. We can take {fmt}.\n"
        "Our readers may hold at most {limit} of your items at any one time.",
        "Just confirming the terms we signed: a {days}-day loan period, and we borrow {fmt}. We agreed never to\n"
        "have more than {limit} of your items with us at once.",
    ]
    for i, (code, name, contact) in enumerate(PARTNERS):
        a = agreements[code]
        ctx.write(f"mail/agreement_{code}.eml",
            f"From: {contact.lower()}@{code.lower()}.example\nSubject: ILL lending agreement - {name} ({code})\n\n"
            f"Dear colleagues,\n\n" + styles[i % 2].format(days=a["days"], fmt=FORMAT_PHRASES[a["formats"]], limit=a["limit"])
            + f"\n\nBest wishes,\n{contact}, {name}\n")
    suspended_name = next(p[2] for p in partners if p[1] == suspended)
    ctx.write("mail/2026-11-25_suspension.eml",
        "From: ill.manager@ourlibrary.example\nSubject: Lending suspended\n\n"
        f"{suspended_name} still has eleven of our items more than three months overdue. Their borrowing from us\n"
        "is suspended with immediate effect; decline anything they ask for until I say otherwise.\n")
    chatter = ["courier strike rumours", "new barcode labels", "staff training day", "ILL statistics",
               "conference travel", "shelf-reading rota", "van insurance renewal"]
    for i in range(ctx.size("staff_mail")):
        ctx.write(f"mail/2026-11-{(i % 28) + 1:02d}_staff_{i}.eml",
            f"From: staff@ourlibrary.example\nSubject: {chatter[i % len(chatter)]}\n\n"
            f"Note about {chatter[i % len(chatter)]}; reference {rng.randint(100, 999)}. No change to lending rules.\n")
