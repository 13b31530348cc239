"""State for nonprofit_donors/lapsed_reengagement: supporters, giving history and supporter-care mail.
The request (task.toml [params]) leaves one fund's gifts out of lifetime giving: the two tied lapsed donors gave to
every such fund, equal amounts, so the tie survives and every choice moves their totals."""
from datetime import date, timedelta

GIVEN = ["Aisha", "Brendan", "Ciara", "Dominic", "Eleanor", "Fergus", "Gemma", "Harvey", "Ines", "Jasper", "Keira",
         "Lorcan", "Megan", "Noah", "Olivia", "Patrick", "Rosie", "Stefan", "Tamsin", "Umar", "Violet", "William"]
FAMILY = ["Ashworth", "Blake", "Cooper", "Doherty", "Ellison", "Fitzgerald", "Grant", "Holloway", "Ingram", "Jarvis",
          "Kemp", "Lister", "McBride", "Newman", "O'Hara", "Prentice", "Rowe", "Sinclair", "Thorne", "Walsh"]
CHANNELS = {"phone": "Major donor call", "letter": "Personal letter", "email": "Email journey"}
FUNDS = ["general", "appeal", "emergency", "education", "events"]
EXCLUDABLE_FUNDS = {"appeal": 40.0, "emergency": 65.0, "education": 90.0, "events": 120.0}


