"""State for retail/refund_audit: orders with coupons, processed returns with refunds, the returns policy."""
import datetime as dt

CATEGORIES = ["electronics", "homeware", "apparel", "toys", "clearance"]
WORDS = ["Nimbus", "Orbit", "Pebble", "Quartz", "Ripple", "Sprout", "Tundra", "Velvet", "Willow", "Zest"]
ITEMS = {"electronics": ["Headphones", "Speaker", "Charger", "Smart Plug"], "homeware": ["Kettle", "Throw", "Vase", "Lamp"],
         "apparel": ["Jacket", "Scarf", "Boots", "Hoodie"], "toys": ["Robot Kit", "Plush Fox", "Puzzle Cube", "Kite"],
         "clearance": ["Last-season Bag", "Display Clock", "Outlet Mug", "Sample Rug"]}
REASONS = ["changed mind", "wrong size", "not as described", "defective", "arrived late"]


def line_value(qty: int, unit_price: float, discount_pct: int) -> float:
    return qty * unit_price * (100 - discount_pct) / 100


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE products (sku TEXT PRIMARY KEY, name TEXT, category TEXT, final_sale INTEGER, current_price REAL);
        CREATE TABLE orders (id INTEGER PRIMARY KEY, order_no TEXT UNIQUE, customer TEXT, order_date TEXT, coupon_pct INTEGER);
        CREATE TABLE order_lines (order_id INTEGER, sku TEXT, qty INTEGER, unit_price REAL);
        CREATE TABLE returns (id INTEGER PRIMARY KEY, order_id INTEGER, sku TEXT, qty INTEGER, return_date TEXT, reason TEXT,
            item_condition TEXT, refund_issued REAL);
        CREATE TABLE refund_flags (id INTEGER PRIMARY KEY, return_id INTEGER UNIQUE, correct_amount REAL, note TEXT);
        """
    )
    window = rng.choice([14, 28, 30])
    fee = ctx.params["restocking_fee_pct"]  # the desk applied the current fee where it took one
    products = []
    for k in range(ctx.size("products")):
        category = CATEGORIES[k % len(CATEGORIES)]
        products.append((f"{category[:2].upper()}-{k + 1:04d}", f"{rng.choice(WORDS)} {rng.choice(ITEMS[category])}", category,
                         int(category == "clearance"), round(rng.uniform(8, 180), 2)))
    db.executemany("INSERT INTO products VALUES (?,?,?,?,?)", products)
    by_category = {c: [p for p in products if p[2] == c] for c in CATEGORIES}

    orders, lines = [], []
    start = dt.date(2026, 10, 1)
    for oid in range(1, ctx.size("orders") + 1):
        placed = start + dt.timedelta(days=rng.randint(0, 88))
        orders.append((oid, f"W{rng.randint(100, 999)}{oid:04d}", f"customer{rng.randint(1000, 9999)}@mail.example",
                       placed.isoformat(), rng.choice([0, 0, 0, 10, 15, 20])))
        for p in rng.sample(products, rng.randint(1, 3)):
            lines.append((oid, p[0], rng.randint(1, 3), round(p[4] * rng.uniform(0.85, 1.0), 2)))
    # The first orders are shaped for the cases that must appear: a holiday-season order, an electronics order.
    orders[0] = orders[0][:3] + (dt.date(2026, 12, rng.randint(2, 20)).isoformat(), 0)
    orders[1] = orders[1][:3] + (dt.date(2026, 10, rng.randint(1, 20)).isoformat(), 10)
    orders[2] = orders[2][:3] + (dt.date(2026, 10, rng.randint(1, 31)).isoformat(), orders[2][4])  # outside the season
    lines = [l for l in lines if l[0] not in (1, 2, 3)]
    lines += [(1, by_category["homeware"][0][0], 1, 49.0), (2, by_category["electronics"][0][0], 2, 60.0),
              (2, by_category["clearance"][0][0], 1, 20.0), (3, by_category["toys"][0][0], 1, 30.0)]
    db.executemany("INSERT INTO orders VALUES (?,?,?,?,?)", orders)
    db.executemany("INSERT INTO order_lines VALUES (?,?,?,?)", lines)

    cat = {p[0]: p[2] for p in products}
    returns = [None] * 4  # ids 1-4 are the guaranteed cases below
    ordinary = [l for l in lines if l[0] > 3]
    tolerances = ctx.choices("tolerance")
    for rid in range(5, ctx.size("returns") + 1):
        oid, sku, qty, price = rng.choice(ordinary)
        order = orders[oid - 1]
        days, reason, condition = rng.randint(1, window + 25), rng.choice(REASONS), rng.choice(["sealed", "opened"])
        paid = line_value(qty, price, order[4])
        issued = round(paid * ((100 - fee) / 100 if cat[sku] == "electronics" and condition == "opened" else 1), 2)
        mistake = rng.random()
        if mistake < 0.12:
            issued = round(qty * price, 2)  # ignored the coupon
        elif mistake < 0.2:
            issued = round(paid, 2)  # no restocking fee taken
        if rid < 5 + len(tolerances) - 1:  # a mis-keyed refund between each two possible tolerances
            low, high = tolerances[rid - 5], tolerances[rid - 4]
            oid, sku, qty, price = rng.choice([l for l in ordinary if cat[l[1]] != "clearance"])
            order = orders[oid - 1]
            days, reason, condition = rng.randint(1, window), "wrong size", "sealed"
            correct = round(line_value(qty, price, order[4]) + 1e-9, 2)
            delta = round(rng.uniform(low + 0.05, high - 0.05), 2)
            issued = round(correct + delta if correct < high or rng.random() < 0.5 else correct - delta, 2)
        placed = dt.date.fromisoformat(order[3])
        returns.append([rid, oid, sku, qty, (placed + dt.timedelta(days=days)).isoformat(), reason, condition, issued])
    holiday_day = dt.date.fromisoformat(orders[0][3])
    returns[0] = [1, 1, lines[-4][1], 1, dt.date(2027, 1, rng.randint(20, 31)).isoformat(), "changed mind", "sealed", 49.0]
    returns[1] = [2, 2, lines[-3][1], 2, (dt.date.fromisoformat(orders[1][3]) + dt.timedelta(days=5)).isoformat(),
                  "changed mind", "opened", 108.0]  # the fee was not taken
    returns[2] = [3, 2, lines[-2][1], 1, (dt.date.fromisoformat(orders[1][3]) + dt.timedelta(days=window + 9)).isoformat(),
                  "defective", "opened", 18.0]  # defective final-sale item, late: full refund is right
    returns[3] = [4, 3, lines[-1][1], 1, (dt.date.fromisoformat(orders[2][3]) + dt.timedelta(days=window + 3)).isoformat(),
                  "changed mind", "sealed", round(line_value(1, 30.0, orders[2][4]), 2)]  # out of window, refunded anyway
    db.executemany("INSERT INTO returns VALUES (?,?,?,?,?,?,?,?)", rng.sample([tuple(r) for r in returns], len(returns)))

    docs = {
        "policies/returns_policy.md":
            "# Returns policy\n\n"
            f"Customers may return items within {window} days of the order date (the return date counts as the day the\n"
            "item reaches us). Returns outside the window get no refund.\n\n"
            "A refund is what the customer actually paid for the returned units: the line's unit price, less any\n"
            "coupon applied to the order, times the units returned. Amounts are rounded to the cent at the end.\n\n"
            "Opened electronics carry a restocking fee: a percentage of that amount, set by finance each quarter.\n"
            "Final-sale items are not refundable.\n\n"
            "Faulty goods are different: an item returned as defective is refunded in full, whatever the window, the\n"
            "condition or final-sale status.\n",
        "policies/holiday_returns.md":
            "# Holiday returns\n\n"
            f"Orders placed between 15 November and 24 December {holiday_day.year} (both included) can be returned until\n"
            f"31 January {holiday_day.year + 1}, or within the normal window if that ends later.\n",
    }
    for i in range(ctx.size("cs_notes")):
        topic = ["gift wrapping", "click and collect", "loyalty points", "store hours", "parcel lockers", "price match",
                 "size guide", "chat bot"][i % 8]
        docs[f"cs_notes/{i:03d}_{topic.replace(' ', '_')}.md"] = (
            f"# {topic.title()}\n\nCustomer-service note on {topic}. Ticket volume is {rng.randint(5, 90)} this week.\n"
            "This does not change refund rules.\n")
    for rel, text in docs.items():
        ctx.write(rel, text)
