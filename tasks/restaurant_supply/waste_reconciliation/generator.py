"""State for restaurant_supply/waste_reconciliation: a week of stock movements, counts and kitchen notes."""
from datetime import date, timedelta

STOCK = [("chicken thighs", "kg", 7.2), ("beef mince", "kg", 9.8), ("salmon fillet", "kg", 21.5), ("double cream", "l", 4.1),
         ("whole milk", "l", 1.1), ("butter", "kg", 8.4), ("basmati rice", "kg", 2.3), ("plain flour", "kg", 0.9),
         ("eggs", "each", 0.28), ("lemons", "each", 0.35), ("avocados", "each", 0.95), ("mozzarella", "kg", 8.9),
         ("olive oil", "l", 7.5), ("tomatoes", "kg", 2.6), ("potatoes", "kg", 0.8), ("onions", "kg", 1.1),
         ("prawns", "kg", 17.0), ("lamb shoulder", "kg", 12.9), ("brioche buns", "each", 0.45), ("parmesan", "kg", 18.2)]
BRANDS = ["Dale", "Harvest", "Brook", "Ridge", "Meadow", "Coast", "Vale", "Fenn", "Moor", "Glen", "Holt", "Wold"]
DISHES = ["burger", "risotto", "fish pie", "curry", "carbonara", "salad bowl", "lamb tagine", "prawn linguine"]
BETWEEN = {4: 12.5, 5: 17.5, 6: 22.5, 7: 27.5}  # item id -> loss value (pounds) between two possible thresholds


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE items (id INTEGER PRIMARY KEY, code TEXT UNIQUE, name TEXT, unit TEXT, unit_cost REAL);
        CREATE TABLE stock_counts (id INTEGER PRIMARY KEY, item_id INTEGER, count_date TEXT, quantity REAL);
        CREATE TABLE deliveries (id INTEGER PRIMARY KEY, invoice_no TEXT, item_id INTEGER, delivered_on TEXT, quantity REAL);
        CREATE TABLE dishes (id INTEGER PRIMARY KEY, name TEXT);
        CREATE TABLE recipe_lines (id INTEGER PRIMARY KEY, dish_id INTEGER, item_id INTEGER, quantity REAL);
        CREATE TABLE sales (id INTEGER PRIMARY KEY, dish_id INTEGER, sale_date TEXT, portions INTEGER);
        CREATE TABLE waste_log (id INTEGER PRIMARY KEY, entry_no TEXT, item_id INTEGER, logged_on TEXT, quantity REAL, reason TEXT);
        CREATE TABLE staff_meals (id INTEGER PRIMARY KEY, item_id INTEGER, quantity REAL, note TEXT);
        CREATE TABLE cases (id INTEGER PRIMARY KEY, item_id INTEGER, unexplained_qty REAL, value REAL);
        """
    )
    monday = date(2026, 11, 2) + timedelta(weeks=rng.randint(0, 4))
    days = [monday + timedelta(days=i) for i in range(7)]
    threshold = ctx.params["threshold"]
    items = []
    for iid in range(1, ctx.size("items") + 1):
        name, unit, cost = STOCK[(iid - 1) % len(STOCK)]
        name = f"{BRANDS[(iid - 1) // len(STOCK)]} {name}"  # every name distinct, none inside another
        items.append((iid, f"ITM-{iid:04d}", name, unit, round(cost * rng.uniform(0.85, 1.15), 2)))
    db.executemany("INSERT INTO items VALUES (?,?,?,?,?)", items)

    def qty(unit, low, high):
        return float(rng.randint(low, high)) if unit == "each" else round(rng.uniform(low, high), 3)

    dishes = [(d, f"{DISHES[(d - 1) % len(DISHES)]} {'' if d <= len(DISHES) else d}".strip()) for d in range(1, ctx.size("dishes") + 1)]
    db.executemany("INSERT INTO dishes VALUES (?,?)", dishes)
    recipe, used = [], {i[0]: 0.0 for i in items}
    for d, _ in dishes:
        for iid in rng.sample([i[0] for i in items], k=4):
            unit = items[iid - 1][3]
            recipe.append((len(recipe) + 1, d, iid, 1.0 if unit == "each" else round(rng.uniform(0.03, 0.25), 3)))
    sales = []
    for day in days:
        for d, _ in dishes:
            portions = rng.randint(4, 30)
            sales.append((len(sales) + 1, d, day.isoformat(), portions))
            for line in recipe:
                if line[1] == d:
                    used[line[2]] += portions * line[3]
    db.executemany("INSERT INTO recipe_lines VALUES (?,?,?,?)", recipe)
    db.executemany("INSERT INTO sales VALUES (?,?,?,?)", sales)

    deliveries, delivered = [], {i[0]: 0.0 for i in items}
    for n in range(ctx.size("deliveries")):
        iid = rng.randint(1, len(items))
        q = qty(items[iid - 1][3], 2, 20)
        deliveries.append([n + 1, f"INV-{7100 + n * 3}", iid, rng.choice(days).isoformat(), q])
        delivered[iid] += q
    waste, wasted = [], {i[0]: 0.0 for i in items}
    for n in range(ctx.size("waste")):
        iid = rng.randint(1, len(items))
        q = qty(items[iid - 1][3], 1, 3) if items[iid - 1][3] == "each" else round(rng.uniform(0.1, 1.5), 3)
        waste.append([n + 1, f"W-{500 + n}", iid, rng.choice(days).isoformat(), q, rng.choice(["spoiled", "dropped", "over-prep", "burnt"])])
        wasted[iid] += q

    # Guaranteed cases on items 1-3 (all weighed in kg or l).
    returned_item, dup_item, meal_item = 1, 2, 3
    returned = [len(deliveries) + 1, f"INV-{9000 + rng.randint(10, 99)}", returned_item, days[2].isoformat(), 12.0]
    deliveries.append(returned)
    original = [len(waste) + 1, f"W-{900 + rng.randint(0, 50)}", dup_item, days[4].isoformat(), 4.0, "spoiled"]
    duplicate = [len(waste) + 2, f"W-{960 + rng.randint(0, 30)}", dup_item, days[4].isoformat(), 4.0, "spoiled"]
    waste += [original, duplicate]
    wasted[dup_item] += 4.0

    meals = [(meal_item, round(rng.uniform(2.5, 3.5), 3), days[1])]
    meals += [(rng.randint(4, len(items)), None, rng.choice(days)) for _ in range(3)]
    meal_rows = []
    for iid, q, day in meals:
        unit = items[iid - 1][3]
        q = q if q is not None else (float(rng.randint(2, 8)) if unit == "each" else round(rng.uniform(0.3, 1.2), 3))
        meal_rows.append((iid, q, day))
    meal_total = {}
    for iid, q, _ in meal_rows:
        meal_total[iid] = meal_total.get(iid, 0.0) + q

    counts = []
    for iid, _, _, unit, cost in items:
        opening = qty(unit, 5, 40) + used[iid]
        expected_close = opening + delivered[iid] - used[iid] - wasted[iid] - meal_total.get(iid, 0.0)
        if iid == dup_item:
            loss_value = threshold * 1.8
        elif iid in BETWEEN:  # whichever threshold is asked for, some of these are above it and some below
            loss_value = BETWEEN[iid]
        elif iid in (returned_item, meal_item):
            loss_value = threshold * 0.3
        else:
            loss_value = threshold * (rng.uniform(1.6, 4) if rng.random() < 0.3 else rng.uniform(0, 0.5))
        loss = loss_value / cost
        loss = float(round(loss)) if unit == "each" else round(loss, 3)
        closing = max(0.0, round(expected_close - loss, 3))
        if closing == 0.0:  # keep the arithmetic honest: top up the opening instead
            opening += loss - expected_close + 1
            closing = 1.0
        counts.append((len(counts) + 1, iid, (monday - timedelta(days=1)).isoformat(), round(opening, 3)))
        counts.append((len(counts) + 1, iid, days[-1].isoformat(), closing))
    db.executemany("INSERT INTO stock_counts VALUES (?,?,?,?)", counts)
    rng.shuffle(deliveries)
    db.executemany("INSERT INTO deliveries VALUES (?,?,?,?,?)", [tuple(d) for d in sorted(deliveries, key=lambda d: (d[3], d[1]))])
    db.executemany("INSERT INTO waste_log VALUES (?,?,?,?,?,?)", [tuple(w) for w in sorted(waste, key=lambda w: (w[3], w[0]))])

    name = {i[0]: i[2] for i in items}
    ctx.write("mail/stock_procedure.eml",
        f"From: gm@bistro.example\nSubject: Weekly stock reconciliation\n\nTeam, the reconciliation covers Monday\n"
        f"{monday.day} {monday:%B %Y} to the following Sunday. The opening count is the stocktake dated the Sunday before and\n"
        "the closing count is the one dated the last Sunday. What we should have left is the opening count plus\n"
        "deliveries, less what the recipes say the week's sales used, less logged waste and staff meals. Whatever is\n"
        "missing beyond that is unexplained loss. Open an investigation case for any item whose unexplained loss\n"
        "at cost is worth more than the limit I set for the week; smaller differences are counting noise.\n"
    )

    def spoken(iid, q):
        unit = items[iid - 1][3]
        if unit == "each":
            return f"{int(q)} {name[iid]} ({items[iid - 1][1]})"
        small = "g" if unit == "kg" else "ml"
        text = f"{q * 1000:.0f} {small}" if q < 1 else f"{q:g} {unit}"
        return f"{text} of {name[iid]} ({items[iid - 1][1]})"

    ctx.write("kitchen/staff_meal_notebook.txt",
        "Staff meal notebook (not in the system)\n\n"
        + "".join(f"{day:%A}: staff meal used {spoken(iid, q)}.\n" for iid, q, day in meal_rows)
    )
    ctx.write("mail/returned_delivery.eml",
        f"From: head.chef@bistro.example\nSubject: {returned[1]} sent back\n\nThe {name[returned_item]} on delivery\n"
        f"{returned[1]} arrived warm and went straight back on the van. It is still booked in the system, but we\n"
        "never had it, so leave it out of the reconciliation.\n"
    )
    ctx.write("mail/waste_log_error.eml",
        f"From: sous.chef@bistro.example\nSubject: waste log\n\nSorry - waste entry {duplicate[1]} is a duplicate of\n"
        f"{original[1]} ({name[dup_item]}); I pressed save twice. Only one of them really happened.\n"
    )
    topics = ["deep clean", "rota swap", "menu photo shoot", "extractor fan", "allergen board", "card machine",
              "uniform order", "bin collection"]
    for i in range(ctx.size("distractors")):
        item, topic = rng.choice(items), topics[i % len(topics)]
        folder = "kitchen" if i % 2 == 0 else "mail"
        ctx.write(f"{folder}/{topic.replace(' ', '_')}_{i:03d}.txt",
                  f"{topic.title()}\n\nJust so everyone knows about the {topic}. "
                  f"The {item[2]} shelf was tidied while we were at it. No stock was used or lost.\n")
