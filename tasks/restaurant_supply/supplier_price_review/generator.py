"""State for restaurant_supply/supplier_price_review: items, suppliers and their quotes in assorted pack sizes."""
from datetime import date, timedelta

GOODS = [("basmati rice", "kg"), ("plain flour", "kg"), ("caster sugar", "kg"), ("rapeseed oil", "l"), ("olive oil", "l"),
         ("tinned tomatoes", "kg"), ("free-range eggs", "each"), ("lemons", "each"), ("whole milk", "l"), ("double cream", "l"),
         ("butter", "kg"), ("cheddar", "kg"), ("chicken breast", "kg"), ("burger buns", "each"), ("potatoes", "kg"),
         ("onions", "kg"), ("dried pasta", "kg"), ("soy sauce", "l"), ("coffee beans", "kg"), ("oat milk", "l")]
COMPANIES = ["Bidfresh", "Crestline Foods", "Dockside Wholesale", "Evergreen Catering", "Fairfield Supplies",
             "Granary Direct", "Harbour Foods", "Ivybridge Provisions"]


def pack_text(rng, unit):
    """A supplier's pack description and how many base units (kg, l or each) it holds."""
    if unit == "each":
        n = rng.choice([6, 12, 24, 30, 48, 60])
        return rng.choice([f"tray of {n}", f"box of {n}", f"case of {n}"]), float(n)
    small = "g" if unit == "kg" else "ml"
    style = rng.randint(0, 2)
    if style == 0:
        size = rng.choice([1, 2, 2.5, 5, 10, 20])
        return f"{size:g} {unit} {'sack' if unit == 'kg' else 'drum'}", float(size)
    if style == 1:
        count, each = rng.choice([4, 6, 10, 12]), rng.choice([250, 400, 500, 750])
        return f"case of {count} x {each} {small}", count * each / 1000
    count, each = rng.choice([2, 3, 4, 6]), rng.choice([1, 1.5, 2.5, 5])
    return f"{count} x {each:g} {unit}", count * each


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE suppliers (id INTEGER PRIMARY KEY, name TEXT UNIQUE, delivery_days TEXT);
        CREATE TABLE items (id INTEGER PRIMARY KEY, code TEXT UNIQUE, name TEXT, unit TEXT, weekly_usage REAL, supplier_id INTEGER);
        CREATE TABLE quotes (id INTEGER PRIMARY KEY, supplier_id INTEGER, item_id INTEGER, pack TEXT, pack_price REAL, valid_until TEXT);
        CREATE TABLE supplier_changes (id INTEGER PRIMARY KEY, item_id INTEGER, old_supplier_id INTEGER, new_supplier_id INTEGER);
        """
    )
    review = date(2026, 11, 23) + timedelta(days=rng.randint(0, 14))
    min_saving = ctx.params["min_saving"]
    n_sup = min(ctx.size("suppliers"), len(COMPANIES))
    suppliers = [(s, COMPANIES[s - 1] + ("" if s <= len(COMPANIES) else f" {s}"), rng.choice(["Mon/Thu", "Tue/Fri", "daily", "Wed"]))
                 for s in range(1, n_sup + 1)]
    db.executemany("INSERT INTO suppliers VALUES (?,?,?)", suppliers)
    failed = n_sup  # the supplier that failed its hygiene audit

    items, quotes = [], []
    for iid in range(1, ctx.size("items") + 1):
        name, unit = GOODS[(iid - 1) % len(GOODS)]
        if iid > len(GOODS):
            name = f"{name} grade {(iid - 1) // len(GOODS) + 1}"
        current = rng.randint(1, n_sup - 1)
        items.append((iid, f"SKU{iid:04d}", name, unit, float(rng.randint(3, 60)), current))
        base = rng.uniform(0.3, 9.0)
        offering = sorted(set(rng.sample(range(1, n_sup + 1), k=rng.randint(2, n_sup)) + [current]))
        for sid in offering:
            pack, held = pack_text(rng, unit)
            factor = 1.0 if sid == current else rng.choice([0.8, 0.88, 0.93, 0.97, 1.02, 1.1, 1.25])
            valid = review + timedelta(days=rng.randint(5, 60))
            quotes.append([sid, iid, pack, round(base * factor * held, 2), valid.isoformat(), held])
    # Guaranteed cases on items 1-3: the cheapest quote is from the failed supplier, expired, or saves too little;
    # items 4-7 save 5, 7, 9 and 11 percent, between every two possible thresholds.
    for iid, trap in ((1, "failed"), (2, "expired"), (3, "small"), (4, 5), (5, 7), (6, 9), (7, 11)):
        current = items[iid - 1][5]
        cur_quote = next(q for q in quotes if q[0] == current and q[1] == iid)
        unit_price = cur_quote[3] / cur_quote[5]
        quotes = [q for q in quotes if q[1] != iid or q[0] == current]
        other = failed if trap == "failed" else next(s for s in range(1, n_sup) if s != current)
        factor = 1 - trap / 100 if isinstance(trap, int) else {"failed": 0.7, "expired": 0.75, "small": 1 - (min_saving - 2) / 100}[trap]
        pack, held = pack_text(rng, items[iid - 1][3])
        while isinstance(trap, int) and unit_price * held < 5:  # a large pack, so rounding the price keeps the percentage
            pack, held = pack_text(rng, items[iid - 1][3])
        valid = review - timedelta(days=3) if trap == "expired" else review + timedelta(days=30)
        quotes.append([other, iid, pack, round(unit_price * factor * held, 2), valid.isoformat(), held])
    rng.shuffle(quotes)
    db.executemany("INSERT INTO items VALUES (?,?,?,?,?,?)", items)
    db.executemany("INSERT INTO quotes VALUES (?,?,?,?,?,?)", [(i + 1,) + tuple(q[:5]) for i, q in enumerate(quotes)])

    ctx.write("purchasing/purchasing_guidelines.md",
        f"# Purchasing guidelines - price review of {review.day} {review:%B %Y}\n\n"
        "Compare suppliers on the price per kilo, per litre or per piece, worked out from each quote's pack price\n"
        "and pack contents. Only quotes still valid on the review date count (valid until that date inclusive).\n\n"
        "An item moves to the cheapest valid quote only if that is cheaper per unit than the quote from the item's\n"
        "current supplier by at least the minimum saving set for the review; otherwise it stays where it is, "
        "because switching has its own costs.\nThe weekly saving of a move is the weekly usage times the difference in unit price.\n"
    )
    ctx.write("mail/hygiene_audit.eml",
        f"From: food.safety@bistro-group.example\nSubject: Audit result - {suppliers[failed - 1][1]}\n\n"
        f"{suppliers[failed - 1][1]} failed our hygiene audit last week. We cannot take any new business to them\n"
        "until they pass the re-audit, so ignore their quotes in the price review.\n"
    )
    ctx.write("mail/audit_passed.eml",
        f"From: food.safety@bistro-group.example\nSubject: Audit result - {suppliers[0][1]}\n\n"
        f"{suppliers[0][1]} passed its hygiene audit with a top score. No restrictions.\n"
    )
    chatter = ["menu costing", "energy bills", "uniform supplier", "glassware breakages", "POS upgrade", "bank holiday rota",
               "recycling", "knife rolls"]
    for idx in range(ctx.size("distractors")):
        firm = rng.choice(suppliers)
        heading = chatter[idx % len(chatter)]
        folder = "mail" if idx % 2 == 0 else "purchasing"
        ctx.write(f"{folder}/{idx:03d}_{heading.replace(' ', '_')}.md",
                  f"## {heading}\n\nA note about the {heading}. {firm[1]} delivers {firm[2]}; no pricing news here.\n")
    ctx.facts(failed=failed)
