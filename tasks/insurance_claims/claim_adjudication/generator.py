"""State for insurance_claims/claim_adjudication: home policies, claims with line items, wordings and notes."""
import datetime as dt

PRODUCTS = ["HomeGuard Basic", "HomeGuard Plus", "HomeGuard Premier"]
PERILS = ["fire", "theft", "storm", "escape of water", "flood", "subsidence", "accidental damage"]
CATEGORIES = ["jewellery", "electronics", "furniture", "clothing", "building repairs", "bicycles"]
FIRST = ["Alma", "Basil", "Cora", "Desmond", "Edith", "Fergus", "Gemma", "Harvey", "Iona", "Jasper", "Kerry", "Lionel",
         "Moira", "Neville", "Orla", "Percy", "Rhona", "Stanley", "Tamsin", "Vernon"]
LAST = ["Ashby", "Bellamy", "Crowe", "Dunmore", "Ellery", "Fairbairn", "Garside", "Hollis", "Irvine", "Jessop",
        "Kendrick", "Lovell", "Marchant", "Nettleton", "Oakes", "Pickering"]


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE policies (id INTEGER PRIMARY KEY, policy_no TEXT UNIQUE, holder TEXT, product TEXT, start_date TEXT,
            end_date TEXT, excess REAL, sum_insured REAL);
        CREATE TABLE claims (id INTEGER PRIMARY KEY, claim_no TEXT UNIQUE, policy_id INTEGER, loss_date TEXT, reported_date TEXT,
            peril TEXT, description TEXT, status TEXT);
        CREATE TABLE claim_items (id INTEGER PRIMARY KEY, claim_id INTEGER, category TEXT, description TEXT, amount REAL);
        CREATE TABLE decisions (id INTEGER PRIMARY KEY, claim_id INTEGER, decision TEXT, reason TEXT, payout REAL);
        CREATE TABLE payments (id INTEGER PRIMARY KEY, decision_id INTEGER, payee TEXT, amount REAL);
        """
    )
    # Per-product rules, varied per seed; Basic is always the strictest.
    rules = {}
    for i, product in enumerate(PRODUCTS):
        excluded = sorted(rng.sample(["flood", "subsidence", "accidental damage", "storm"], 3 - i))
        rules[product] = {"excluded": excluded, "notify_days": [30, 45, 60][i] + rng.choice([0, 15]) * (i > 0),
                          "sublimits": {c: rng.choice([750, 1000, 1500, 2000, 2500]) * (1 + i) for c in ("jewellery", "electronics", "bicycles")}}

    policies = []
    for pid in range(1, ctx.size("policies") + 1):
        start = dt.date(2025, 10, 1) + dt.timedelta(days=rng.randint(0, 330))
        policies.append({"id": pid, "policy_no": f"HG{rng.randint(100000, 999999)}-{pid}", "holder": f"{rng.choice(FIRST)} {rng.choice(LAST)}",
                         "product": PRODUCTS[pid % 3], "start_date": start.isoformat(),
                         "end_date": (start + dt.timedelta(days=364)).isoformat(), "excess": float(rng.choice([100, 250, 350, 500])),
                         "sum_insured": float(rng.choice([8000, 12000, 20000, 35000]))})
    db.executemany("INSERT INTO policies VALUES (:id, :policy_no, :holder, :product, :start_date, :end_date, :excess, :sum_insured)", policies)

    claims, items = [], []
    n = ctx.size("claims")
    # Planned outcomes so that every rule is exercised at every scale and seed.
    # Three claims reported between the possible grace periods: the grace period in force decides which are late.
    plan = ["not_in_force", "late_notification", "excluded_peril", "sublimit", "cap", "hold", "closed",
            "grace_8", "grace_13", "grace_18"] + [None] * (n - 10)
    for cid, kind in enumerate(plan, 1):
        pol = policies[(cid * 7) % len(policies)]
        r = rules[pol["product"]]
        start, end = dt.date.fromisoformat(pol["start_date"]), dt.date.fromisoformat(pol["end_date"])
        loss = min(end, dt.date(2026, 11, 20)) - dt.timedelta(days=rng.randint(0, 60))
        loss = max(loss, start)
        if kind == "not_in_force":
            loss = start - dt.timedelta(days=rng.randint(1, 20))
        covered = [p for p in PERILS if p not in r["excluded"]]
        peril = rng.choice(r["excluded"]) if kind == "excluded_peril" else rng.choice(covered if kind else PERILS)
        delay = (r["notify_days"] + max(ctx.choices("grace_days")) + rng.randint(1, 10) if kind == "late_notification"
                 else rng.choice([0, 2, 5, 11, r["notify_days"]]))
        if kind and kind.startswith("grace_"):
            delay = r["notify_days"] + int(kind[6:])
        if kind is None and rng.random() < 0.15:
            delay = r["notify_days"] + rng.randint(1, 25)
        reported = loss + dt.timedelta(days=delay)
        claims.append({"id": cid, "claim_no": f"CLM-{rng.randint(10000, 99999)}{cid:03d}", "policy_id": pol["id"],
                       "loss_date": loss.isoformat(), "reported_date": reported.isoformat(), "peril": peril,
                       "description": f"{peril.capitalize()} at the insured home", "status": "closed" if kind == "closed" else "open"})
        cats = rng.sample(CATEGORIES, rng.randint(1, 3))
        if kind == "sublimit":
            cats = ["jewellery"] + [c for c in cats if c != "jewellery"]
        for cat in cats:
            amount = round(rng.uniform(150, 2600), 2)
            if kind == "sublimit" and cat == "jewellery":
                amount = float(r["sublimits"]["jewellery"] + rng.randint(200, 900))
            if kind == "cap" and cat == cats[0]:
                amount = pol["sum_insured"] + rng.randint(1000, 4000) + 0.5
                cat = "building repairs"
            items.append((cid, cat, f"{cat} - {rng.choice(['damaged', 'destroyed', 'stolen', 'needs replacing'])}", amount))
    rng.shuffle(claims)
    order = {c["id"]: i for i, c in enumerate(claims, 1)}
    for c in claims:
        c["id"] = order[c["id"]]
    items = [(order[cid], cat, desc, amount) for cid, cat, desc, amount in items]
    db.executemany("INSERT INTO claims VALUES (:id, :claim_no, :policy_id, :loss_date, :reported_date, :peril, :description, :status)", claims)
    db.executemany("INSERT INTO claim_items (claim_id, category, description, amount) VALUES (?,?,?,?)", items)

    hold_claim = next(c for c in claims if c["id"] == order[plan.index("hold") + 1])

    # --- workspace ---------------------------------------------------------------------------------
    for product in PRODUCTS:
        r = rules[product]
        excl = " or ".join(r["excluded"])
        subl = "; ".join(f"any single claim for {c} is limited to {v:,} pounds in total" for c, v in r["sublimits"].items())
        ctx.write(f"wordings/{product.lower().replace(' ', '_')}_wording.md",
            f"# {product} - policy wording (extract)\n\n## What is not covered\n\nWe will not pay for any loss or damage caused by "
            f"{excl}.\n\n## Limits\n\nWithin the sum insured, {subl}. Other items are covered up to their assessed value.\n\n"
            f"## Telling us about a claim\n\nYou must report a loss to us within {r['notify_days']} days of the date it happened; "
            "we may refuse claims reported later than that.\n")
    ctx.write("guidance/claims_handling_guidance.md",
        "# Claims handling guidance\n\nCheck each open claim in this order and stop at the first rule that applies:\n\n"
        "1. The loss date must fall within the policy period (start and end dates included); otherwise deny with reason code "
        "`not_in_force`.\n2. The claim must have been reported within the notification period of the product wording, plus "
        "any grace period the claims manager has allowed for the quarter; "
        "otherwise deny with `late_notification`.\n3. If the cause is excluded by the product wording, deny with "
        "`excluded_peril`.\n\nOtherwise approve. The payout is the sum of the assessed line items, each category capped at "
        "the wording's limit for that category, minus the policy excess, and never more than the sum insured (and never "
        "below zero). Pay approved claims to the policyholder named on the policy.\n")
    notes = [f"{hold_claim['claim_no']}: referred to the special investigations unit - do not settle or decline until SIU reports back."]
    for _ in range(ctx.size("adjuster_notes")):
        c = rng.choice(claims)
        notes.append(f"{c['claim_no']}: {rng.choice(['photos received from the customer', 'loss adjuster visit booked', 'customer called for an update', 'receipts checked, all fine'])}.")
    rng.shuffle(notes)
    per = 2
    for i in range(0, len(notes), per):
        ctx.write(f"adjuster_notes/notes_{i // per + 1:03d}.txt",
                  "Adjuster notes\n\n" + "\n".join(notes[i:i + per]) + "\n")
    topics = ["storm season staffing", "new fraud indicators", "supplier panel changes", "complaints training",
              "office closure", "systems upgrade"]
    for i in range(ctx.size("bulletins")):
        topic = topics[i % len(topics)]
        ctx.write(f"bulletins/bulletin_{i:03d}.md",
            f"# Team bulletin: {topic}\n\nA reminder about {topic}. This does not change how claims are decided. Ref {rng.randint(100, 999)}.\n")
