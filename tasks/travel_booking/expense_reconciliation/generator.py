"""State for travel_booking/expense_reconciliation: trips, expense claims and lines, FX rates, the card feed and policy."""
import datetime as dt

CITIES = {"Lisbon": "EUR", "London": "GBP", "Zurich": "CHF", "Copenhagen": "DKK", "Stockholm": "SEK", "Vienna": "EUR", "Prague": "CZK"}
BASE_RATE = {"EUR": 1.0, "GBP": 1.16, "CHF": 1.05, "DKK": 0.134, "SEK": 0.087, "CZK": 0.040}
MERCHANTS = {"meal": ["Cafe Central", "Trattoria Roma", "Noodle Bar Express", "Bistro Verde", "Sandwich Co"],
             "taxi": ["City Cabs", "Uber", "Bolt", "Airport Taxi"], "train": ["Rail Ticket Office"],
             "hotel": ["Hotel Meridian", "Park Inn", "Harbour Hotel"], "misc": ["Pharmacy Plus", "Kiosk 24", "Office Supplies"]}
FIRST = ["Alba", "Bram", "Cleo", "Dario", "Ewa", "Finn", "Gaia", "Hugo", "Isla", "Jens", "Kaia", "Loek", "Mila", "Nils", "Orla", "Pim"]
LAST = ["Arnaud", "Bos", "Conti", "De Wit", "Eklund", "Fabre", "Gomes", "Hahn", "Ilić", "Jonsson", "Kovač", "Laurent"]


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE employees (id INTEGER PRIMARY KEY, name TEXT, department TEXT);
        CREATE TABLE trips (id INTEGER PRIMARY KEY, employee_id INTEGER, city TEXT, start_date TEXT, end_date TEXT, purpose TEXT);
        CREATE TABLE claims (id INTEGER PRIMARY KEY, employee_id INTEGER, trip_id INTEGER, submitted TEXT, status TEXT);
        CREATE TABLE expense_lines (id INTEGER PRIMARY KEY, claim_id INTEGER, spent_on TEXT, category TEXT, merchant TEXT,
            amount REAL, currency TEXT, has_receipt INTEGER);
        CREATE TABLE fx_rates (currency TEXT, day TEXT, eur_per_unit REAL, PRIMARY KEY (currency, day));
        CREATE TABLE card_transactions (id INTEGER PRIMARY KEY, employee_id INTEGER, posted_on TEXT, merchant TEXT, amount REAL, currency TEXT);
        CREATE TABLE decisions (line_id INTEGER PRIMARY KEY, decision TEXT, approved_eur REAL, reason TEXT);
        CREATE TABLE payments (id INTEGER PRIMARY KEY, claim_id INTEGER, amount_eur REAL);
        """
    )
    caps = {c: rng.choice([45, 55, 60, 70, 80]) for c in CITIES}
    receipt_limit = ctx.params["receipt_limit"]
    employees = [(eid, f"{rng.choice(FIRST)} {rng.choice(LAST)}", rng.choice(["Sales", "Consulting", "R&D", "Support"]))
                 for eid in range(1, ctx.size("employees") + 1)]
    db.executemany("INSERT INTO employees VALUES (?,?,?)", employees)

    # FX: one rate per currency per day across the period (finance uses the rate of the day the money was spent).
    first_day, last_day = dt.date(2026, 10, 1), dt.date(2026, 11, 30)
    fx = {}
    day = first_day
    while day <= last_day:
        for cur, base in BASE_RATE.items():
            fx[(cur, day.isoformat())] = 1.0 if cur == "EUR" else round(base * rng.uniform(0.97, 1.03), 4)
        day += dt.timedelta(days=1)
    db.executemany("INSERT INTO fx_rates VALUES (?,?,?)", [(c, d, r) for (c, d), r in fx.items()])

    trips, claims, lines, card = [], [], [], []
    for cid in range(1, ctx.size("claims") + 1):
        emp = rng.choice(employees)
        city = rng.choice(list(CITIES))
        start = first_day + dt.timedelta(days=rng.randint(3, 50))
        end = start + dt.timedelta(days=rng.randint(1, 4))
        trips.append((cid, emp[0], city, start.isoformat(), end.isoformat(), rng.choice(["client workshop", "conference", "site audit"])))
        claims.append((cid, emp[0], cid, (end + dt.timedelta(days=rng.randint(1, 6))).isoformat(), "submitted"))
        cur = CITIES[city]
        unit = 1 / BASE_RATE[cur]
        days = [start + dt.timedelta(days=k) for k in range((end - start).days + 1)]
        for d in days:
            for _ in range(rng.randint(1, 3)):
                lines.append([cid, d.isoformat(), "meal", rng.choice(MERCHANTS["meal"]), round(rng.uniform(8, 40) * unit, 2), cur, int(rng.random() > 0.12)])
            if rng.random() < 0.6:
                lines.append([cid, d.isoformat(), "taxi", rng.choice(MERCHANTS["taxi"]), round(rng.uniform(9, 45) * unit, 2), cur, int(rng.random() > 0.15)])
        lines.append([cid, start.isoformat(), "hotel", rng.choice(MERCHANTS["hotel"]), round(rng.uniform(110, 220) * (len(days) - 1 or 1) * unit, 2), cur, 1])
        if rng.random() < 0.5:  # something bought outside the trip dates
            lines.append([cid, (end + dt.timedelta(days=rng.randint(2, 6))).isoformat(), "misc", rng.choice(MERCHANTS["misc"]), round(rng.uniform(10, 60) * unit, 2), cur, 1])
    # Pinned cases on the first claim: a card-paid hotel, an over-allowance day, a missing receipt, an outside-dates line.
    c1 = [l for l in lines if l[0] == 1]
    hotel = next(l for l in c1 if l[2] == "hotel")
    card.append((trips[0][1], hotel[1], hotel[3], hotel[4], hotel[5]))
    day0 = c1[0][1]
    cur1 = CITIES[trips[0][2]]
    unit1 = 1 / BASE_RATE[cur1]
    before_trip = (dt.date.fromisoformat(trips[0][3]) - dt.timedelta(days=3)).isoformat()
    lines.append([1, day0, "meal", "Trattoria Roma", round(caps[trips[0][2]] * 1.2 * unit1, 2), cur1, 1])
    lines.append([1, day0, "taxi", "City Cabs", round((receipt_limit + 12) * unit1, 2), cur1, 0])
    lines.append([1, before_trip, "misc", "Kiosk 24", round(15 * unit1, 2), cur1, 1])
    # Taxis without a receipt worth (in euros at the day's rate) a value between every two possible limits.
    for value in (17.5, 22.5, 27.5, 32.5):
        lines.append([1, day0, "taxi", "Airport Taxi", round(value / fx[(cur1, day0)], 2), cur1, 0])
    # An exception: a lost hotel receipt on claim 2 that a manager approved.
    c2_hotel = next(l for l in lines if l[0] == 2 and l[2] == "hotel")
    c2_hotel[6] = 0
    for _ in range(ctx.size("card_noise")):
        e = rng.choice(employees)
        cur = rng.choice(list(BASE_RATE))
        card.append((e[0], (first_day + dt.timedelta(days=rng.randint(0, 60))).isoformat(), rng.choice(MERCHANTS["hotel"] + MERCHANTS["taxi"]),
                     round(rng.uniform(10, 300), 2), cur))
    rng.shuffle(card)
    db.executemany("INSERT INTO trips VALUES (?,?,?,?,?,?)", trips)
    db.executemany("INSERT INTO claims VALUES (?,?,?,?,?)", claims)
    db.executemany("INSERT INTO expense_lines (claim_id, spent_on, category, merchant, amount, currency, has_receipt) VALUES (?,?,?,?,?,?,?)", lines)
    db.executemany("INSERT INTO card_transactions (employee_id, posted_on, merchant, amount, currency) VALUES (?,?,?,?,?)", card)

    # --- workspace ---------------------------------------------------------------------------------
    allowance = "\n".join(f"| {c} | {v} |" for c, v in caps.items())
    ctx.write("policy/travel_expense_policy.md",
        "# Travel expense policy\n\nCheck each expense line, in line-number order, against these rules and apply the first "
        "that fits:\n\n1. Only spending from the first to the last day of the trip (inclusive) is reimbursed; reject anything "
        "else with reason `outside_trip`.\n2. Anything that also appears on the employee's corporate card feed (same day, "
        "merchant, amount and currency) was paid by the company: reject it with reason `card_paid`.\n"
        "3. Lines without a receipt are only reimbursed up to the no-receipt limit finance sets for each audit round; above "
        "that, reject them with reason `no_receipt`, unless finance has approved an exception.\n4. Meals are reimbursed up to the city's daily "
        "allowance below, per claim and per day; once a day's allowance is used up, further meals that day are cut "
        "(`partial` when part of a line is paid, `rejected` when none of it is), with reason `meal_allowance`.\n\n"
        "Convert every amount to euros at the finance rate for the day the money was spent, and round to cents before "
        "applying the limits.\n\n| City | Daily meal allowance (EUR) |\n|---|---|\n" + allowance + "\n")
    emp2 = next(e for e in employees if e[0] == claims[1][1])
    ctx.write("approvals/exception_lost_receipt.eml",
        f"From: finance.controller@corp.example\nSubject: Lost receipt - claim 2\n\n{emp2[1]} lost the receipt for the {c2_hotel[3]} "
        f"hotel bill of {c2_hotel[1]} on claim 2. A signed declaration is on file, so treat that hotel line as if it had a receipt.\n")
    for i in range(ctx.size("approvals")):
        c = rng.choice(claims)
        ctx.write(f"approvals/approval_note_{i:03d}.eml",
            f"From: manager@corp.example\nSubject: Trip for claim {c[0]}\n\nI confirm the trip for claim {c[0]} was approved in advance. "
            "No exceptions needed.\n")
    for i in range(ctx.size("finance_news")):
        ctx.write(f"news/finance_news_{i:03d}.md",
            f"# Finance news {i + 1}\n\n{rng.choice(['Year-end close dates', 'New card provider', 'VAT reclaim project', 'Mileage rate review'])}. "
            "No change to the expense policy.\n")

    excused_line = next(lid for lid, l in enumerate(lines, 1) if l is c2_hotel)
    ctx.facts(excused_line=excused_line)
