"""State for manufacturing_quality/lot_quarantine: material lots, batch genealogy, inspections and quality mail.
The request (task.toml [params]) leaves out one product's batches: the pinned trap batches 1-10 are all the one product
that is never left out; batches 11-14, one per excludable product, are built from a suspect lot."""
import datetime as dt

SUPPLIER_NAMES = ["Arden Polymers", "Baltic Fasteners", "Corvin Metals", "Delta Seals", "Elbe Electronics", "Fjord Coatings",
                  "Granite Castings", "Helix Springs"]
PARTS = ["resin pellets", "M6 screws", "aluminium sheet", "O-rings", "PCB assemblies", "primer", "housings", "springs",
         "gaskets", "cable looms", "bearings", "label stock"]
PRODUCTS = ["pump housing PX-2", "valve body VB-7", "controller CT-1", "sensor head SH-4", "manifold MF-3"]
EXCLUDABLE = PRODUCTS[1:]
CRITICAL = {"C101": "cracked housing", "C104": "seal leak under pressure", "C117": "short circuit on test"}
MAJOR = {"M203": "dimension out of tolerance", "M210": "thread damage", "M221": "connector misaligned"}
MINOR = {"m301": "cosmetic scratch", "m305": "label smudged", "m312": "packaging dent"}


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE suppliers (id INTEGER PRIMARY KEY, name TEXT, country TEXT);
        CREATE TABLE lots (id INTEGER PRIMARY KEY, lot_no TEXT UNIQUE, supplier_id INTEGER, part TEXT, received TEXT, quantity INTEGER);
        CREATE TABLE batches (id INTEGER PRIMARY KEY, batch_no TEXT UNIQUE, product TEXT, produced TEXT, line TEXT, status TEXT);
        CREATE TABLE batch_lots (batch_id INTEGER, lot_id INTEGER, PRIMARY KEY (batch_id, lot_id));
        CREATE TABLE inspections (id INTEGER PRIMARY KEY, batch_id INTEGER, inspected_on TEXT, units INTEGER, defect_code TEXT, defects INTEGER);
        CREATE TABLE holds (id INTEGER PRIMARY KEY, cause_type TEXT, reference TEXT, opened TEXT);
        CREATE TABLE hold_actions (id INTEGER PRIMARY KEY, hold_id INTEGER, batch_id INTEGER, action TEXT);
        """
    )
    n_sup = ctx.size("suppliers")
    suppliers = []
    for sid in range(1, n_sup + 1):
        base = SUPPLIER_NAMES[(sid - 1) % len(SUPPLIER_NAMES)]
        suppliers.append((sid, base if sid <= len(SUPPLIER_NAMES) else f"{base} {(sid - 1) // len(SUPPLIER_NAMES) + 1}",
                          rng.choice(["DE", "PL", "CZ", "NL", "SE", "IT"])))
    db.executemany("INSERT INTO suppliers VALUES (?,?,?)", suppliers)
    part_of = {s[0]: rng.sample(PARTS, 2) for s in suppliers}
    bad_sup, retracted_sup = rng.sample(range(1, n_sup + 1), 2)
    bad_part = part_of[bad_sup][0]
    win_start = dt.date(2026, 10, rng.randint(5, 15))
    win_end = win_start + dt.timedelta(days=rng.randint(6, 12))

    lots, seq = [], 0

    def add_lot(sid, part, received):
        nonlocal seq
        seq += 1
        lots.append({"id": seq, "lot_no": f"L{sid:02d}-{received.strftime('%y%m%d')}-{seq:04d}", "supplier_id": sid,
                     "part": part, "received": received.isoformat(), "quantity": rng.randint(200, 5000)})
        return lots[-1]

    for _ in range(ctx.size("lots")):
        sid = rng.randint(1, n_sup)
        add_lot(sid, rng.choice(part_of[sid]), dt.date(2026, 9, 20) + dt.timedelta(days=rng.randint(0, 50)))
    # Suspect lots (inside the window), plus near misses: same part just outside it, other part inside it.
    suspect_pins = [add_lot(bad_sup, bad_part, win_start), add_lot(bad_sup, bad_part, win_end),
                    add_lot(bad_sup, bad_part, win_start + dt.timedelta(days=2))]
    traps = [add_lot(bad_sup, bad_part, win_end + dt.timedelta(days=1)), add_lot(bad_sup, part_of[bad_sup][1], win_start + dt.timedelta(days=1)),
             add_lot(retracted_sup, part_of[retracted_sup][0], win_start + dt.timedelta(days=3))]
    db.executemany("INSERT INTO lots VALUES (:id, :lot_no, :supplier_id, :part, :received, :quantity)", lots)
    suspect = {l["id"] for l in lots if l["supplier_id"] == bad_sup and l["part"] == bad_part
               and win_start.isoformat() <= l["received"] <= win_end.isoformat()}

    batches, uses, inspections = [], [], []
    threshold = rng.choice([1.5, 2.0, 2.5])
    n_batches = ctx.size("batches")
    for bid in range(1, n_batches + 1):
        produced = dt.date(2026, 10, 20) + dt.timedelta(days=rng.randint(0, 35))
        status = "shipped" if bid in (2, 5) else rng.choice(["released", "released", "shipped", "in warehouse"])
        product = PRODUCTS[0] if bid <= 10 else EXCLUDABLE[bid - 11] if bid <= 14 else rng.choice(PRODUCTS)
        batches.append({"id": bid, "batch_no": f"B{produced.strftime('%y%m%d')}-{bid:04d}", "product": product,
                        "produced": produced.isoformat(), "line": rng.choice(["L1", "L2", "L3"]), "status": status})
        usable = [l for l in lots if l["received"] < produced.isoformat()]
        chosen = {l["id"] for l in rng.sample(usable, min(len(usable), rng.randint(2, 4)))} - suspect
        if bid <= 3:  # batches 1-3 are built from the pinned suspect lots (2 is shipped)
            chosen.add(suspect_pins[bid - 1]["id"])
        if bid in (4, 5, 6):
            chosen.add(traps[bid - 4]["id"])
        elif 11 <= bid <= 14 or (bid > 8 and rng.random() < 0.08):
            chosen.add(rng.choice(sorted(suspect)))
        uses += [(bid, lid) for lid in sorted(chosen)]
        # Inspections: 1-3 per batch.
        plan = {3: "above", 7: "at_threshold", 8: "above", 9: "noncritical", 10: "above_shipped"}.get(bid)
        if plan == "above_shipped":
            batches[-1]["status"] = "shipped"
        for k in range(rng.randint(1, 3) if plan is None else 2):
            units = rng.choice([100, 200, 250, 400, 500])
            if plan in ("above", "above_shipped"):
                code, defects = rng.choice(sorted(CRITICAL)), int(units * threshold / 100) + rng.randint(1, 4)
            elif plan == "at_threshold":
                code, defects = rng.choice(sorted(CRITICAL)), int(units * threshold / 100)
            elif plan == "noncritical":
                code, defects = rng.choice(sorted(MAJOR)), int(units * threshold / 50) + 3
            else:
                roll = rng.random()
                code = rng.choice(sorted(CRITICAL) if roll < 0.25 else sorted(MAJOR) if roll < 0.6 else sorted(MINOR))
                defects = rng.randint(0, max(1, int(units * threshold / 100) + (2 if roll < 0.25 else 6)))
            inspections.append((bid, (dt.date.fromisoformat(batches[-1]["produced"]) + dt.timedelta(days=k)).isoformat(), units, code, defects))
    db.executemany("INSERT INTO batches VALUES (:id, :batch_no, :product, :produced, :line, :status)", batches)
    db.executemany("INSERT INTO batch_lots VALUES (?,?)", uses)
    rng.shuffle(inspections)
    db.executemany("INSERT INTO inspections (batch_id, inspected_on, units, defect_code, defects) VALUES (?,?,?,?,?)", inspections)

    bad_name = suppliers[bad_sup - 1][1]

    # --- workspace ---------------------------------------------------------------------------------
    long = lambda d: f"{d.day} {d.strftime('%B %Y')}"
    ctx.write("mail/supplier_notice_1.eml",
        f"From: quality@{bad_name.split()[0].lower()}.example\nSubject: Quality alert - {bad_part}\n\nDear customer,\n\nWe have found "
        f"a process deviation affecting {bad_part} that we shipped to you. Every lot of {bad_part} you received from us from "
        f"{long(win_start)} to {long(win_end)} inclusive must be treated as suspect. Other parts are not affected.\n\n{bad_name} quality team\n")
    retracted_name = suppliers[retracted_sup - 1][1]
    r_part = part_of[retracted_sup][0]
    ctx.write("mail/supplier_notice_2.eml",
        f"From: qa@{retracted_name.split()[0].lower()}.example\nSubject: Possible issue - {r_part}\n\nPlease treat lots of {r_part} "
        f"received since 1 October 2026 as suspect while we investigate a test equipment fault.\n\n{retracted_name}\n")
    ctx.write("mail/supplier_notice_2_followup.eml",
        f"From: qa@{retracted_name.split()[0].lower()}.example\nSubject: RE: Possible issue - {r_part}\n\nFollow-up: the fault was in our "
        f"test rig, not the product. Our earlier alert about {r_part} is withdrawn; no action is needed on your side.\n\n{retracted_name}\n")
    ctx.write("quality/containment_procedure.md",
        "# Containment procedure QP-14\n\nA finished batch must be contained when either:\n\n"
        "- it was built with a material lot that a supplier has declared suspect (and not since withdrawn); or\n"
        f"- its critical-defect rate exceeds {threshold:g}% - that is, across all inspections of the batch, the number of "
        "critical defects divided by the number of units inspected is strictly greater than that figure. Major and minor "
        "defects do not count towards it.\n\nOpen one hold per cause: one per supplier notice (reference: the supplier's name) "
        "and a single hold for defect-rate breaches. A batch affected by a supplier notice goes under that supplier's hold even "
        "if it also breaches the defect rate. Batches still on site are quarantined under the hold; batches that have already "
        "been shipped cannot be quarantined, so raise a customer notification under the hold instead.\n")
    catalogue = "\n".join(f"- {c}: {d}" for c, d in {**CRITICAL, **MAJOR, **MINOR}.items())
    ctx.write("quality/defect_codes.md",
        "# Defect code catalogue\n\nCodes starting with C are critical (safety or function), M codes are major, lower-case m codes "
        f"are minor.\n\n{catalogue}\n")
    for i in range(ctx.size("shift_reports")):
        b = rng.choice(batches)
        ctx.write(f"shift_reports/shift_{i:03d}.txt",
            f"Shift report, line {b['line']}\n\nRan {b['product']} (batch {b['batch_no']}). {rng.choice(['No stoppages.', 'One jam cleared.', 'Changeover took 40 minutes.'])} "
            f"Scrap {rng.randint(0, 12)} units.\n")
    for i in range(ctx.size("supplier_mail")):
        s = rng.choice(suppliers)
        ctx.write(f"mail/supplier_info_{i:03d}.eml",
            f"From: sales@{s[1].split()[0].lower()}.example\nSubject: {rng.choice(['Price list 2027', 'Holiday shipping dates', 'New account manager'])}\n\n"
            f"Dear customer, please find our update attached. No quality issues to report. Regards, {s[1]}\n")
