"""State for logistics/load_consolidation: tomorrow's orders, truck types, the depot's planning rules."""

CUSTOMERS = ["Bellweather Foods", "Copperleaf Retail", "Driftwood Stores", "Evergreen Grocers", "Foxglove Market",
             "Goldcrest Wholesale", "Hillside Co-op", "Ironbridge Outlets", "Juniper Fresh", "Kingfisher Depot",
             "Larkspur Trading", "Moorland Farms"]
TRUCKS = [("curtainsider", "ambient", 24000, 33), ("reefer", "chilled", 20000, 30)]


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE truck_types (name TEXT PRIMARY KEY, temperature TEXT, max_kg INTEGER, max_pallets INTEGER);
        CREATE TABLE orders (id INTEGER PRIMARY KEY, ref TEXT UNIQUE, customer TEXT, region TEXT, weight_kg INTEGER,
            pallets INTEGER, temperature TEXT);
        CREATE TABLE loads (id INTEGER PRIMARY KEY, region TEXT, truck_type TEXT);
        CREATE TABLE load_orders (load_id INTEGER, order_id INTEGER UNIQUE);
        """
    )
    db.executemany("INSERT INTO truck_types VALUES (?,?,?,?)", TRUCKS)
    skipped = ctx.params["skipped_region"]
    regions = rng.sample([r for r in ctx.choices("skipped_region") if r != skipped], 4)
    regions.insert(1, skipped)  # never the dedicated customer's region (regions[0])
    dedicated, on_hold = rng.sample(CUSTOMERS, 2)
    ordinary = [c for c in CUSTOMERS if c not in (dedicated, on_hold)]
    rows = []
    for oid in range(1, ctx.size("orders") + 1):
        pallets = rng.randint(1, 12)
        weight = pallets * rng.randint(250, 750)
        customer = rng.choice(CUSTOMERS)
        chilled = rng.random() < 0.25
        if oid <= 3:  # the dedicated customer always ships, in one region, ambient and chilled
            customer, chilled, weight = dedicated, oid == 3, max(weight, 1500)
        elif oid <= 5:
            customer = on_hold
        region = regions[0] if oid <= 3 else rng.choice(regions)
        if 6 <= oid <= 9:  # light orders just under each possible parcel limit (the first under them all)
            customer, region = rng.choice(ordinary), rng.choice([r for r in regions if r != skipped])
            weight, pallets = [(280, 1), (450, 1), (700, 1), (900, 2)][oid - 6]
        if oid == 10:  # an ordinary order for the region without deliveries
            customer, region, weight = rng.choice(ordinary), skipped, max(weight, 1200)
        rows.append((oid, f"ORD-{rng.randint(10, 99)}{oid:04d}", customer, region, weight, pallets, "chilled" if chilled else "ambient"))
    db.executemany("INSERT INTO orders VALUES (?,?,?,?,?,?,?)", rng.sample(rows, len(rows)))

    ctx.write("depot/load_planning_rules.md",
        "# Load planning rules\n\n"
        "Trucks run one region each, so only orders for the same delivery region may share a truck. Chilled orders\n"
        "travel on reefers and ambient orders on curtainsiders; the two never share a truck. The truck types' weight\n"
        "and pallet limits are in the system and both must hold.\n\n"
        "To keep the number of trucks down we plan each group of orders that may travel together the same way:\n"
        "take the orders heaviest first (equal weights: lower order reference first) and put each one on the first\n"
        "truck of the group, in the order the trucks were opened, that still has room for it by weight and by\n"
        "pallets; open a new truck only when none has room. A plan with fewer trucks that keeps every rule is\n"
        "also fine.\n"
    )
    ctx.write("mail/customer_service.eml",
        "From: customer.service@company.example\nSubject: Dedicated transport\n\n"
        f"From this week {dedicated} pays for dedicated transport: their orders go on trucks that carry nothing\n"
        "for any other customer. Their own orders may share a truck with each other as usual.\n"
    )
    ctx.write("mail/finance_credit_hold.eml",
        "From: credit.control@company.example\nSubject: Credit hold\n\n"
        f"{on_hold} is over its credit limit. Nothing for them ships tomorrow; leave their orders out of the plan.\n"
    )
    memos = ["gate codes", "hi-vis policy", "yard speed limit", "tachograph checks", "pallet exchange", "wash bay",
             "fuel card", "loading dock rota"]
    for i in range(ctx.size("depot_notices")):
        memo = memos[i % len(memos)]
        text = (f"Depot notice about the {memo}. Drivers for {rng.choice(regions)} please note the change from "
                f"{rng.choice(['Monday', 'Wednesday', 'Friday'])}.\nPlanning rules are not affected. No. {rng.randint(100, 999)}.\n")
        ctx.write(f"depot/notice_{i:03d}_{memo.replace(' ', '_')}.txt", text)
    ctx.facts(dedicated=dedicated)
