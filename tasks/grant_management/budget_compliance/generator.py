"""State for grant_management/budget_compliance: awards, expenses, sponsor terms and approval letters."""
from datetime import date, timedelta

SPONSORS = ["Federal Research Council", "Halvorsen Foundation", "Coastal Health Trust"]
PREFIX = {"Federal Research Council": "FRC", "Halvorsen Foundation": "HF", "Coastal Health Trust": "CHT"}
DESCRIPTIONS = {
    "personnel": ["Postdoc salary", "Graduate stipend", "Technician wages"],
    "supplies": ["Pipette tips", "Reagent kit", "Glassware", "Sequencing consumables"],
    "equipment": ["Thermal cycler", "Microscope stage", "Centrifuge", "Data logger", "Field spectrometer"],
    "travel_domestic": ["Conference travel to Denver", "Field site visit", "Collaborator meeting in Boston"],
    "travel_international": ["Conference travel to Kyoto", "Fieldwork in Norway", "Workshop in Lisbon"],
    "hospitality": ["Team dinner", "Reception catering", "Holiday party"],
    "publication": ["Open access fee", "Page charges"],
}
SMALL_CHARGES = [125.0, 175.0, 225.0]  # between the possible de-minimis limits


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE awards (id INTEGER PRIMARY KEY, award_number TEXT UNIQUE, sponsor TEXT, pi TEXT, start_date TEXT,
            end_date TEXT, total_budget REAL);
        CREATE TABLE expenses (id INTEGER PRIMARY KEY, award_id INTEGER, account TEXT, posted_on TEXT, category TEXT,
            description TEXT, po_number TEXT, amount REAL);
        CREATE TABLE transfers (id INTEGER PRIMARY KEY, expense_id INTEGER, from_award_id INTEGER, reason TEXT);
        """
    )
    pis = ctx.choices("excluded_pi")  # every PI: the request may leave out any of them
    # Which sponsor carries which special rule varies by seed.
    equip_limited, travel_limited, no_equipment = rng.sample(SPONSORS, 3)
    equip_threshold = rng.choice([3000, 5000, 7500])

    awards = []
    for aid in range(1, ctx.size("awards") + 1):
        sponsor = SPONSORS[aid % 3]
        start = date(2024, 1, 1) + timedelta(days=rng.randint(0, 600))
        end = start + timedelta(days=rng.choice([365, 730, 1095]))
        pi = pis[aid - 1] if aid <= len(pis) else rng.choice(pis)   # every PI holds at least one award
        awards.append((aid, f"{PREFIX[sponsor]}-{rng.randint(1000, 9999)}-{aid:02d}", sponsor, pi,
                       start.isoformat(), end.isoformat(), float(rng.randint(8, 60) * 10000)))
    db.executemany("INSERT INTO awards VALUES (?,?,?,?,?,?,?)", awards)

    expenses = []

    def charge(award, category, amount, posted=None, description=None):
        start, end = date.fromisoformat(award[4]), date.fromisoformat(award[5])
        posted = posted or start + timedelta(days=rng.randint(0, (end - start).days))
        expenses.append([len(expenses) + 1, award[0], "grant", posted.isoformat(), category,
                         description or rng.choice(DESCRIPTIONS[category]), f"PO {40000 + 7 * len(expenses) + rng.randint(0, 6)}", round(amount, 2)])
        return expenses[-1]

    weights = {"personnel": 5, "supplies": 6, "equipment": 1, "travel_domestic": 2, "travel_international": 0.6,
               "hospitality": 0.4, "publication": 1}
    for _ in range(ctx.size("expenses") - 12 - len(pis)):
        award = rng.choice(awards)
        category = rng.choices(list(weights), weights=list(weights.values()))[0]
        amount = rng.uniform(1000, equip_threshold * 1.5) if category == "equipment" else rng.uniform(40, 4000)
        posted = None
        if rng.random() < 0.025:  # a charge that landed outside the award period
            posted = date.fromisoformat(award[5]) + timedelta(days=rng.randint(1, 60))
        charge(award, category, amount, posted)

    # The special cases sit on awards the request keeps in scope; every PI's awards carry an unallowable charge,
    # and small unallowable charges fall between the possible de-minimis limits.
    eligible = [a for a in awards if a[3] != ctx.params["excluded_pi"]]
    by_sponsor = {s: [a for a in eligible if a[2] == s] for s in SPONSORS}
    for name in pis:
        charge(rng.choice([a for a in awards if a[3] == name]), "hospitality", rng.uniform(300, 900))
    for amount in SMALL_CHARGES:
        charge(rng.choice(eligible), "hospitality", amount)
    eq_award = rng.choice(by_sponsor[equip_limited])
    approved_equipment = charge(eq_award, "equipment", equip_threshold + rng.randint(500, 3000))
    charge(rng.choice(by_sponsor[equip_limited]), "equipment", equip_threshold + rng.randint(200, 2500))   # not approved
    charge(rng.choice(by_sponsor[equip_limited]), "equipment", float(equip_threshold))                     # at the limit
    approved_trip = charge(rng.choice(by_sponsor[travel_limited]), "travel_international", rng.uniform(1500, 3500))
    charge(rng.choice(by_sponsor[travel_limited]), "travel_international", rng.uniform(1500, 3500))          # not approved
    charge(rng.choice(by_sponsor[no_equipment]), "equipment", rng.uniform(800, 2500))
    edge = rng.choice(eligible)
    charge(edge, "supplies", rng.uniform(300, 900), posted=date.fromisoformat(edge[5]))                     # last day: fine
    charge(edge, "supplies", rng.uniform(300, 900), posted=date.fromisoformat(edge[4]) - timedelta(days=1)) # day before start
    charge(rng.choice(eligible), "hospitality", rng.uniform(300, 900))
    # A transfer made in an earlier review: that charge already sits on the department account.
    old = charge(rng.choice(awards), "hospitality", rng.uniform(100, 400))
    old[2] = "department"
    rng.shuffle(expenses)
    id_map = {}
    for new_id, e in enumerate(expenses, start=1):
        id_map[e[0]] = new_id
        e[0] = new_id
    db.executemany("INSERT INTO expenses VALUES (?,?,?,?,?,?,?,?)", [tuple(e) for e in expenses])

    award_no = {a[0]: a[1] for a in awards}
    ctx.write("policies/institutional_cost_policy.md",
        "# Institutional cost policy for sponsored awards\n\n"
        "A charge can only sit on an award if it was incurred within the award's period of performance, from the "
        "start date to the end date, both days included. Anything posted before the start or after the end "
        "belongs to the department.\n\n"
        "Hospitality of any kind (meals, receptions, parties) is never charged to a sponsored award, whoever the "
        "sponsor is.\n\n"
        "Each sponsor's own terms apply on top of these rules. A sponsor's written prior approval, where its terms "
        "allow one, makes the approved charge allowable.\n"
    )
    ctx.write(f"policies/terms_{PREFIX[equip_limited].lower()}.md",
        f"# {equip_limited}: award terms (extract)\n\n"
        f"Equipment may be purchased under the award. Any single equipment purchase costing more than "
        f"{equip_threshold:,} dollars requires the {equip_limited}'s written prior approval; without it the purchase "
        "is unallowable. Travel follows the institution's normal rules.\n"
    )
    ctx.write(f"policies/terms_{PREFIX[travel_limited].lower()}.md",
        f"# {travel_limited}: award terms (extract)\n\n"
        "Travel outside the country (international travel) may only be charged with our written prior approval. "
        "Domestic travel and equipment need no approval.\n"
    )
    ctx.write(f"policies/terms_{PREFIX[no_equipment].lower()}.md",
        f"# {no_equipment}: award terms (extract)\n\n"
        "This sponsor funds people and consumables only. Equipment is not an allowable cost on our awards under "
        "any circumstances, and we do not grant exceptions.\n"
    )
    letters = [("approval_equipment.eml", equip_limited, "equipment purchase", approved_equipment),
               ("approval_travel.eml", travel_limited, "international travel charged", approved_trip)]
    for filename, sponsor, what, expense in letters:
        award = award_no[expense[1]]
        ctx.write(f"mail/{filename}",
            f"From: grants@{PREFIX[sponsor].lower()}.example\nSubject: Prior approval - award {award}\n\n"
            f"Dear colleagues, the {sponsor} approves the {what} on {expense[6]} ({expense[5]}) under award {award}."
            "\n\nKind regards, Program Office\n")
    topics = ["effort certification", "F&A rate agreement", "subaward invoices", "closeout checklist",
              "timesheet reminders", "new sponsor portal"]
    for i in range(ctx.size("office_mail")):
        a = rng.choice(awards)
        ctx.write(f"mail/office_{i:02d}_{topics[i % len(topics)].replace(' ', '_').replace('&', 'and')}.eml",
            f"From: research-office@ouruni.example\nSubject: {topics[i % len(topics)]}\n\n"
            f"Hi all, a reminder about {topics[i % len(topics)]}. {a[3]} asked about award {a[1]}; no cost changes are "
            f"needed there. Deadline is the {rng.randint(2, 28)}th.\n"
        )
