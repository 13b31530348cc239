"""State for event_planning/vendor_booking: vendors, events, quotes and the planning documents."""
from datetime import date, timedelta

TODAY = date(2026, 11, 30)
STEMS = ["Aurora", "Bellweather", "Cobalt", "Driftwood", "Ember", "Fernhill", "Gallant", "Halcyon", "Indigo",
         "Jasper", "Kingfisher", "Larkspur", "Moonstone", "Nightingale", "Oakmere", "Palisade", "Quill", "Saffron",
         "Thistle", "Verity", "Wren", "Zinnia"]
KIND_WORDS = {"catering": "Kitchen", "audio-visual": "Sound & Light", "photography": "Photo", "florist": "Blooms",
              "security": "Guard", "transport": "Coaches"}
CLIENTS = ["Northwind", "Helios Bank", "Tessera Labs", "Marlow Insurance", "Quantum Freight", "Verdant Energy"]


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE events (id INTEGER PRIMARY KEY, name TEXT, event_date TEXT, city TEXT, guests INTEGER);
        CREATE TABLE vendors (id INTEGER PRIMARY KEY, name TEXT, category TEXT, city TEXT, rating REAL,
            insurance_expiry TEXT, contact_email TEXT);
        CREATE TABLE quotes (id INTEGER PRIMARY KEY, event_id INTEGER, vendor_id INTEGER, amount REAL, valid_until TEXT);
        CREATE TABLE bookings (id INTEGER PRIMARY KEY, event_id INTEGER, quote_id INTEGER, vendor_id INTEGER,
            amount REAL, status TEXT);
        CREATE TABLE payments (id INTEGER PRIMARY KEY, booking_id INTEGER, amount REAL, note TEXT);
        """
    )
    client = rng.choice(CLIENTS)
    events = []
    for eid in range(1, ctx.size("events") + 1):
        day = TODAY + timedelta(days=rng.randint(20, 200))
        events.append((eid, f"{rng.choice(CLIENTS)} {rng.choice(['offsite', 'launch', 'awards night', 'retreat'])} {eid}",
                       day.isoformat(), rng.choice(["Lisbon", "Porto", "Madrid"]), rng.randint(40, 600)))
    target_id = rng.randint(1, len(events))
    event_day = TODAY + timedelta(days=rng.randint(45, 90))
    target_name = f"{client} Client Summit 2027"
    events[target_id - 1] = (target_id, target_name, event_day.isoformat(), "Lisbon", rng.randint(150, 400))
    db.executemany("INSERT INTO events VALUES (?,?,?,?,?)", events)

    skipped, categories = ctx.params["skipped_service"], ctx.choices("skipped_service")  # any service may be skipped
    needed = rng.sample([c for c in categories if c != skipped], 4)
    caps = {c: rng.choice([3, 4, 5, 6, 8]) * 500 for c in needed + [skipped]}  # the memo also lists the skipped service
    raised = needed[2]
    new_cap = caps[raised] + rng.choice([500, 1000])

    vendors, quotes = [], []
    used_names = set()

    margin = ctx.params["insurance_margin_days"]

    def vendor(category, rating, insured=True, safe=False):
        while True:
            name = f"{rng.choice(STEMS)} {KIND_WORDS[category]}"
            if name not in used_names:
                break
            name += f" {len(used_names)}"
            if name not in used_names:
                break
        used_names.add(name)
        if insured:  # a safe vendor's insurance outlasts every margin the request can ask for
            expiry = event_day + timedelta(days=rng.randint(200, 400) if safe else rng.randint(30, 400))
        else:
            expiry = event_day - timedelta(days=rng.randint(1, 40))
        vendors.append((len(vendors) + 1, name, category, rng.choice(["Lisbon", "Porto"]), rating, expiry.isoformat(),
                        f"bookings@{name.split()[0].lower()}{len(vendors) + 1}.example"))
        return vendors[-1]

    def quote(event_id, vendor_row, amount, valid=True):
        until = TODAY + timedelta(days=rng.randint(0, 40)) if valid else TODAY - timedelta(days=rng.randint(1, 30))
        quotes.append((len(quotes) + 1, event_id, vendor_row[0], round(amount, 2), until.isoformat()))

    for _ in range(ctx.size("vendors") - 14):  # 14 planted vendors below
        v = vendor(rng.choice(categories), round(rng.uniform(3.0, 4.8), 1), insured=rng.random() < 0.9)
        if v[2] in caps and rng.random() < 0.6:
            quote(target_id, v, rng.uniform(0.5, 1.3) * caps[v[2]], valid=rng.random() < 0.85)
    # One sure eligible fallback per category in the memo (mid rating, within cap).
    for c in needed + [skipped]:
        quote(target_id, vendor(c, 3.9, safe=True), caps[c] * rng.uniform(0.6, 0.95))
    # Traps, each above every ordinary vendor's rating.
    quote(target_id, vendor(needed[0], 5.0, safe=True), caps[needed[0]] + rng.randint(50, 400))  # over the cap
    short = vendor(needed[0], 5.0)                                                              # insured too briefly
    vendors[-1] = short[:5] + ((event_day + timedelta(days=margin - 1 - rng.randint(0, 20))).isoformat(),) + short[6:]
    quote(target_id, vendors[-1], caps[needed[0]] * 0.85)
    enough = vendor(needed[0], 4.9)                                                             # insured just long enough: wins
    vendors[-1] = enough[:5] + ((event_day + timedelta(days=margin + rng.randint(0, 20))).isoformat(),) + enough[6:]
    quote(target_id, vendors[-1], caps[needed[0]] * 0.9)
    blacklisted = vendor(needed[1], 5.0, safe=True)
    quote(target_id, blacklisted, caps[needed[1]] * 0.8)                                      # e-mail says never again
    tie_amount = round(caps[needed[1]] * rng.uniform(0.5, 0.7), 2)
    quote(target_id, vendor(needed[1], 4.9, safe=True), tie_amount + rng.randint(40, 300))    # tie, dearer
    quote(target_id, vendor(needed[1], 4.9, safe=True), tie_amount)                                      # tie, cheaper: wins
    quote(target_id, vendor(raised, 5.0, safe=True), caps[raised] * 0.7, valid=False)                    # quote lapsed
    quote(target_id, vendor(raised, 4.9, safe=True), caps[raised] + (new_cap - caps[raised]) * 0.5)      # fits only the raised cap
    quote(target_id, vendor(needed[3], 5.0, insured=False), caps[needed[3]] * 0.75)           # insurance lapses
    while len(quotes) < ctx.size("quotes"):
        other = rng.choice([e for e in events if e[0] != target_id])
        quote(other[0], rng.choice(vendors), rng.uniform(800, 5000), valid=rng.random() < 0.8)
    rng.shuffle(quotes)
    quotes = [(i + 1,) + q[1:] for i, q in enumerate(quotes)]
    db.executemany("INSERT INTO vendors VALUES (?,?,?,?,?,?,?)", vendors)
    db.executemany("INSERT INTO quotes VALUES (?,?,?,?,?)", quotes)

    threshold = rng.choice([1500, 2000, 2500])
    deposit_pct = rng.choice([25, 30, 40])
    cap_lines = "\n".join(f"- {c}: no more than {caps[c]:,} euros" for c in sorted(caps))
    ctx.write("docs/planning_memo_client_summit.md",
        f"# Planning memo: {target_name}\n\n"
        f"{client} has asked us to run their client summit on {event_day.strftime('%d %B %Y').lstrip('0')} in Lisbon. We need "
        "one supplier for each of the services below, and the client has agreed these caps per service:\n\n"
        f"{cap_lines}\n\n"
        "How to choose: only consider the quotes a vendor sent us for this event. Among the quotes that fit "
        "the cap, take the vendor with the best rating; if two are level on rating, the cheaper quote wins. A "
        "quote whose validity date is already behind us on the day we book (30 November 2026) cannot be "
        "accepted any more, and we never book a vendor whose liability insurance runs out before the event "
        "day.\n"
    )
    ctx.write("docs/payment_policy.md",
        "# Supplier payment policy\n\n"
        f"For bookings worth more than {threshold:,} euros we pay a deposit of {deposit_pct}% of the quote when the "
        f"contract is signed and the rest after the event. Smaller bookings, up to and including {threshold:,} euros, "
        "are paid in full at signing. Round deposits to the cent.\n"
    )
    ctx.write("inbox/2026-11-20_client_budget.eml",
        f"From: events@{client.split()[0].lower()}.example\nSubject: Summit budget\n\n"
        f"Hi both, good news: finance approved a bit more for the {raised} at the summit, so you can now go up to "
        f"{new_cap:,} euros for that service. Everything else stays as agreed.\n\nBest regards\n"
    )
    ctx.write("inbox/2026-11-24_do_not_use.eml",
        "From: ops-lead@ourevents.example\nSubject: Supplier to avoid\n\n"
        f"Reminder for everyone booking this season: we do not work with {blacklisted[1]} any more after they "
        "double-booked our crew at the spring gala. Whatever their rating says, pick someone else.\n"
    )
    chatter = ["venue walkthrough", "badge printing", "hotel block", "speaker gifts", "run of show", "wifi codes",
               "dietary survey", "parking passes"]
    for i in range(ctx.size("planner_chatter")):
        v = rng.choice(vendors)
        ctx.write(f"inbox/2026-11-{rng.randint(1, 28):02d}_{chatter[i % len(chatter)].replace(' ', '_')}_{i}.eml",
            f"From: team@ourevents.example\nSubject: {chatter[i % len(chatter)].title()}\n\n"
            f"Quick update on the {chatter[i % len(chatter)]}. {v[1]} said they might be free in spring; nothing to "
            f"decide now. Budget code {rng.randint(100, 999)}.\n"
        )