def months_before(d: date, months: int) -> date:
    y, m = divmod(d.year * 12 + d.month - 1 - months, 12)
    return date(y, m + 1, min(d.day, 28))


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE donors (id INTEGER PRIMARY KEY, donor_no TEXT UNIQUE, name TEXT, email TEXT, email_opt_out INTEGER);
        CREATE TABLE gifts (id INTEGER PRIMARY KEY, donor_id INTEGER, gift_date TEXT, amount REAL, fund TEXT);
        CREATE TABLE campaigns (id INTEGER PRIMARY KEY, name TEXT, channel TEXT);
        CREATE TABLE campaign_members (id INTEGER PRIMARY KEY, campaign_id INTEGER, donor_id INTEGER, rank INTEGER);
        """
    )
    today = date(2026, 11, 20) + timedelta(days=rng.randint(0, 20))
    lapse_months = rng.choice([12, 18])
    window_years = 3
    top_n = rng.choice([12, 15, 18])
    major, mid = rng.choice([(1000, 250), (1500, 300), (800, 200)])

    donors, used = [], set()
    for did in range(1, ctx.size("donors") + 1):
        name = f"{rng.choice(GIVEN)} {rng.choice(FAMILY)}"
        while name in used:  # a middle initial keeps names unique at every scale
            name = f"{rng.choice(GIVEN)} {rng.choice('ABCDEFGHJKLMNPRSTW')}. {rng.choice(FAMILY)}"
        used.add(name)
        donors.append((did, f"S{70000 + did * 11}", name, f"{name.lower().replace(' ', '.').replace(chr(39), '')}@post.example",
                       int(rng.random() < 0.2)))
    db.executemany("INSERT INTO donors VALUES (?,?,?,?,?)", donors)

    boundaries = [months_before(today, lapse_months), months_before(today, 12 * window_years)]
    gifts = []
    for _ in range(ctx.size("gifts")):
        did = rng.randint(1, len(donors))
        when = today - timedelta(days=rng.randint(20, 365 * 4))
        if any(abs((when - b).days) <= 5 for b in boundaries):
            when -= timedelta(days=11)  # keep clear of the boundaries, where month arithmetic conventions differ
        gifts.append([did, when, float(rng.choice([10, 20, 25, 50, 100, 150, 250, 500]))])
    # Guaranteed cases: two lapsed donors tied on lifetime total (the more recent last gift ranks higher), a lapsed
    # major donor who has died, one who asked not to be contacted, and one whose new cheque is not banked yet.
    cutoff = today - timedelta(days=int(lapse_months * 30.5) + 20)
    special = {1: [(cutoff - timedelta(days=60), 1500.0), (cutoff - timedelta(days=400), 1500.0)],
               2: [(cutoff - timedelta(days=10), 2000.0), (cutoff - timedelta(days=500), 1000.0)],
               3: [(cutoff - timedelta(days=5), 5000.0)], 4: [(cutoff - timedelta(days=30), 4000.0)],
               5: [(cutoff - timedelta(days=15), 3800.0)]}
    for k, (fund, amount) in enumerate(EXCLUDABLE_FUNDS.items()):  # older gifts to every excludable fund, equal for 1 and 2
        special[1].append((cutoff - timedelta(days=700 + 30 * k), amount, fund))
        special[2].append((cutoff - timedelta(days=710 + 30 * k), amount, fund))
    gifts = [g for g in gifts if g[0] not in special]
    for did, items in special.items():
        gifts += [[did, *item] for item in items]
    gifts.sort(key=lambda g: (g[1], g[0]))
    db.executemany("INSERT INTO gifts (donor_id, gift_date, amount, fund) VALUES (?,?,?,?)",
                   [(g[0], g[1].isoformat(), g[2], g[3] if len(g) > 3 else "general" if g[0] in special else rng.choice(FUNDS))
                    for g in gifts])

    ctx.write("fundraising/reengagement_brief.md",
        f"# Lapsed supporter re-engagement - brief\n\nWe are running the selection on {today.day} {today:%B %Y}.\n\n"
        f"A supporter counts as lapsed when their most recent gift is more than {lapse_months} months old on that date, but\n"
        f"they did give at some point in the last {window_years} years. Leave out anyone supporter care says we must not contact.\n\n"
        "Rank the lapsed supporters by lifetime giving (the total of all their gifts ever), largest first. Where two\n"
        "have the same lifetime total, the one whose last gift is more recent ranks higher; after that, the lower\n"
        f"supporter number. We only have capacity for the top {top_n}.\n\n"
        f"Campaigns: lifetime giving of {major:,} pounds or more goes to the \"{CHANNELS['phone']}\" campaign (phone channel);\n"
        f"{mid:,} pounds up to that goes to \"{CHANNELS['letter']}\" (letter channel); everyone else to\n"
        f"\"{CHANNELS['email']}\" (email channel), except that supporters who opted out of e-mail get the personal letter.\n"
    )
    names = {d[0]: d for d in donors}
    ctx.write("supporter_care/bereavement.eml",
        f"From: family@post.example\nSubject: {names[3][1]}\n\nI am writing to let you know that my father, {names[3][2]},\n"
        f"passed away in the summer. His supporter number was {names[3][1]}. Please update your records.\n"
    )
    ctx.write("supporter_care/no_contact_request.eml",
        f"From: {names[4][3]}\nSubject: Please stop\n\nPlease do not contact me again in any way. Supporter number {names[4][1]}.\n"
    )
    ctx.write("supporter_care/cheque_received.txt",
        f"Post room log\n\n{(today - timedelta(days=2)).isoformat()}: cheque for 75 pounds received from {names[5][2]} ({names[5][1]}).\n"
        "Not banked yet, so it is not in the database; treat it as a gift made on the day it arrived.\n"
    )
    ctx.write("supporter_care/address_change.eml",
        f"From: {names[6][3]}\nSubject: New address\n\nI have moved house; happy to keep hearing from you. {names[6][1]}.\n"
    )
    log_topics = ["gala dinner", "volunteer newsletter", "shop donations", "marathon places", "legacy leaflet",
                  "board minutes", "impact report", "payroll giving"]
    entries = [{"n": n, "topic": log_topics[n % len(log_topics)], "who": rng.choice(donors)[2]} for n in range(ctx.size("distractors"))]
    for e in entries:
        folder = "fundraising" if e["n"] % 3 == 0 else "supporter_care"
        ctx.write(f"{folder}/log_{e['topic'].replace(' ', '_')}_{e['n']:03d}.txt",
            f"Note on the {e['topic']}: {e['who']} asked a question; answered by phone. No change to their record.\n")
