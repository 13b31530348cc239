"""State for real_estate/lease_renewal_offers: a rental portfolio, its leases and rent payments, and the office's files.
The request (task.toml [params]) caps any single rent increase (always below the 200-dollar rise of the exempt
building's pinned lease, so every cap changes that offer) and sets the length of the new terms (the memo leaves it to
the request)."""
import datetime as dt

DISTRICTS = ["Harbor", "Midtown", "Old Quarter", "Eastside", "Northpark"]
STREETS = ["Alder", "Birch", "Chestnut", "Dogwood", "Elm", "Fir", "Hawthorn", "Juniper", "Laurel", "Magnolia", "Poplar", "Willow"]
FIRST = ["Aisha", "Brett", "Celine", "Dario", "Emeka", "Freya", "Gideon", "Hana", "Igor", "Jada", "Kofi", "Leila",
         "Mateo", "Nadia", "Otto", "Priya", "Rafael", "Sina", "Theo", "Uma", "Viktor", "Wren", "Ximena", "Zane"]
LAST = ["Adeyemi", "Baker", "Chen", "Diaz", "Evans", "Farouk", "Gruber", "Hughes", "Iqbal", "Jovanovic", "Kim",
        "Larsen", "Mendes", "Nowak", "Ortega", "Park", "Roth", "Sousa", "Tran", "Vogel"]
MEMO_DATE = dt.date(2026, 11, 30)
WORDS = {2: "two", 3: "three"}


