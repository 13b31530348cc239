"""State for retail/restock_orders: a catalogue, suppliers, sales history and the shop's documents."""

ADJECTIVES = ["Classic", "Organic", "Family", "Light", "Premium", "Everyday", "Fresh", "Golden"]
NOUNS = ["Oats", "Coffee", "Detergent", "Crackers", "Shampoo", "Peas", "Tea", "Rice", "Soap", "Juice", "Pasta", "Chips"]
SUPPLIER_NAMES = ["Northwind", "Blue Harbor", "Keystone", "Maple Ridge", "Cedar Point", "Summit", "Riverbend",
                  "Ironwood", "Lakeshore", "Pinecrest", "Oakhill", "Silverline", "Redrock", "Greenfield",
                  "Fairview", "Westbrook"]


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    categories = ctx.choices("excluded_category")
    db.executescript(
        """
        CREATE TABLE suppliers (id INTEGER PRIMARY KEY, name TEXT, case_pack INTEGER, lead_days INTEGER, email TEXT);
        CREATE TABLE products (id INTEGER PRIMARY KEY, sku TEXT UNIQUE, name TEXT, category TEXT, on_hand INTEGER,
            reorder_point INTEGER, target_stock INTEGER, unit_cost REAL, preferred_supplier_id INTEGER,
            backup_supplier_id INTEGER);
        CREATE TABLE sales (id INTEGER PRIMARY KEY, product_id INTEGER, day TEXT, quantity INTEGER);
        CREATE TABLE purchase_orders (id INTEGER PRIMARY KEY, product_id INTEGER, supplier_id INTEGER,
            quantity INTEGER, unit_cost REAL, status TEXT);
        """
    )
    n_suppliers = 8 + {"v0": 0, "v1": 2, "v2": 4, "v3": 8}[ctx.scale]  # a few more suppliers at larger scales
    suppliers = []
    for i in range(1, n_suppliers + 1):
        name = f"{SUPPLIER_NAMES[i - 1]} Wholesale"
        suppliers.append((i, name, rng.choice([6, 10, 12, 24]), rng.randint(2, 9), f"orders@{SUPPLIER_NAMES[i - 1].lower().replace(' ', '')}.example"))
    db.executemany("INSERT INTO suppliers VALUES (?,?,?,?,?)", suppliers)

    products = []
    for pid in range(1, ctx.size("products") + 1):
        reorder = rng.randint(10, 40)
        target = reorder + rng.randint(20, 60)
        below = rng.random() < 0.35
        on_hand = rng.randint(0, reorder - 1) if below else rng.randint(reorder, target + 20)
        preferred = rng.randint(1, n_suppliers)
        backup = rng.choice([s for s in range(1, n_suppliers + 1) if s != preferred])
        name = f"{rng.choice(ADJECTIVES)} {rng.choice(NOUNS)} {rng.randint(100, 999)}g"
        products.append((pid, f"SKU-{pid:05d}", name, rng.choice(categories), on_hand, reorder, target,
                         round(rng.uniform(0.8, 25.0), 2), preferred, backup))
    # Guarantee the exceptions matter at every scale: two low-stock products of the suspended supplier,
    # and low-stock products among the discontinued ones.
    suspended = rng.randint(1, n_suppliers)
    for idx in (0, 1):
        pid, sku, name, cat, _, reorder, target, cost, _, backup = products[idx * 7 + 3]
        backup = backup if backup != suspended else (suspended % n_suppliers) + 1
        products[idx * 7 + 3] = (pid, sku, name, cat, reorder - 3, reorder, target, cost, suspended, backup)
    # Every category has low-stock products (rows 20..25 of every scale), so whichever category the request
    # leaves alone changes the orders.
    for offset, category in enumerate(categories):
        pid, sku, name, _, _, reorder, target, cost, preferred, backup = products[20 + offset]
        if preferred == suspended:
            preferred, backup = backup, preferred
        products[20 + offset] = (pid, sku, name, category, max(0, reorder - 5), reorder, target, cost, preferred, backup)
    db.executemany("INSERT INTO products VALUES (?,?,?,?,?,?,?,?,?,?)", products)

    low = [p for p in products if p[4] < p[5] and p[8] != suspended]
    discontinued = sorted(rng.sample([p[1] for p in low], k=max(2, len(low) // 8)))
    discontinued += sorted(rng.sample([p[1] for p in products if p[4] >= p[5]], k=2))  # harmless entries

    sales = []
    for sid in range(1, ctx.size("sales") + 1):
        sales.append((sid, rng.randint(1, len(products)), f"2026-10-{rng.randint(1, 31):02d}", rng.randint(1, 9)))
    db.executemany("INSERT INTO sales VALUES (?,?,?,?)", sales)

    supplier_name = {s[0]: s[1] for s in suppliers}
    ctx.write("docs/purchasing_policy.md",
        "# Purchasing policy (stock room)\n\n"
        "- Reorder a product when stock on hand is strictly below its reorder point.\n"
        "- Order from the product's preferred supplier unless a notice says otherwise; the backup\n"
        "  supplier listed on the product is the approved alternative.\n"
        "- Quantity: enough to reach the target stock level, rounded UP to a whole number of the\n"
        "  supplier's case pack (we cannot buy partial cases).\n"
        "- Unit cost is the catalogue unit cost, whichever supplier ships it.\n"
    )
    ctx.write("inbox/2026-11-02_supplier_notice.eml",
        f"From: accounts@ourshop.example\nSubject: Hold on {supplier_name[suspended]}\n\n"
        f"Hi team, we are in a billing dispute with {supplier_name[suspended]}. Until further notice do NOT\n"
        "place new orders with them. Where they are the preferred supplier, use the backup supplier\n"
        "on file for that product instead.\n\nThanks, Accounts\n"
    )
    ctx.write("docs/range_review_notes.txt",
        "Range review - outcome\n\nThe following lines are being delisted and must not be reordered,\n"
        "whatever their stock level:\n" + "\n".join(f"  * {sku}" for sku in discontinued) + "\n"
    )
    topics = ["staff rota", "shelf layout", "loyalty scheme", "cleaning schedule", "till procedures",
              "delivery bay access", "fire drill", "holiday opening hours", "price labels", "returns desk"]
    for i in range(ctx.size("distractors")):
        topic = topics[i % len(topics)]
        folder = "inbox" if i % 2 else "docs"
        other = rng.choice(suppliers)
        ctx.write(f"{folder}/note_{i:03d}_{topic.replace(' ', '_')}.txt",
            f"About the {topic}: please review the attached plan before the next team meeting.\n"
            f"{other[1]} confirmed their delivery window ({other[3]} days). Nothing changes for ordering.\n"
            f"Reference {rng.randint(1000, 9999)}.\n"
        )
    ctx.facts(suspended_supplier=suspended, discontinued=discontinued)
