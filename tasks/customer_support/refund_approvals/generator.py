"""State for customer_support/refund_approvals: customers, orders, earlier refunds, a refund queue and team mail."""
from datetime import date, timedelta

GIVEN = ["Amira", "Bastian", "Chloe", "Dmitri", "Eva", "Farid", "Gwen", "Henrik", "Isla", "Joao", "Kira", "Leon",
         "Maya", "Nico", "Odette", "Pavel", "Quinn", "Rhea", "Stefan", "Tomas"]
FAMILY = ["Albers", "Brandt", "Costa", "Dahl", "Engel", "Ferreira", "Gruber", "Holm", "Ivanova", "Jovanovic",
          "Keller", "Lindgren", "Meyer", "Nilsen", "Ortiz", "Petrov"]
REASONS = ["changed_mind", "wrong_size", "defective", "late_delivery", "not_as_described"]


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT UNIQUE, email TEXT, loyalty_tier TEXT);
        CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, order_date TEXT, delivered_on TEXT, total REAL,
            items INTEGER);
        CREATE TABLE refunds (id INTEGER PRIMARY KEY, order_id INTEGER, amount REAL, issued_on TEXT);
        CREATE TABLE refund_requests (id INTEGER PRIMARY KEY, order_id INTEGER, requested_on TEXT, amount REAL,
            reason TEXT, status TEXT, decided_amount REAL, decision_note TEXT);
        """
    )
    names = rng.sample([f"{g} {m}. {f}" for g in GIVEN for m in "BDFHKMRT" for f in FAMILY], ctx.size("customers"))
    customers = [(i, n, n.lower().replace(". ", ".").replace(" ", ".") + "@shopper.example", rng.choices(["standard", "silver", "gold"], weights=[6, 3, 2])[0])
                 for i, n in enumerate(names, start=1)]
    window = rng.choice([14, 30])
    grace = ctx.params["grace_days"]
    warranty = rng.choice([90, 180])
    auto_limit = rng.choice([50, 75, 100])
    supervisor_limit = auto_limit * rng.choice([4, 5])

    orders = []
    for oid in range(1, ctx.size("orders") + 1):
        ordered = date(2026, 6, 1) + timedelta(days=rng.randint(0, 150))
        orders.append([oid, rng.randint(1, len(customers)), ordered.isoformat(),
                       (ordered + timedelta(days=rng.randint(1, 6))).isoformat(), round(rng.uniform(15, auto_limit * 8), 2),
                       rng.randint(1, 5)])

    requests = []

    def request(order, days_after, amount, reason):
        asked = date.fromisoformat(order[3]) + timedelta(days=days_after)
        requests.append([len(requests) + 1, order[0], asked.isoformat(), round(amount, 2), reason, "pending", None, None])

    # Every request is for a different order, so earlier decisions never change a later one's balance.
    free = orders[:]
    rng.shuffle(free)
    for _ in range(ctx.size("requests") - 9):
        o = free.pop()
        reason = rng.choice(REASONS)
        days = rng.randint(0, window + grace + 10) if reason != "defective" else rng.randint(0, warranty + 20)
        request(o, days, min(o[4], rng.uniform(10, o[4])), reason)

    if not any(c[3] == "gold" for c in customers):  # the gold-member case needs one
        customers[0] = customers[0][:3] + ("gold",)
    gold = [c for c in customers if c[3] == "gold"]
    plain = [c for c in customers if c[3] != "gold"]
    held, released = rng.sample(plain, 2)

    def order_for(customer, total):
        o = free.pop()
        o[1], o[4] = customer[0], round(total, 2)
        return o

    # Guaranteed cases.
    request(order_for(held, auto_limit * 2), 2, auto_limit * 0.5, "wrong_size")              # on fraud hold
    request(order_for(released, auto_limit * 2), 3, auto_limit * 0.6, "wrong_size")          # hold lifted later
    request(order_for(rng.choice(plain), auto_limit * 3), window + grace, auto_limit * 0.8, "changed_mind")      # last day
    request(order_for(rng.choice(plain), auto_limit * 3), window + grace + 1, auto_limit * 0.8, "changed_mind")  # a day late
    request(order_for(rng.choice(plain), auto_limit * 3), window + 20, auto_limit * 0.7, "defective")   # warranty
    request(order_for(rng.choice(gold), auto_limit * 4), 1, auto_limit * 1.6, "not_as_described")     # gold: doubled
    request(order_for(rng.choice(plain), auto_limit * 4), 1, float(auto_limit), "late_delivery")       # exactly the limit
    partial = order_for(rng.choice(plain), auto_limit * 2.5)
    request(partial, 2, auto_limit * 2.5, "not_as_described")                                         # capped by refunds
    request(order_for(rng.choice(plain), supervisor_limit * 1.5), 2, supervisor_limit * 1.2, "defective")  # finance
    rng.shuffle(requests)
    for new_id, r in enumerate(requests, start=1):
        r[0] = new_id

    refunds = [(partial[0], round(auto_limit * 2.5 - auto_limit * 0.9, 2), partial[3])]
    for o in rng.sample(orders, len(orders) // 8):
        if o is not partial:
            refunds.append((o[0], round(o[4] * rng.uniform(0.1, 0.6), 2), o[3]))
    db.executemany("INSERT INTO customers VALUES (?,?,?,?)", customers)
    db.executemany("INSERT INTO orders VALUES (?,?,?,?,?,?)", [tuple(o) for o in orders])
    db.executemany("INSERT INTO refunds (order_id, amount, issued_on) VALUES (?,?,?)", refunds)
    db.executemany("INSERT INTO refund_requests VALUES (?,?,?,?,?,?,?,?)", [tuple(r) for r in requests])

    ctx.write("policy/refund_policy.md",
        "# Refund policy for support agents\n\n"
        f"Customers can ask for a refund up to {window} days after their order was delivered; a request made on "
        f"day {window} is still in time, later ones are declined. Items reported as defective are covered by our "
        f"warranty instead, which gives them {warranty} days from delivery.\n\n"
        "We never refund more than what is left on the order: the order total minus any refunds already issued on "
        "it. If a customer asks for more than that, approve the remaining amount; if nothing is left, decline.\n\n"
        f"Approval limits apply to the amount actually being refunded. Agents approve refunds of up to {auto_limit} "
        f"dollars themselves (gold loyalty members: up to twice that). Larger refunds up to {supervisor_limit} dollars "
        "go to a supervisor, and anything above that goes to the finance review board.\n\n"
        "Decision codes: approve, decline, supervisor, finance, hold.\n"
    )
    ctx.write("mail/2026-11-09_fraud_watch.eml",
        "From: fraud-team@shop.example\nSubject: Refund holds\n\n"
        f"Hi support, we are investigating chargeback patterns on the accounts of {held[1]} and {released[1]}. "
        "Until we say otherwise, put any refund request from them on hold (decision code hold) and do not pay "
        "anything out.\n\nFraud team\n"
    )
    ctx.write("mail/2026-11-21_fraud_watch_update.eml",
        "From: fraud-team@shop.example\nSubject: Re: Refund holds\n\n"
        f"Update: we have cleared {released[1]}; their refunds can be handled normally again. The other account "
        "stays on hold.\n\nFraud team\n"
    )
    topics = ["shift swap", "new macros", "holiday returns volume", "courier delays", "team offsite", "CSAT dip"]
    for i in range(ctx.size("team_mail")):
        c = rng.choice(customers)
        ctx.write(f"mail/2026-11-{rng.randint(1, 28):02d}_{topics[i % len(topics)].replace(' ', '_')}_{i}.eml",
            f"From: support-lead@shop.example\nSubject: {topics[i % len(topics)].capitalize()}\n\n"
            f"Team, about the {topics[i % len(topics)]}: {c[1]} left lovely feedback last week. No change to how "
            f"refunds are decided. See you at stand-up. Ticket {rng.randint(10000, 99999)}.\n"
        )