def month_start(year, month):
    return dt.date(year + (month - 1) // 12, (month - 1) % 12 + 1, 1)


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE properties (id INTEGER PRIMARY KEY, name TEXT, address TEXT, district TEXT, year_built INTEGER);
        CREATE TABLE units (id INTEGER PRIMARY KEY, property_id INTEGER, unit_no TEXT, bedrooms INTEGER, market_rent INTEGER);
        CREATE TABLE tenants (id INTEGER PRIMARY KEY, name TEXT, email TEXT);
        CREATE TABLE leases (id INTEGER PRIMARY KEY, unit_id INTEGER, tenant_id INTEGER, start_date TEXT, end_date TEXT,
            monthly_rent INTEGER, status TEXT);
        CREATE TABLE payments (id INTEGER PRIMARY KEY, lease_id INTEGER, due_date TEXT, amount INTEGER, paid_on TEXT);
        CREATE TABLE renewal_offers (id INTEGER PRIMARY KEY, lease_id INTEGER, new_rent INTEGER, term_months INTEGER, created TEXT);
        CREATE TABLE non_renewals (id INTEGER PRIMARY KEY, lease_id INTEGER, reason TEXT, created TEXT);
        """
    )
    caps = {d: rng.choice([2.0, 2.5, 3.0, 3.5, 4.0, 5.0]) for d in DISTRICTS}
    exempt_year = rng.choice([2008, 2010, 2012])
    grace = rng.choice([3, 5, 7])
    threshold = rng.choice([2, 3])
    lo, hi = rng.choice([45, 60]), rng.choice([90, 120])

    props = []
    for pid in range(1, ctx.size("properties") + 1):
        street = STREETS[(pid - 1) % len(STREETS)]
        props.append({"id": pid, "name": f"{street} Court {pid}" if pid > len(STREETS) else f"{street} Court",
                      "address": f"{rng.randint(2, 480)} {street} Street", "district": DISTRICTS[(pid - 1) % len(DISTRICTS)],
                      "year_built": exempt_year + 3 if pid == 2 else rng.randint(1960, 2022)})
    sold = props[rng.choice([2, 3])]  # never the property of the pinned threshold units 5-7
    db.executemany("INSERT INTO properties VALUES (:id, :name, :address, :district, :year_built)", props)

    units, leases, tenants, payments = [], [], [], []
    pool = [f"{f} {m}. {l}" for f in FIRST for m in "ABCDEFGHJKLMNPRSTW" for l in LAST]
    names = rng.sample(pool, ctx.size("units") + ctx.size("past_leases"))
    for uid in range(1, ctx.size("units") + 1):
        prop = props[(uid - 1) % len(props)]
        beds = rng.randint(0, 3)
        market = 900 + beds * 350 + rng.randint(-80, 260)
        units.append((uid, prop["id"], f"{rng.randint(1, 9)}{rng.randint(0, 2)}{uid % 10}", beds, market))
    for i, name in enumerate(names, 1):
        tenants.append((i, name, name.lower().replace(". ", ".").replace(" ", ".") + "@mail.example"))

    def add_payments(lease_id, rent, first_due, months, late_months):
        for k in range(months):
            due = month_start(first_due.year, first_due.month + k)
            delay = rng.randint(grace + 1, grace + 20) if k in late_months else rng.choice([0, 0, 1, 2, grace])
            payments.append((lease_id, due.isoformat(), rent, (due + dt.timedelta(days=delay)).isoformat()))

    window = (MEMO_DATE + dt.timedelta(days=lo), MEMO_DATE + dt.timedelta(days=hi))
    # Boundary traps first: ends exactly on both edges (in), and one day outside each edge (out).
    pinned_ends = [window[0], window[1], window[0] - dt.timedelta(days=1), window[1] + dt.timedelta(days=1)]
    n_late_plan = {0: threshold, 1: threshold - 1, 2: threshold + 1}
    for uid, unit in enumerate(units, 1):
        lease_id = uid
        if uid - 1 < len(pinned_ends):
            end = pinned_ends[uid - 1]
        elif rng.random() < 0.4:
            end = window[0] + dt.timedelta(days=rng.randint(0, (window[1] - window[0]).days))
        else:
            end = MEMO_DATE + dt.timedelta(days=rng.choice([rng.randint(5, lo - 2), rng.randint(hi + 2, 330)]))
        start = end - dt.timedelta(days=365 * rng.choice([1, 2])) + dt.timedelta(days=1)
        rent = unit[4] - rng.randint(-40, 220)
        leases.append((lease_id, uid, uid, start.isoformat(), end.isoformat(), rent, "active"))
        # Late payments in the last twelve months (due Dec 2025 .. Nov 2026); some leases get exactly the threshold.
        if uid in (5, 6, 7):
            lates = n_late_plan[uid - 5]
        elif uid == 2:  # the exempt building's pinned tenant must qualify for an offer
            lates = 0
        else:
            lates = rng.choice([0, 0, 0, 1, 1, 2, threshold, 4])
        late_months = set(rng.sample(range(12), lates))
        add_payments(lease_id, rent, dt.date(2025, 12, 1), 12, late_months)
        # Older history (before the window): often late, must not count.
        add_payments(lease_id, rent, dt.date(2025, 9, 1), 3, set(rng.sample(range(3), rng.randint(0, 3))))
    for k in range(ctx.size("past_leases")):
        uid = rng.randint(1, len(units))
        end = dt.date(2024, rng.randint(1, 12), 28)
        leases.append((len(leases) + 1, uid, len(units) + k + 1, (end - dt.timedelta(days=364)).isoformat(),
                       end.isoformat(), units[uid - 1][4] - rng.randint(50, 300), "ended"))
    # Force units 5-7 (threshold tests) and one unit of the sold property into the window; the exempt
    # building's pinned unit (2) pays well below market so the exemption changes its offer.
    leases[1] = leases[1][:5] + (units[1][4] - 200,) + leases[1][6:]
    for uid in (5, 6, 7, sold["id"] + len(props)):
        row = list(leases[uid - 1])
        row[4] = (window[0] + dt.timedelta(days=rng.randint(1, (window[1] - window[0]).days - 1))).isoformat()
        leases[uid - 1] = tuple(row)
    rng.shuffle(payments)
    db.executemany("INSERT INTO units VALUES (?,?,?,?,?)", units)
    db.executemany("INSERT INTO tenants VALUES (?,?,?)", tenants)
    db.executemany("INSERT INTO leases VALUES (?,?,?,?,?,?,?)", leases)
    db.executemany("INSERT INTO payments (lease_id, due_date, amount, paid_on) VALUES (?,?,?,?)", payments)

    # Both reasons for a non-renewal notice must be in the renewal window.
    prop_of = {u[0]: props[u[1] - 1] for u in units}
    late_count = {}
    for lease_id, due, _, paid in payments:
        if due >= "2025-12-01" and (dt.date.fromisoformat(paid) - dt.date.fromisoformat(due)).days > grace:
            late_count[lease_id] = late_count.get(lease_id, 0) + 1
    notices = set()
    for lease_id, uid, _, _, end, _, status in leases:
        if status != "active" or not (window[0].isoformat() <= end <= window[1].isoformat()):
            continue
        if prop_of[uid]["id"] == sold["id"]:
            notices.add("property_sale")
        elif late_count.get(lease_id, 0) >= threshold:
            notices.add("late_payments")
    if notices != {"late_payments", "property_sale"}:
        raise RuntimeError("generator lost an exception case; check the pinned leases")

    # --- workspace ---------------------------------------------------------------------------------
    long = lambda d: f"{d.day} {d.strftime('%B %Y')}"
    ctx.write("memos/renewal_round.md",
        f"# Renewal round - memo of {long(MEMO_DATE)}\n\n"
        f"Please handle every active lease whose end date falls between {lo} and {hi} days after the date of this memo "
        "(both ends included). Leases ending sooner were handled in the last round; later ones wait for the next.\n\n"
        "Qualifying tenants get an offer for a new term, of the length set for the round. The new monthly rent is the unit's current market "
        "rent, but never more than the rent ordinance allows and never less than what the tenant pays today. Work in "
        "whole dollars and always round down.\n\n"
        f"We do not renew tenants who paid late {WORDS[threshold]} or more times in the twelve months of payments due from "
        f"1 December 2025 onwards. A payment is late when it reached us more than {grace} days after its due date. "
        "Those tenants get a non-renewal notice for late payments instead.\n")
    cap_lines = " ".join(f"In {d}, the increase on renewal may not exceed {caps[d]:g} percent of the current rent." for d in DISTRICTS)
    ctx.write("legal/rent_stabilisation_ordinance.txt",
        "CITY RENT STABILISATION ORDINANCE (consolidated extract)\n\n"
        f"Section 4. Maximum increase on renewal. {cap_lines}\n\n"
        f"Section 5. Exemptions. Buildings completed in {exempt_year} or later are exempt from Section 4; "
        "their rents may be set freely at renewal.\n\nSection 6. Notices must be served in writing.\n")
    ctx.write("mail/sale_agreed.eml",
        f"From: director@portfolio.example\nSubject: {sold['name']} - sale agreed\n\nWe have exchanged contracts on "
        f"{sold['name']} ({sold['address']}). The buyer wants it with vacant possession, so nobody there gets a renewal: "
        "send those tenants a non-renewal notice giving the sale as the reason.\n")
    topics = ["boiler servicing", "bin collection", "lift inspection", "window cleaning", "insurance renewal",
              "smoke alarm checks", "parking permits", "gutter repairs"]
    for i in range(ctx.size("property_mail")):
        p = rng.choice(props)
        topic = topics[i % len(topics)]
        ctx.write(f"mail/ops_{i:03d}_{topic.replace(' ', '_')}.eml",
            f"From: ops@portfolio.example\nSubject: {topic} at {p['name']}\n\nThe {topic} at {p['name']} is booked for "
            f"next month. No effect on tenancies or renewals. Job {rng.randint(1000, 9999)}.\n")
    for i in range(ctx.size("maintenance_logs")):
        p = rng.choice(props)
        ctx.write(f"maintenance/log_{i:03d}.txt",
            f"Maintenance log - {p['name']}\n\nUnit {rng.choice(units)[2]}: {rng.choice(['dripping tap', 'sticking door', 'mould in bathroom', 'faulty intercom'])} "
            f"reported and fixed within {rng.randint(1, 6)} days.\n")
