"""State for retail/aged_stock_markdown: a catalogue with sales history, the markdown policy and buyers' notes."""
import datetime as dt
import itertools

CATEGORIES = ["kitchenware", "bedding", "toys", "garden", "stationery", "lighting", "bathroom", "christmas decor"]
BRANDS = ["Hearthly", "Nordvik", "Plumtree", "Casa Sol", "Brightway", "Tinker & Co", "Willow Lane", "Ostara"]
THINGS = ["Mug Set", "Duvet Cover", "Puzzle", "Planter", "Notebook", "Desk Lamp", "Towel Bale", "Bauble Pack",
          "Knife Block", "Cushion", "Kite", "Watering Can", "Pen Pack", "String Lights", "Bath Mat", "Wreath"]
BANDS = [(45, 90), (60, 120), (30, 75)]


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE products (id INTEGER PRIMARY KEY, sku TEXT UNIQUE, name TEXT, category TEXT, brand TEXT, price REAL,
            unit_cost REAL, on_hand INTEGER, received_date TEXT);
        CREATE TABLE sales (id INTEGER PRIMARY KEY, product_id INTEGER, sale_date TEXT, quantity INTEGER);
        CREATE TABLE markdown_events (id INTEGER PRIMARY KEY, title TEXT, effective_date TEXT);
        CREATE TABLE price_changes (id INTEGER PRIMARY KEY, event_id INTEGER, product_id INTEGER, old_price REAL,
            new_price REAL, UNIQUE (event_id, product_id));
        """
    )
    first_band, second_band = rng.choice(BANDS)
    first_pct, second_pct = rng.choice([(20, 40), (25, 50), (30, 60)])
    stocktake = dt.date(2026, 10, 1) + dt.timedelta(days=rng.randint(0, 40))
    if stocktake.weekday() == 0:
        stocktake += dt.timedelta(days=2)  # so "the first Monday after" is never the day itself
    excluded_brand = rng.choice(BRANDS)
    seasonal = rng.choice(["christmas decor", "garden"])
    plain_categories = [c for c in CATEGORIES if c not in (seasonal, ctx.params["held_category"])]
    plain_brands = [b for b in BRANDS if b != excluded_brand]

    # Rows 1-15 are the cases the policy must get right at every scale: (age in days of last sale or None for
    # never sold, category, brand, cost share of price, units on hand).
    special = [(first_band, None, None, 0.3, 12), (first_band + 1, None, None, 0.3, 9),
               (second_band, None, None, 0.3, 7), (second_band + 1, None, None, 0.3, 15),
               (second_band + 20, None, excluded_brand, 0.3, 10), (second_band + 15, seasonal, None, 0.3, 8),
               (second_band + 30, None, None, 0.8, 11), ("never", None, None, 0.3, 6), (second_band + 40, None, None, 0.3, 0)]
    # ... and an aged line in every category the request can hold back, so the held category always matters.
    held_categories = ctx.choices("held_category")
    special += [(second_band + 10 + k, category, None, 0.3, 5 + k) for k, category in enumerate(held_categories)]
    products, sales = [], []
    for pid in range(1, ctx.size("products") + 1):
        if pid <= len(special):
            age, category, brand, cost_share, on_hand = special[pid - 1]
            category, brand = category or rng.choice(plain_categories), brand or rng.choice(plain_brands)
        else:
            age = "never" if rng.random() < 0.06 else rng.randint(0, second_band + 60)
            category, brand = rng.choice(CATEGORIES), rng.choice(BRANDS)
            cost_share, on_hand = rng.uniform(0.25, 0.75), (rng.randint(0, 40) if rng.random() > 0.1 else 0)
        price = rng.randint(5, 80) + 0.99
        received = stocktake - dt.timedelta(days=(age if isinstance(age, int) else second_band + 5) + rng.randint(10, 200))
        products.append((pid, f"HW-{rng.randint(10, 99)}{pid:04d}", f"{brand} {rng.choice(THINGS)}", category, brand,
                         price, round(price * cost_share, 2), on_hand, received.isoformat()))
        if age != "never":
            sales.append((pid, (stocktake - dt.timedelta(days=age)).isoformat()))
    last_sale = dict(sales)
    sold = sorted(last_sale)
    while len(sales) < ctx.size("sales"):  # older sales: never more recent than each product's last sale
        pid = rng.choice(sold)
        sales.append((pid, (dt.date.fromisoformat(last_sale[pid]) - dt.timedelta(days=rng.randint(1, 120))).isoformat()))
    order = rng.sample(sales, len(sales))
    db.executemany("INSERT INTO products VALUES (?,?,?,?,?,?,?,?,?)", products)
    db.executemany("INSERT INTO sales (product_id, sale_date, quantity) VALUES (?,?,?)",
                   [(p, d, rng.randint(1, 4)) for p, d in order])

    ctx.write("merchandising/markdown_policy.md",
        "# Markdown policy - aged stock\n\n"
        f"Ages are counted in days up to the stocktake, which this time was held on {stocktake:%d %B %Y}. A line's age is\n"
        "the number of days since its most recent sale; for a line that has never sold, count from the day we\n"
        "received it. Only lines with units still on hand are considered.\n\n"
        f"- Lines older than {first_band} days are reduced by {first_pct}%.\n"
        f"- Lines older than {second_band} days are reduced by {second_pct}% instead.\n\n"
        "The reduced price is then rounded down to the nearest price ending in .99. It must never fall below what\n"
        "the item cost us: if it would, use the lowest price ending in .99 that still covers the unit cost, and if\n"
        "even that is not below the current price, leave the line alone.\n\n"
        "All new prices go live together as a single markdown event on the first Monday after the stocktake.\n"
    )
    ctx.write("mail/buying_exclusions.eml",
        "From: buying@store.example\nSubject: Markdown exclusions this round\n\n"
        f"Two things before you run the markdowns. Everything from {excluded_brand} is on sale-or-return, so the\n"
        f"supplier takes back what we do not sell: never mark it down. And {seasonal} stock goes back into the\n"
        "warehouse for next season at full price, so leave that whole category out too.\n"
    )
    topics = itertools.cycle(["window display", "staff discount", "till rolls", "loading bay", "gift cards",
                              "store radio", "customer survey", "heating repair"])
    for i, topic in zip(range(ctx.size("store_mail")), topics):
        brand, ref = rng.choice(BRANDS), rng.randint(100, 999)
        ctx.write(f"mail/store_{i:03d}_{topic.replace(' ', '_')}.eml",
                  f"Subject: {topic}\n\nQuick update on the {topic}. The {brand} display stays where it is.\n"
                  f"No impact on pricing. Ref {ref}.\n")
    ctx.facts(excluded_brand=excluded_brand, seasonal=seasonal)
