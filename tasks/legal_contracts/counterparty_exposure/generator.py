"""State for legal_contracts/counterparty_exposure: customers, contracts, invoices, treasury and legal notes."""
from datetime import date, timedelta

STEMS = ["Albion", "Bexley", "Carrow", "Denholm", "Eastgate", "Farrant", "Glenmore", "Hatton", "Islay", "Jessop",
         "Kilbride", "Lockhart", "Marston", "Newhaven", "Ormond", "Penrose", "Radley", "Stirling", "Tolland", "Wyvern"]
FORMS = {"GBP": "Ltd", "EUR": "GmbH", "USD": "Inc"}


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE counterparties (id INTEGER PRIMARY KEY, name TEXT UNIQUE, country TEXT, risk_rating TEXT);
        CREATE TABLE contracts (id INTEGER PRIMARY KEY, contract_no TEXT UNIQUE, counterparty_id INTEGER, currency TEXT,
            total_value REAL, start_date TEXT, end_date TEXT, status TEXT);
        CREATE TABLE invoices (id INTEGER PRIMARY KEY, invoice_no TEXT UNIQUE, contract_id INTEGER, amount REAL, issued_on TEXT,
            status TEXT);
        """
    )
    review = date(2026, 12, 1) + timedelta(days=rng.randint(0, 10))
    rates = {"GBP": 1.0, "EUR": round(rng.uniform(0.84, 0.88), 4), "USD": round(rng.uniform(0.76, 0.81), 4)}
    amber, red = rng.choice([(150000, 400000), (200000, 500000), (250000, 600000)])

    n = ctx.size("counterparties")
    parties = []
    for cid in range(1, n + 1):
        currency = rng.choice(["GBP", "GBP", "EUR", "USD"])
        stem = STEMS[(cid - 1) % len(STEMS)] + ("" if cid <= len(STEMS) else f" {(cid - 1) // len(STEMS) + 1}")
        parties.append((cid, f"{stem} {FORMS[currency]}", {"GBP": "United Kingdom", "EUR": "Germany", "USD": "United States"}[currency],
                        None, currency))
    # Corporate groups: a few parents own one or two subsidiaries each.
    parents = list(range(1, max(3, n // 5) + 1))
    owner = {}
    free = [p[0] for p in parties if p[0] not in parents and p[0] != n]  # the last company is the independent one
    rng.shuffle(free)
    for parent in parents:
        for _ in range(rng.choice([1, 2])):
            if free:
                owner[free.pop()] = parent
    db.executemany("INSERT INTO counterparties VALUES (?,?,?,?)", [p[:4] for p in parties])

    contracts, invoices = [], []
    for kid in range(1, ctx.size("contracts") + 1):
        cid = parties[0][0] if kid == 1 else rng.randint(1, n)
        start = review - timedelta(days=rng.randint(60, 900))
        end = start + timedelta(days=rng.choice([365, 730, 1095]))
        status = "terminated" if rng.random() < 0.12 else ("expired" if end < review else "active")
        contracts.append([kid, f"MSA-{kid * 13 + 2000}", cid, parties[cid - 1][4], float(rng.randint(20, 300) * 1000),
                          start.isoformat(), end.isoformat(), status])
    contracts[1][7] = "terminated"  # guaranteed: a terminated contract with its open invoices still counting
    contracts[1][2] = parties[0][0]
    contracts[1][3] = parties[0][4]
    for iid in range(1, ctx.size("invoices") + 1):
        k = contracts[(iid - 1) % len(contracts)]
        issued = date.fromisoformat(k[5]) + timedelta(days=rng.randint(10, 400))
        if issued >= review:
            issued = review - timedelta(days=rng.randint(1, 30))
        status = rng.choice(["paid", "paid", "paid", "open", "disputed"]) if iid > 3 else ["open", "disputed", "open"][iid - 1]
        if 4 <= iid <= 7:  # open invoices just past each possible collections age (the last past them all)
            status, issued = "open", review - timedelta(days=(100, 150, 250, 400)[iid - 4])
        invoices.append((iid, f"INV-{50000 + iid * 3}", k[0], round(k[4] * rng.uniform(0.02, 0.12), 2), issued.isoformat(), status))
    db.executemany("INSERT INTO contracts VALUES (?,?,?,?,?,?,?,?)", [tuple(c) for c in contracts])
    db.executemany("INSERT INTO invoices VALUES (?,?,?,?,?,?)", invoices)

    ctx.write("credit/credit_policy.md",
        f"# Counterparty credit policy - review of {review.day} {review:%B %Y}\n\n"
        "Exposure to a counterparty is what they owe us plus what we are still committed to deliver to them:\n\n"
        "1. Unpaid invoices: every open invoice at its full amount, and every disputed invoice at half its amount.\n"
        "   Invoices count whatever the state of the contract they were raised under.\n"
        "2. Remaining commitment: for each active contract, its total value less everything invoiced under it so far\n"
        "   (paid or not). Expired and terminated contracts carry no remaining commitment.\n\n"
        "Contracts and their invoices are in the contract's currency; convert to pounds with the treasury rates for the\n"
        "review. Exposure is assessed per corporate group: a parent company's figure includes all its subsidiaries, and\n"
        "subsidiaries are not rated on their own. A company with no parent or subsidiaries is its own group.\n\n"
        f"Ratings: red above {red:,} pounds, amber above {amber:,} pounds up to that, green otherwise. Record the rating on the\n"
        "parent company's record.\n"
    )
    ctx.write("mail/treasury_rates.eml",
        "From: treasury@ourco.example\nSubject: FX rates for the credit review\n\nUse these month-end rates for the review:\n"
        f"one euro is worth {rates['EUR']} pounds and one US dollar is worth {rates['USD']} pounds.\n"
    )
    name = {p[0]: p[1] for p in parties}
    ctx.write("credit/group_structure.md",
        "# Group structure (legal)\n\nFrom the latest Companies House and registry checks:\n\n"
        + "".join(f"- {name[sub]} is a wholly owned subsidiary of {name[parent]}.\n" for sub, parent in sorted(owner.items()))
        + f"- {name[n]} was sold by its former parent last year and is now independent.\n"
    )
    admin = ["KYC refresh", "insurance renewal", "sanctions screening", "audit request", "board training", "DPA update",
             "e-invoicing", "late payment interest"]
    n_notes = ctx.size("distractors")
    for i, firm in enumerate(rng.choice(parties)[1] for _ in range(n_notes)):
        subject = admin[i % len(admin)]
        folder = "credit" if i % 2 else "mail"
        ctx.write(f"{folder}/{subject.replace(' ', '_').lower()}_{i:03d}.txt",
                  f"{subject}\n\nFollow-up with {firm} on the {subject.lower()}. No change to any balance or group.\n")
