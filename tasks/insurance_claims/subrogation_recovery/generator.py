"""State for insurance_claims/subrogation_recovery: paid claims with at-fault third parties, memo and e-mails."""
import datetime as dt

INSURERS = ["Granite Mutual", "Bayside Assurance", "Corvid General", "Halcyon Insurance", "Pioneer Casualty",
            "Tidewater Insurance"]
BUSINESSES = ["Rapid Freight Ltd", "Copperline Builders", "Sunny Day Nurseries", "Vantage Scaffolding",
              "Kessler Plumbing", "Orchard Logistics", "Blue Dart Couriers", "Mason & Sons Roofing",
              "Elevate Lifts", "Northgate Haulage", "Prism Electrical", "Riverside Cabs"]
COUNCILS = ["Ashford Borough Council", "Westmere City Council", "Dunmore County Roads"]
PEOPLE = ["R. Akers", "T. Bloom", "C. Devlin", "S. Egan", "M. Ferris", "J. Grant", "L. Hoyle", "P. Iqbal",
          "D. Jessop", "K. Lowe", "N. Marsh", "A. Nolan", "F. Quinn", "H. Rooke", "E. Sato", "G. Tully"]
REVIEW = dt.date(2026, 12, 1)
LOSSES = ["Rear-ended at traffic lights by the other vehicle", "Water escaped from the flat above after a plumbing fault",
          "Scaffolding collapsed onto the insured's conservatory", "Delivery van reversed into the shop front",
          "Contractor cut through a supply cable during groundworks", "Tree from neighbouring land fell in a storm",
          "Customer slipped on a wet floor left by a cleaning firm", "Vehicle side-swiped while parked overnight",
          "Fire spread from an adjoining unit's faulty wiring", "Lift malfunction injured the insured's employee"]


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE third_parties (id INTEGER PRIMARY KEY, name TEXT, kind TEXT, insurer TEXT);
        CREATE TABLE claims (id INTEGER PRIMARY KEY, claim_no TEXT UNIQUE, line TEXT, loss_date TEXT, status TEXT,
            paid_amount REAL, third_party_id INTEGER, third_party_fault_pct INTEGER, description TEXT);
        CREATE TABLE recovery_cases (id INTEGER PRIMARY KEY, claim_id INTEGER, expected_recovery REAL, handler TEXT);
        """
    )
    years = rng.choice([2, 3])
    min_fault = ctx.params["min_fault"]
    coll = {"business": rng.choice([85, 90]), "insured": rng.choice([70, 75]), "uninsured": rng.choice([20, 25, 30])}
    min_recovery = rng.choice([500, 750, 1000])
    capacity = ctx.params["capacity"]
    counsel_over = rng.choice([15000, 20000])
    kfk = rng.choice(INSURERS)
    cutoff = REVIEW + dt.timedelta(days=rng.choice([45, 60, 90]))
    stale_before = cutoff.replace(year=cutoff.year - years)

    parties = []
    for pid in range(1, ctx.size("third_parties") + 1):
        roll = rng.random()
        if pid <= 2 or roll < 0.08:
            parties.append((pid, COUNCILS[pid % len(COUNCILS)], "municipality", ""))
        elif roll < 0.45:
            parties.append((pid, f"{rng.choice(BUSINESSES)} #{pid}", "business", rng.choice(INSURERS)))
        else:
            insurer = rng.choice(INSURERS) if rng.random() < 0.6 else ""
            parties.append((pid, f"{rng.choice(PEOPLE)} ({pid})", "individual", insurer))
    # Keep the knock-for-knock insurer in play at every scale.
    parties[2] = (3, parties[2][1], "business", kfk) if parties[2][2] != "municipality" else (3, "Elevate Lifts #3", "business", kfk)
    db.executemany("INSERT INTO third_parties VALUES (?,?,?,?)", parties)

    def rate(party):
        if party[2] == "business":
            return coll["business"]
        return coll["insured"] if party[3] else coll["uninsured"]

    claims = []
    earliest = stale_before - dt.timedelta(days=400)
    for cid in range(1, ctx.size("claims") + 1):
        loss = earliest + dt.timedelta(days=rng.randint(0, (REVIEW - earliest).days - 30))
        if abs((loss - stale_before).days) < 4:  # keep clear of the limitation edge so ties stay eligible
            loss += dt.timedelta(days=8)
        status = rng.choices(["paid", "open", "denied"], [0.7, 0.2, 0.1])[0]
        has_party = rng.random() < 0.7
        party = rng.choice(parties) if has_party else None
        paid = float(rng.randrange(800, 60000, 100)) if status == "paid" else 0.0
        claims.append([cid, f"CLM-{26000 + cid * 7}", rng.choice(["motor", "property", "liability"]), loss.isoformat(),
                       status, paid, party[0] if party else None, rng.choice([0, 25, 40, 50, 60, 70, 75, 80, 100]) if party else 0,
                       rng.choice(LOSSES)])

    def expected(c):
        party = parties[c[6] - 1]
        return round(c[5] * c[7] / 100 * rate(party) / 100, 2)

    def eligible(c):
        if c[4] != "paid" or not c[6] or c[7] < min_fault or c[3] < stale_before.isoformat():
            return False
        party = parties[c[6] - 1]
        return party[2] != "municipality" and party[3] != kfk and expected(c) >= min_recovery

    # Guarantee the traps at every scale: a stale claim, a municipal one, a knock-for-knock one, each of
    # which would otherwise rank high; and enough eligible claims to fill the capacity.
    good = next(p for p in parties if p[2] == "business" and p[3] != kfk)
    claims[0][3:8] = [(stale_before - dt.timedelta(days=20)).isoformat(), "paid", 55000.0, good[0], 100]
    claims[1][3:8] = [(REVIEW - dt.timedelta(days=200)).isoformat(), "paid", 52000.0, 1, 100]
    claims[2][3:8] = [(REVIEW - dt.timedelta(days=210)).isoformat(), "paid", 50000.0, 3, 100]
    for c in claims[3:3 + capacity + 4]:
        c[3:8] = [(REVIEW - dt.timedelta(days=rng.randint(40, 300))).isoformat(), "paid",
                  float(rng.randrange(5000, 40000, 100)), good[0], rng.choice([80, 90, 100])]
    # Large claims with a fault share between the possible minimums: they top the ranking when the cycle's
    # minimum lets them in.
    for c, (paid, fault) in zip(claims[7 + capacity:10 + capacity], ((150000.0, 55), (140000.0, 65), (130000.0, 75))):
        c[3:8] = [(REVIEW - dt.timedelta(days=rng.randint(40, 300))).isoformat(), "paid", paid, good[0], fault]
    # A tie at the capacity boundary, where breaking it by earlier loss date and by claim number disagree.
    ranked = sorted((c for c in claims if eligible(c)), key=lambda c: (-expected(c), c[3], c[0]))
    last = ranked[capacity - 1]
    partner = ranked[capacity + 1]
    partner[5:8] = last[5:8]
    shift = -1 if partner[0] > last[0] else 1
    partner[3] = (dt.date.fromisoformat(last[3]) + dt.timedelta(days=shift)).isoformat()
    db.executemany("INSERT INTO claims VALUES (?,?,?,?,?,?,?,?,?)", [tuple(c) for c in claims])

    ctx.write("memos/recovery_memo_2026.md",
        "# Subrogation recovery memo - winter 2026 cycle\n\n"
        "We only chase claims we have actually paid, and only where the third party was assessed at or above\n"
        "the minimum share of fault set in the cycle's request. The expected recovery of a claim is what we\n"
        "paid, times the third party's share of fault, times\nthe chance we actually collect, which depends on who we are chasing: "
        f"businesses pay up about {coll['business']}% of\nthe time, private individuals who hold insurance "
        f"about {coll['insured']}%, and uninsured individuals only about {coll['uninsured']}%.\n\n"
        f"A case is not worth opening when its expected recovery is below ${min_recovery:,}.\n\n"
        "How many new cases the team can take on comes with each cycle's request. Rank the candidates by\n"
        "expected recovery, highest first; where two are exactly level, the older loss (earlier date of loss)\n"
        "goes first because its clock is running out sooner.\n\n"
        f"Handlers: cases with an expected recovery above ${counsel_over:,} go to outside counsel; everything else\n"
        "is worked in-house by the recovery desk.\n"
    )
    ctx.write("mail/2026-11-18_limitation.eml",
        "From: legal@ourinsurer.example\nSubject: Limitation periods for this cycle\n\n"
        f"Reminder that recovery actions must be filed within {years} years of the date of loss. Filing takes\n"
        f"us time, so treat any claim whose limitation date falls before {cutoff.strftime('%d %B %Y')} as lost.\n"
        "Separately: never pursue a local authority or council. The notice-of-claim rules make it pointless\n"
        "and the board has asked us not to.\n\nLegal\n"
    )
    ctx.write("mail/2026-11-20_knock_for_knock.eml",
        f"From: reinsurance@ourinsurer.example\nSubject: Knock-for-knock with {kfk}\n\n"
        f"We have signed a knock-for-knock agreement with {kfk}: each side bears its own losses. Do not open\n"
        f"recovery against anyone insured by {kfk}, business or private, even if they were fully at fault.\n"
    )
    for i in range(ctx.size("adjuster_notes")):
        c = rng.choice(claims)
        ctx.write(f"adjuster_notes/{c[1]}_note_{i}.txt",
            f"Adjuster note on {c[1]} ({c[2]}). Spoke to the policyholder; photos and the repair estimate are on\n"
            "file. Liability view is recorded in the claim system. No further action from me.\n")
    for i in range(ctx.size("bulletins")):
        ctx.write(f"mail/2026-10-{i + 1:02d}_bulletin.eml",
            f"From: comms@ourinsurer.example\nSubject: Claims bulletin {i + 1}\n\n"
            f"This week: {rng.choice(['new CRM training', 'office move', 'fraud awareness', 'holiday cover'])}.\n"
            "No change to recovery procedures.\n")
