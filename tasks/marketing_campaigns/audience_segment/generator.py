"""State for marketing_campaigns/audience_segment: a contact base, a suppression list, the brief and an inbox of opt-outs."""
from datetime import date, timedelta

SEND_DAY = date(2026, 12, 1)
COUNTRIES = ["DE", "FR", "NL", "ES", "IT", "PL", "SE", "IE"]
COUNTRY_NAMES = {"DE": "Germany", "FR": "France", "NL": "the Netherlands", "ES": "Spain", "IT": "Italy",
                 "PL": "Poland", "SE": "Sweden", "IE": "Ireland"}
GIVEN = ["anna", "ben", "carla", "david", "elena", "felix", "greta", "hugo", "ines", "jan", "katja", "luca",
         "marta", "nils", "olga", "paul", "rosa", "sven", "tara", "yusuf"]
FAMILY = ["schmidt", "martin", "devries", "garcia", "rossi", "nowak", "lund", "byrne", "weber", "moreau",
          "jansen", "lopez", "bianchi", "kowalski", "berg", "walsh"]


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    domains = ctx.choices("excluded_domain")  # every mail domain; the request leaves a bouncing one out
    db.executescript(
        """
        CREATE TABLE contacts (id INTEGER PRIMARY KEY, email TEXT UNIQUE, first_name TEXT, country TEXT,
            lifecycle_stage TEXT, signup_date TEXT, last_purchase_date TEXT, total_spend REAL);
        CREATE TABLE suppressions (id INTEGER PRIMARY KEY, email TEXT, reason TEXT, added_on TEXT);
        CREATE TABLE segments (id INTEGER PRIMARY KEY, name TEXT, created_by TEXT);
        CREATE TABLE segment_members (segment_id INTEGER, contact_id INTEGER, PRIMARY KEY (segment_id, contact_id));
        """
    )
    countries = sorted(rng.sample(COUNTRIES, 3))
    window = rng.choice([60, 90, 120])
    min_spend = ctx.params["min_spend"]
    cutoff = SEND_DAY - timedelta(days=window)
    segment_name = f"Winter Reactivation {rng.choice(['Wave A', 'Wave B', 'Q4', 'Core'])}"

    contacts = []
    for cid in range(1, ctx.size("contacts") + 1):
        given, family = rng.choice(GIVEN), rng.choice(FAMILY)
        email = f"{given}.{family}{cid}@{rng.choice(domains)}"
        country = rng.choice(countries) if rng.random() < 0.6 else rng.choice(COUNTRIES)
        signup = date(2023, 1, 1) + timedelta(days=rng.randint(0, 1200))
        if rng.random() < 0.12:
            contacts.append([cid, email, given.capitalize(), country, "lead", signup.isoformat(), None, 0.0])
            continue
        last = SEND_DAY - timedelta(days=rng.randint(1, window * 2))
        spend = round(rng.uniform(10, min_spend * 3), 2)
        contacts.append([cid, email, given.capitalize(), country, "customer", signup.isoformat(), last.isoformat(), spend])

    # Guaranteed edge cases: purchases on the cutoff day and the day before it, spend exactly at the floor.
    def force(idx, last_day, spend):
        contacts[idx][3], contacts[idx][4] = countries[idx % 3], "customer"
        contacts[idx][6], contacts[idx][7] = last_day.isoformat(), spend

    force(0, cutoff, min_spend + 40.0)
    force(1, cutoff - timedelta(days=1), min_spend + 40.0)
    force(2, SEND_DAY - timedelta(days=5), float(min_spend))
    force(3, SEND_DAY - timedelta(days=5), min_spend - 0.01)
    pinned = set()
    for k in range(2 * len(domains)):  # two targeted contacts at every mail domain
        force(4 + k, SEND_DAY - timedelta(days=7 + k), min_spend + 25.0)
        contacts[4 + k][1] = contacts[4 + k][1].split("@")[0] + "@" + domains[k % len(domains)]
        pinned.add(contacts[4 + k][1])
    rng.shuffle(contacts)
    for new_id, c in enumerate(contacts, start=1):
        c[0] = new_id
    db.executemany("INSERT INTO contacts VALUES (?,?,?,?,?,?,?,?)", [tuple(c) for c in contacts])

    def qualifies(c):
        return (c[3] in countries and c[4] == "customer" and c[6] >= cutoff.isoformat() and c[7] >= min_spend)

    matching = [c for c in contacts if qualifies(c)]
    others = [c for c in contacts if not qualifies(c)]
    n_supp = ctx.size("suppressions")
    suppressed = rng.sample([c for c in matching if c[1] not in pinned], n_supp // 2) + rng.sample(others, n_supp - n_supp // 2)
    db.executemany("INSERT INTO suppressions (email, reason, added_on) VALUES (?,?,?)",
                   [(c[1], rng.choice(["hard bounce", "spam complaint", "invalid domain"]),
                     (SEND_DAY - timedelta(days=rng.randint(2, 300))).isoformat()) for c in suppressed])
    db.execute("INSERT INTO segments (name, created_by) VALUES ('Autumn newsletter', 'lena')")

    spoken = [f"{COUNTRY_NAMES[c]} ({c})" for c in countries]
    ctx.write("docs/winter_reactivation_brief.md",
        "# Winter reactivation mailer - campaign brief\n\n"
        f"We want to win back paying customers in {spoken[0]}, {spoken[1]} and {spoken[2]} before the holidays. "
        f"The send date is 1 December 2026. Mail everyone there who is a customer (leads who never bought are "
        f"for the nurture track, not this one), whose last purchase falls within the {window} days before the send "
        f"date, and who has spent at least the lifetime amount set in the request. Counting back from the "
        f"send date, a purchase made exactly {window} days earlier still qualifies; one made the day before that "
        "does not.\n\n"
        f"Please name the segment \"{segment_name}\" in the platform so the automation picks it up.\n"
    )
    fresh_ids = rng.sample(range(len(contacts)), ctx.size("optout_mails"))
    optouts = [contacts[i] for i in fresh_ids if contacts[i][1] not in pinned]
    optouts += [c for c in others if c not in optouts][: len(fresh_ids) - len(optouts)]
    # Half of the opt-outs must fall on people the brief would otherwise target.
    spare = [c for c in matching if c not in suppressed and c not in optouts and c[1] not in pinned]
    for k in range(0, len(optouts), 2):
        optouts[k] = spare.pop(rng.randrange(len(spare)))
    returning = optouts[0]
    for k, person in enumerate(optouts):
        shown = person[1].replace(person[1].split("@")[0], person[1].split("@")[0].title()) if k % 2 else person[1].upper()
        day = rng.randint(1, 25)
        ctx.write(f"inbox/2026-11-{day:02d}_mail_{k:03d}.eml",
            f"From: {person[2]} <{shown}>\nTo: hello@ourbrand.example\nDate: 2026-11-{day:02d}\n"
            f"Subject: {rng.choice(['Unsubscribe', 'Please stop the emails', 'Remove me from your list'])}\n\n"
            f"Hi, I get far too many newsletters. Please take me off your marketing e-mails.\n\n{person[2]}\n"
        )
    ctx.write("inbox/2026-11-28_changed_my_mind.eml",
        f"From: {returning[2]} <{returning[1]}>\nTo: hello@ourbrand.example\nDate: 2026-11-28\n"
        "Subject: Re: Unsubscribe\n\nHello again, I asked to be unsubscribed a few weeks ago but I actually miss "
        "your offers. Please put me back on the marketing list. Thanks!\n"
    )
    topics = ["subject line ideas", "banner sizes", "holiday calendar", "tracking pixels", "brand colours"]
    for i in range(ctx.size("agency_notes")):
        person = contacts[rng.randrange(len(contacts))]
        ctx.write(f"docs/agency_note_{i:02d}.md",
            f"# Agency note: {topics[i % len(topics)]}\n\nNotes from the call with the agency. We liked the draft "
            f"that {person[2]} from the panel reviewed. Consider {rng.choice(COUNTRIES)} for a later test wave; it "
            f"is not part of the current send. Budget reference {rng.randint(100, 999)}.\n"
        )
