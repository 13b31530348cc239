"""State for customer_support/ticket_merge: a ticket queue with duplicates, the playbook and desk mail."""
from datetime import datetime, timedelta

FIRST = ["amelie", "bruno", "chen", "dara", "emre", "fenna", "gus", "hiro", "ines", "jonas", "kofi", "lea", "mats",
         "nadia", "oren", "pia", "quentin", "rania", "soren", "tuva"]
SUBJECTS = ["Login fails after update", "Invoice total is wrong", "Cannot export report", "App crashes on launch",
            "Password reset email missing", "Sync stuck", "Charged twice this month", "Cannot add team member",
            "Dark mode not saving", "Webhook returns 500", "Calendar invite broken", "Refund not received"]


OPENERS = ["I am writing because", "sorry to bother you again, but", "quick question:", "our team noticed that",
           "since this morning"]
DETAILS = ["It happens on every device we tried.", "We restarted everything already.", "This blocks our month-end work.",
           "A colleague sees the same thing.", "Screenshots are attached."]
CLOSERS = ["Thanks for your help.", "Please advise.", "Kind regards.", "Looking forward to a fix."]


def variant(rng, subject):
    """How customers retype a subject: prefixes, case and punctuation change, the words do not."""
    prefix = rng.choice(["", "", "Re: ", "RE: ", "Fwd: ", "Re: Re: "])
    text = rng.choice([subject, subject.lower(), subject.upper(), subject + "!!", subject + "?", subject.replace(" ", "  ")])
    return prefix + text


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE tickets (id INTEGER PRIMARY KEY, requester_email TEXT, subject TEXT, created_at TEXT, status TEXT,
            tags TEXT, merged_into INTEGER, first_message TEXT);
        CREATE TABLE ticket_notes (id INTEGER PRIMARY KEY, ticket_id INTEGER, body TEXT, internal INTEGER);
        """
    )
    window = rng.choice([24, 48, 72])
    domains = ctx.choices("excluded_domain")  # every requester domain: any of them may have its own account team
    requesters = rng.sample([f"{f}.{i}@{d}" for f in FIRST for i in range(1, 12) for d in domains],
                            ctx.size("requesters"))
    start = datetime(2026, 11, 10, 8, 0)
    cutoff, excluded = datetime.strptime(ctx.params["cutoff_date"], "%d %B %Y"), ctx.params["excluded_domain"]
    in_scope = [r for r in requesters if r.split("@")[1] != excluded]
    tickets = []

    def ticket(email, subject, when, status="open", tags="general"):
        message = (f"Hello, {rng.choice(OPENERS)} {subject.lower().rstrip('!?.')} {rng.choice(DETAILS)} "
                   f"{rng.choice(CLOSERS)}")
        tickets.append([0, email, subject, when.strftime("%Y-%m-%d %H:%M"), status, tags, None, message])

    for _ in range(ctx.size("tickets") - 26):
        when = start + timedelta(minutes=rng.randint(0, 14 * 24 * 60))
        ticket(rng.choice(requesters), variant(rng, rng.choice(SUBJECTS)), when,
               rng.choices(["open", "pending", "solved"], weights=[6, 2, 2])[0], rng.choice(["general", "billing", "bug"]))
    # Guaranteed cases with a subject nobody else uses, so that only the planted tickets group together.
    specials = ["Printer driver conflict", "Export has wrong timezone", "SAML login loop", "Audit log missing entries",
                "Coupon code rejected", "Two-factor code delayed", "Bulk import skips rows", "Dashboard widgets vanished",
                "Shipping label misprinted", "API key rotation failed", "Survey link expired"]
    rng.shuffle(specials)
    base = cutoff + timedelta(days=1, hours=8)
    who = rng.sample(in_scope, 5)
    # 1: three tickets; the third falls outside the window measured from the first, so it starts afresh.
    ticket(who[0], specials[0], base)
    ticket(who[0].upper(), "Re: " + specials[0].lower() + "!", base + timedelta(hours=window - 1))
    ticket(who[0], "Fwd: " + specials[0], base + timedelta(hours=window + 2))
    # 2: a solved ticket in the middle is left alone; the open ones around it merge.
    ticket(who[1], specials[1], base + timedelta(hours=1))
    ticket(who[1], specials[1], base + timedelta(hours=2), status="solved")
    ticket(who[1], "RE: " + specials[1].upper(), base + timedelta(hours=5))
    # 3: a legal-tagged duplicate is never merged.
    ticket(who[2], specials[2], base + timedelta(hours=3), tags="legal")
    ticket(who[2], specials[2] + ".", base + timedelta(hours=4))
    ticket(who[2], "re: " + specials[2], base + timedelta(hours=6))
    # 4: the same person writing from a second address (named in the desk inbox).
    alias = who[3].split("@")[0] + "@" + rng.choice([d for d in domains if d not in (who[3].split("@")[1], excluded)])
    ticket(who[3], specials[3], base + timedelta(hours=2))
    ticket(alias, "Re: " + specials[3], base + timedelta(hours=9))
    # 5: exactly at the window edge still counts as a duplicate.
    ticket(who[4], specials[4], base + timedelta(hours=1))
    ticket(who[4], specials[4].lower(), base + timedelta(hours=1 + window))
    ticket(who[4], "x " + specials[4], base + timedelta(hours=2))  # different words: not a duplicate
    # 6: a duplicate pair in every domain (whichever domain is left alone changes the merges), and pairs just
    # before and just after the archive cut-off (whichever cut-off is asked for changes the merges).
    for k, domain in enumerate(domains):
        email = f"{rng.choice(FIRST)}.{rng.randint(20, 99)}@{domain}"
        ticket(email, specials[5 + k], base + timedelta(hours=10 + k))
        ticket(email, "Re: " + specials[5 + k], base + timedelta(hours=13 + k))
    for k, at in enumerate((cutoff - timedelta(hours=14), cutoff + timedelta(hours=2))):
        email = f"{rng.choice(FIRST)}.{rng.randint(20, 99)}@{rng.choice([d for d in domains if d != excluded])}"
        ticket(email, specials[9 + k], at)
        ticket(email, specials[9 + k].upper(), at + timedelta(hours=2))
    tickets.sort(key=lambda t: (t[3], t[1]))
    for i, t in enumerate(tickets, start=1):
        t[0] = 1000 + i
    db.executemany("INSERT INTO tickets VALUES (?,?,?,?,?,?,?,?)", [tuple(t) for t in tickets])

    ctx.write("playbook/duplicate_tickets.md",
        "# Playbook: duplicate tickets\n\n"
        "Two tickets are duplicates when they come from the same requester and have the same subject once you "
        "ignore reply and forward prefixes (Re:, RE:, Fwd: and so on, however many), letter case, punctuation and "
        "extra spaces. Email addresses are compared without regard to case.\n\n"
        "Work through each requester's tickets on the same subject in the order they were created. The oldest "
        "ticket is the primary. Every later ticket created within "
        f"{window} hours of the primary (exactly {window} hours still counts) is merged into it. The first ticket "
        "that comes later than that becomes a new primary, and the same rule applies from there.\n\n"
        "Solved tickets are history: never merge them and never merge anything into them; simply skip them.\n\n"
        "After merging, leave an internal note on each primary ticket listing the ticket numbers merged into it.\n"
    )
    ctx.write("desk_inbox/legal_hold.eml",
        "From: legal@ourcompany.example\nSubject: Tickets tagged legal\n\n"
        "Please make sure nobody merges tickets tagged legal, in either direction. They are evidence in an ongoing "
        "matter and must stay exactly as they are. Treat them as if they were not in the queue at all.\n"
    )
    ctx.write("desk_inbox/two_addresses.eml",
        "From: team-lead@ourcompany.example\nSubject: Customer with two addresses\n\n"
        f"FYI: {who[3]} and {alias} are the same person (personal and work mail). For duplicate handling, treat "
        "them as one requester.\n"
    )
    topics = ["weekend cover", "macro updates", "CSAT results", "new escalation matrix", "lunch and learn",
              "tagging clean-up", "holiday schedule"]
    for i in range(ctx.size("desk_mail")):
        ctx.write(f"desk_inbox/desk_{i:02d}_{topics[i % len(topics)].replace(' ', '_')}.eml",
            f"From: desk@ourcompany.example\nSubject: {topics[i % len(topics)].capitalize()}\n\n"
            f"Hi team, about the {topics[i % len(topics)]}: {rng.choice(requesters)} left a nice review. Please keep "
            f"tags tidy. No change to merging. Ref {rng.randint(100, 999)}.\n"
        )
