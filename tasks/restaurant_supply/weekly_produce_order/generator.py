"""State for restaurant_supply/weekly_produce_order: recipes, a cover forecast, stock and kitchen notes."""
from datetime import date, timedelta

PRODUCE = ["tomatoes", "red onions", "shallots", "garlic", "carrots", "courgettes", "aubergines", "spinach",
           "rocket", "leeks", "beetroot", "cauliflower", "broccoli", "lemons", "limes", "parsley", "basil",
           "coriander", "mushrooms", "potatoes", "sweet potatoes", "peppers", "chillies", "cucumbers"]
OTHER = [("dairy", "butter"), ("dairy", "double cream"), ("dairy", "parmesan"), ("dry goods", "arborio rice"),
         ("dry goods", "plain flour"), ("dry goods", "chickpeas"), ("protein", "chicken thighs"),
         ("protein", "hake fillet"), ("protein", "lamb shoulder"), ("dairy", "feta")]
GRADES = ["", "organic ", "baby ", "heritage ", "large ", "fine "]
SUPPLIERS = ["Greenleaf Produce", "Market Row Veg", "Hillside Growers", "Orchard Lane"]
DISH_WORDS = ["Roast", "Charred", "Braised", "Crispy", "Warm", "Smoked", "Spiced", "Glazed"]
DISH_MAINS = ["salad", "risotto", "tart", "soup", "gratin", "skewers", "flatbread", "stew", "bowl", "pie"]
SWAPS = [("celery", "celery", "fennel bulb"), ("mustard", "mustard greens", "kale")]
BETWEEN = ["cavolo nero", "rainbow chard", "radishes", "celeriac"]  # one per pair of neighbouring allowances


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE ingredients (id INTEGER PRIMARY KEY, code TEXT UNIQUE, name TEXT, category TEXT, supplier TEXT,
            pack_grams INTEGER, pack_price REAL, on_hand_grams INTEGER);
        CREATE TABLE dishes (id INTEGER PRIMARY KEY, name TEXT, section TEXT);
        CREATE TABLE recipe_lines (id INTEGER PRIMARY KEY, dish_id INTEGER, ingredient_id INTEGER, grams_per_cover INTEGER);
        CREATE TABLE forecast (id INTEGER PRIMARY KEY, service_date TEXT, dish_id INTEGER, covers INTEGER);
        CREATE TABLE orders (id INTEGER PRIMARY KEY, supplier TEXT, status TEXT);
        CREATE TABLE order_lines (id INTEGER PRIMARY KEY, order_id INTEGER, ingredient_id INTEGER, packs INTEGER);
        """
    )
    week = date(2026, 11, 16) + timedelta(weeks=rng.randint(0, 3))  # a Monday
    allergen, removed_name, swap_name = rng.choice(SWAPS)
    suppliers = SUPPLIERS[: 3 + (ctx.scale != "v0")]

    ingredients = []

    def add(name, category, pack, price, on_hand):
        iid = len(ingredients) + 1
        ingredients.append((iid, f"ING-{iid:04d}", name, category, rng.choice(suppliers) if category == "produce" else "Metro Cash & Carry",
                            pack, price, on_hand))
        return iid

    removed = add(removed_name, "produce", 2000, round(rng.uniform(4, 9), 2), rng.randint(0, 300))
    swap = add(swap_name, "produce", 2000, round(rng.uniform(4, 9), 2), rng.randint(0, 300))
    seasonal = add("white asparagus", "produce", 1000, round(rng.uniform(14, 22), 2), 0)
    seen = {removed_name, swap_name, "white asparagus"}
    while len(ingredients) < ctx.size("ingredients"):
        if rng.random() < 0.75:
            name, category = rng.choice(GRADES) + rng.choice(PRODUCE), "produce"
        else:
            category, name = rng.choice(OTHER)
        if name in seen:
            name = f"{name} #{len(ingredients) + 1}"
        seen.add(name)
        add(name, category, rng.choice([500, 1000, 2500, 5000]), round(rng.uniform(2.5, 30), 2), rng.randint(0, 3000))
    regular = len(ingredients)
    between = [add(name, "produce", rng.choice([500, 1000, 2500]), round(rng.uniform(2.5, 12), 2), 0) for name in BETWEEN]
    db.executemany("INSERT INTO ingredients VALUES (?,?,?,?,?,?,?,?)", ingredients)

    dishes, lines = [], []
    n_dishes = ctx.size("dishes")
    for did in range(1, n_dishes + 1):
        dishes.append((did, f"{rng.choice(DISH_WORDS)} {rng.choice(PRODUCE)} {rng.choice(DISH_MAINS)} no.{did}",
                       rng.choice(["starters", "mains", "sides"])))
        chosen = rng.sample(range(4, regular + 1), k=min(5, regular - 3))
        if did in (1, 2, 3):
            chosen[0] = removed if did < 3 else swap
        if did in (4, 5, 6, 7):
            chosen.append(between[did - 4])
        for iid in chosen:
            lines.append((len(lines) + 1, did, iid, rng.randint(10, 120)))
    retired = n_dishes  # the dish that comes off the menu mid-week, the only one using white asparagus
    lines.append((len(lines) + 1, retired, seasonal, 150))
    db.executemany("INSERT INTO dishes VALUES (?,?,?)", dishes)
    db.executemany("INSERT INTO recipe_lines VALUES (?,?,?,?)", lines)

    forecast = []
    for offset in range(-7, 7):  # last week's actuals are still in the table
        day = week + timedelta(days=offset)
        for did in range(1, n_dishes + 1):
            covers = rng.randint(20, 45) if did == retired else rng.randint(0, 40)
            forecast.append((len(forecast) + 1, day.isoformat(), did, covers))
    db.executemany("INSERT INTO forecast VALUES (?,?,?,?)", forecast)
    retire_day = week + timedelta(days=rng.randint(2, 4))
    # Walk-in stock of the BETWEEN items: the week's need plus the midpoint of two neighbouring allowances lands
    # exactly on a whole number of packs, so the lower allowance orders fewer packs than the higher one.
    week_days = {(week + timedelta(days=k)).isoformat() for k in range(7)}
    buffers = ctx.choices("buffer_pct")
    for iid, low, high in zip(between, buffers, buffers[1:]):
        grams = sum(line[3] * row[3] for row in forecast if row[1] in week_days
                    and not (row[2] == retired and row[1] >= retire_day.isoformat())
                    for line in lines if line[1] == row[2] and line[2] == iid)
        target = grams * (200 + low + high) // 200  # grams needed at the midpoint allowance, rounded down
        db.execute("UPDATE ingredients SET on_hand_grams = ? WHERE id = ?", (target % ingredients[iid - 1][5], iid))

    ctx.write("kitchen/ordering_notes.md",
        f"# Produce ordering - week of Monday {week.day} {week:%B %Y}\n\n"
        "The order covers the seven services from that Monday to the Sunday. Only fresh produce goes on this\n"
        "order; dairy, dry goods and proteins come through the cash-and-carry run and are handled separately.\n\n"
        "For each item, add up grams per cover times forecast covers across every dish that uses it. Trimming\n"
        "and spoilage are real, so plan on the allowance set for the week on top of that. Then subtract what\n"
        "is already in the walk-in and order whole packs to cover the rest (round up). Nothing to order if the\n"
        "walk-in already covers it.\n"
    )
    ctx.write("mail/allergen_audit.eml",
        f"From: ops@kitchen.example\nSubject: Allergen audit outcome\n\nHi chef,\n\nFollowing the audit we are taking\n"
        f"{allergen} out of the kitchen altogether. Every recipe that uses {removed_name} switches to {swap_name}\n"
        "at exactly the same weight per cover, starting with next week's services. Please don't order any more\n"
        f"{removed_name}.\n\nThanks,\nOps\n"
    )
    ctx.write("mail/menu_change.eml",
        f"From: sous.chef@kitchen.example\nSubject: {dishes[retired - 1][1]} coming off\n\n"
        f"Heads up: the {dishes[retired - 1][1]} comes off the menu from {retire_day:%A} {retire_day.day} {retire_day:%B},\n"
        "that service included. Ignore its forecast from that day on; the forecast tool has not been updated yet.\n"
    )
    ctx.write("kitchen/ordering_notes_previous_week.md",
        f"# Produce ordering - week of Monday {(week - timedelta(days=7)).day} {(week - timedelta(days=7)):%B %Y} (done)\n\n"
        "Placed and delivered. We used a 20 percent allowance that week because of the private function.\n"
    )
    topics = ["cleaning rota", "fridge temperatures", "staff meal", "pot wash", "knife sharpening", "menu tasting",
              "delivery door", "pest control", "uniforms"]
    for i in range(ctx.size("distractors")):
        topic = topics[i % len(topics)]
        ing = rng.choice(ingredients)
        folder = "kitchen" if i % 2 == 0 else "mail"
        ctx.write(f"{folder}/memo_{i:03d}_{topic.replace(' ', '_')}.txt",
            f"{topic.title()}\n\nReminder about the {topic}. {ing[4]} said the {ing[2]} last week were excellent.\n"
            f"No change to ordering. Ticket {rng.randint(100, 999)}.\n"
        )
    ctx.facts(removed=removed, swap=swap)
