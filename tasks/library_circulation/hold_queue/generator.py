"""State for library_circulation/hold_queue: titles, copies across branches, patrons, waiting holds, bulletins."""
from datetime import datetime, timedelta

WORDS = ["Silent", "Amber", "Hidden", "Northern", "Broken", "Golden", "Last", "Winter", "Paper", "Iron"]
NOUNS = ["Garden", "River", "Letters", "Compass", "Harvest", "Lantern", "Orchard", "Tide", "Crown", "Atlas"]
AUTHORS = ["M. Okoro", "L. Brandt", "S. Varga", "J. Whitlock", "A. Nair", "K. Sato", "R. Delacroix", "P. Quinn"]
GIVEN = ["Ada", "Ben", "Cora", "Dan", "Edie", "Fred", "Gail", "Hugo", "Ivy", "Jack", "Kim", "Lou", "Mae", "Ned"]
FAMILY = ["Archer", "Bishop", "Carver", "Drake", "Ellison", "Frost", "Gibbs", "Hale", "Irwin", "Judd", "Knox"]
TODAY = datetime(2026, 12, 1, 8, 0)


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    branches = ctx.choices("no_van_branch")  # the van may skip any of them
    db.executescript(
        """
        CREATE TABLE titles (id INTEGER PRIMARY KEY, title TEXT, author TEXT);
        CREATE TABLE copies (id INTEGER PRIMARY KEY, title_id INTEGER, barcode TEXT UNIQUE, branch TEXT, status TEXT);
        CREATE TABLE patrons (id INTEGER PRIMARY KEY, card_number TEXT, name TEXT, card_type TEXT, expires_on TEXT,
            blocked INTEGER);
        CREATE TABLE holds (id INTEGER PRIMARY KEY, title_id INTEGER, patron_id INTEGER, placed_at TEXT, pickup_branch TEXT,
            status TEXT, copy_id INTEGER, transfer_id INTEGER);
        CREATE TABLE transfers (id INTEGER PRIMARY KEY, copy_id INTEGER, from_branch TEXT, to_branch TEXT);
        """
    )
    quarantined = rng.choice(branches)
    titles = [(tid, f"The {rng.choice(WORDS)} {rng.choice(NOUNS)}", rng.choice(AUTHORS)) for tid in range(1, ctx.size("titles") + 1)]
    patrons = []
    for pid in range(1, ctx.size("patrons") + 1):
        kind = "staff" if rng.random() < 0.1 else "adult"
        expiry = "2028-06-30"
        if rng.random() < 0.15:
            offset = rng.randint(-60, 700)
            offset += offset in ctx.choices("renewal_days")  # never exactly on the last day of a renewal window
            expiry = (TODAY + timedelta(days=offset)).date().isoformat()
        patrons.append([pid, f"29{pid:06d}", f"{rng.choice(GIVEN)} {rng.choice(FAMILY)}", kind, expiry, int(rng.random() < 0.06)])
    good = [p for p in patrons if p[3] == "adult" and p[5] == 0 and p[4] >= "2026-12-01"]
    frozen, blocked, expired, staff = rng.sample(good, 4)
    blocked[5], expired[4], staff[3] = 1, "2026-11-20", "staff"
    eligible = [p for p in good if p not in (frozen, blocked, expired, staff)]
    # Cards expiring just inside each possible renewal window (and one inside them all): eligible[6..9].
    for p, days in zip(eligible[6:10], (5, 12, 25, 50)):
        p[4] = (TODAY + timedelta(days=days)).date().isoformat()

    copies, holds = [], []
    clock = [TODAY - timedelta(days=40)]

    def copy(title_id, branch, status="available"):
        copies.append((len(copies) + 1, title_id, f"3900{len(copies) + 1:06d}", branch, status))

    def hold(title_id, patron, branch=None):
        clock[0] += timedelta(minutes=rng.randint(7, 400))
        holds.append([len(holds) + 1, title_id, patron[0], clock[0].strftime("%Y-%m-%d %H:%M"),
                      branch or rng.choice(branches), "waiting", None, None])

    not_q = [b for b in branches if b != quarantined]
    scenarios = titles[:5]
    # 0: the only shelf copy sits at the quarantined branch; nobody can be served.
    copy(scenarios[0][0], quarantined)
    hold(scenarios[0][0], eligible[0])
    # 1: blocked, expired and frozen patrons queue first for a single copy; the next eligible patron gets it.
    copy(scenarios[1][0], not_q[0])
    for p in (blocked, expired, frozen, eligible[1]):
        hold(scenarios[1][0], p)
    # 2: a staff member queued first; the patron behind them is served first.
    copy(scenarios[2][0], not_q[1])
    hold(scenarios[2][0], staff)
    hold(scenarios[2][0], eligible[2], branch=not_q[2])
    # 3: a lower barcode elsewhere, but a copy at the pickup branch: the local copy wins.
    copy(scenarios[3][0], not_q[3])
    copy(scenarios[3][0], not_q[0])
    hold(scenarios[3][0], eligible[3], branch=not_q[0])
    # 4: two holds, three copies; a copy on loan does not count.
    copy(scenarios[4][0], not_q[1], "on_loan")
    copy(scenarios[4][0], not_q[2])
    copy(scenarios[4][0], quarantined)
    hold(scenarios[4][0], eligible[4], branch=not_q[1])
    hold(scenarios[4][0], eligible[5], branch=not_q[2])
    # 5..8: a patron whose card expires soon holds the only copy, at their pickup branch.
    for t, p in zip(titles[5:9], eligible[6:10]):
        branch = rng.choice(not_q)
        copy(t[0], branch)
        hold(t[0], p, branch=branch)
    # 9..13: one hold for pickup at each branch that only a transfer from another open branch can fill,
    # so whichever branch the van skips, some hold cannot be filled.
    for t, p, branch in zip(titles[9:14], eligible[10:15], branches):
        copy(t[0], rng.choice([b for b in not_q if b != branch]))
        hold(t[0], p, branch=branch)
    for t in titles[14:]:
        for _ in range(rng.randint(1, 4)):
            copy(t[0], rng.choice(branches), rng.choices(["available", "on_loan", "missing"], weights=[4, 5, 1])[0])
        for _ in range(rng.randint(0, 4)):
            hold(t[0], rng.choice(patrons))
    order = list(range(len(holds)))
    rng.shuffle(order)
    holds = [holds[i] for i in order]
    for new_id, h in enumerate(holds, start=1):
        h[0] = new_id
    db.executemany("INSERT INTO titles VALUES (?,?,?)", titles)
    db.executemany("INSERT INTO copies VALUES (?,?,?,?,?)", copies)
    db.executemany("INSERT INTO patrons VALUES (?,?,?,?,?,?)", [tuple(p) for p in patrons])
    db.executemany("INSERT INTO holds VALUES (?,?,?,?,?,?,?,?)", [tuple(h) for h in holds])

    ctx.write("staff/holds_procedure.md",
        "# Holds procedure\n\n"
        "Holds on a title are served strictly in the order they were placed, one shelf copy per hold. Only copies "
        "that are available on the shelf can fill a hold.\n\n"
        "A hold is skipped (it stays in the queue, and the copy goes to the next person) when the patron's card is "
        "blocked or has expired before today. Holds placed on staff cards go to the back of the queue: they are "
        "considered only after all the non-staff holds on that title, in their own order of placement.\n\n"
        "Choosing the copy: use a copy at the hold's pickup branch if there is one. Otherwise take a copy from "
        "another branch and raise a transfer to the pickup branch first. When several copies qualify, use the one "
        "with the lowest barcode.\n"
    )
    ctx.write("staff/bulletin_quarantine.txt",
        f"Staff bulletin\n\nThe {quarantined} branch had a burst pipe over the weekend. Its whole collection is in "
        "quarantine until the assessors have been: do not send any of its copies out or use them for holds this week, "
        "even if the catalogue shows them as available.\n"
    )
    ctx.write("staff/bulletin_patron_request.txt",
        f"Staff bulletin\n\nPatron {frozen[2]} (card {frozen[1]}) is travelling and asked us to freeze all of their "
        "holds until they are back in January. Keep their place in the queue but do not fill anything for them now.\n"
    )
    topics = ["returns chute repair", "new DVD shelving", "volunteer training", "printer toner", "holiday hours",
              "author visit", "delivery van schedule", "wifi passwords"]
    for i in range(ctx.size("bulletins")):
        ctx.write(f"staff/bulletin_{i:02d}_{topics[i % len(topics)].replace(' ', '_')}.txt",
            f"Staff bulletin\n\nA note on the {topics[i % len(topics)]} at {rng.choice(branches)}. Nothing changes for "
            f"holds or transfers. Questions to the duty manager, extension {rng.randint(200, 299)}.\n"
        )
