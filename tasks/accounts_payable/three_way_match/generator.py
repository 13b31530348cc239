"""State for accounts_payable/three_way_match: orders, partial receipts, invoices and AP correspondence."""
import datetime as dt

VENDORS = ["Acme Fasteners", "Borealis Paper", "Crestline Tools", "Delta Coatings", "Everest Packaging",
           "Falcon Electric", "Granite Supply", "Harbor Chemicals", "Ivory Textiles", "Juniper Plastics",
           "Kestrel Metals", "Lumen Lighting", "Meridian Office", "Nimbus Cleaning", "Orchid Labels"]
ITEMS = ["hex bolts M8", "copier paper A4", "torque wrench", "primer 5L", "shipping cartons", "cable ties",
         "safety gloves", "solvent 1L", "cotton rags", "pallet wrap", "LED tubes", "toner cartridge",
         "floor cleaner", "barcode labels", "steel brackets", "adhesive tape"]
TOLERANCE_WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten",
                   11: "eleven"}


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE vendors (id INTEGER PRIMARY KEY, code TEXT UNIQUE, name TEXT, payment_terms TEXT);
        CREATE TABLE purchase_orders (id INTEGER PRIMARY KEY, po_number TEXT UNIQUE, vendor_id INTEGER, order_date TEXT);
        CREATE TABLE po_lines (id INTEGER PRIMARY KEY, po_id INTEGER, line_no INTEGER, item TEXT, qty_ordered INTEGER,
            unit_price REAL);
        CREATE TABLE receipts (id INTEGER PRIMARY KEY, po_line_id INTEGER, qty_received INTEGER, received_date TEXT);
        CREATE TABLE invoices (id INTEGER PRIMARY KEY, invoice_no TEXT, vendor_id INTEGER, po_number TEXT,
            invoice_date TEXT, status TEXT, hold_reason TEXT);
        CREATE TABLE invoice_lines (id INTEGER PRIMARY KEY, invoice_id INTEGER, line_no INTEGER, qty INTEGER,
            unit_price REAL);
        """
    )
    general, tolerances = ctx.params["price_tolerance_pct"], ctx.choices("price_tolerance_pct")
    special = general + rng.choice([3, 4, 6])
    n_vendors = ctx.size("vendors")
    vendors = [(vid, f"V{300 + vid * 7}", VENDORS[(vid - 1) % len(VENDORS)] + ("" if vid <= len(VENDORS) else f" {vid}"),
                rng.choice(["net 30", "net 45", "2/10 net 30"])) for vid in range(1, n_vendors + 1)]
    db.executemany("INSERT INTO vendors VALUES (?,?,?,?)", vendors)
    special_vendor, held_vendor = rng.sample(range(1, n_vendors + 1), 2)

    plain = [v for v in range(1, n_vendors + 1) if v not in (special_vendor, held_vendor)]
    pos, lines, receipts, invoices, inv_lines = [], [], [], [], []
    base = dt.date(2026, 9, 1)
    cutoffs = [dt.datetime.strptime(c, "%d %B %Y").date() for c in ctx.choices("cutoff_date")]
    for pid in range(1, ctx.size("purchase_orders") + 1):
        if pid in (3, 8):
            vendor = special_vendor
        elif pid == 5:
            vendor = held_vendor
        else:  # the first orders carry the guaranteed faults, so keep them away from the two named vendors
            vendor = rng.choice(plain) if pid < 10 or 13 <= pid < 16 else rng.randint(1, n_vendors)
        # The first orders (the guaranteed faults) are invoiced before the earliest cut-off; orders 10-12 are
        # invoiced between two cut-offs each, so whichever cut-off the request gives changes the batch.
        if 10 <= pid < 10 + len(cutoffs) - 1:
            inv_date = cutoffs[pid - 10] + dt.timedelta(days=rng.randint(1, (cutoffs[pid - 9] - cutoffs[pid - 10]).days))
            ordered = inv_date - dt.timedelta(days=rng.randint(8, 20))
        else:
            ordered = base + dt.timedelta(days=rng.randint(0, 15 if pid < 10 or 13 <= pid < 16 else 40))
            inv_date = ordered + dt.timedelta(days=rng.randint(8, 20))
        po_number = f"PO-{26000 + pid * 3}"
        pos.append((pid, po_number, vendor, ordered.isoformat()))
        invoice_id = len(invoices) + 1
        # What goes wrong with this order's invoice, by construction for the first orders and at random after.
        # Orders 13-15 are billed between two possible general tolerances, so the batch's tolerance always matters.
        fault = {1: "price_over", 2: "short_receipt", 3: "special_ok", 4: "clean", 8: "special_over",
                 13: "between_0", 14: "between_1", 15: "between_2"}.get(
            pid, rng.choice(["clean"] * 6 + ["price_over", "short_receipt", "price_under"]))
        bad_line = rng.randint(1, 3)
        for line_no in range(1, rng.randint(2, 4) + 1):
            line_id = len(lines) + 1
            qty, price = rng.randint(5, 60), round(rng.uniform(1.5, 90.0), 2)
            lines.append((line_id, pid, line_no, rng.choice(ITEMS), qty, price))
            short = line_no == min(bad_line, 2) and fault == "short_receipt"
            received = qty - rng.randint(1, 3) if (short or rng.random() < 0.15) and qty > 4 else qty
            if rng.random() < 0.35:  # delivered in two parts
                first = rng.randint(1, received - 1)
                receipts.append((len(receipts) + 1, line_id, first, (ordered + dt.timedelta(days=5)).isoformat()))
                receipts.append((len(receipts) + 1, line_id, received - first, (ordered + dt.timedelta(days=12)).isoformat()))
            else:
                receipts.append((len(receipts) + 1, line_id, received, (ordered + dt.timedelta(days=7)).isoformat()))
            inv_qty, inv_price = (qty if short else received), price  # a short line is billed as if complete
            if line_no == min(bad_line, 2):
                if fault == "price_over":
                    inv_price = round(price * (1 + general / 100) + max(0.02, price * 0.006), 2)
                elif fault.startswith("between_"):
                    k = int(fault[-1])
                    inv_price = round(price * (1 + (tolerances[k] + tolerances[k + 1]) / 200), 2)
                elif fault == "price_under":
                    inv_price = round(price * 0.97, 2)
                elif fault == "special_ok":
                    inv_price = round(price * (1 + (general + special) / 200), 2)
                elif fault == "special_over":
                    inv_price = round(price * (1 + special / 100) + max(0.02, price * 0.006), 2)
            inv_lines.append((len(inv_lines) + 1, invoice_id, line_no, inv_qty, inv_price))
        invoices.append((invoice_id, f"INV-{rng.randint(10000, 99999)}-{invoice_id}", vendor, po_number, inv_date.isoformat()))
    # Invoices that match no order: an unknown PO number, and a real PO billed by the wrong vendor.
    others = [v for v in range(1, n_vendors + 1) if v not in (held_vendor, pos[3][2])]
    for wrong_po, vendor in ((f"PO-{99000 + rng.randint(1, 99)}", rng.choice(others)), (pos[3][1], rng.choice(others))):
        invoice_id = len(invoices) + 1
        invoices.append((invoice_id, f"INV-{rng.randint(10000, 99999)}-{invoice_id}", vendor, wrong_po, "2026-10-05"))
        inv_lines.append((len(inv_lines) + 1, invoice_id, 1, rng.randint(2, 9), round(rng.uniform(5, 50), 2)))

    db.executemany("INSERT INTO purchase_orders VALUES (?,?,?,?)", pos)
    db.executemany("INSERT INTO po_lines VALUES (?,?,?,?,?,?)", lines)
    db.executemany("INSERT INTO receipts VALUES (?,?,?,?)", receipts)
    order = list(range(len(invoices)))
    rng.shuffle(order)  # invoices arrive in no particular order
    renumber = {invoices[i][0]: k + 1 for k, i in enumerate(order)}
    db.executemany("INSERT INTO invoices VALUES (?,?,?,?,?, 'pending', NULL)",
                   sorted((renumber[i[0]],) + i[1:] for i in invoices))
    db.executemany("INSERT INTO invoice_lines VALUES (?,?,?,?,?)",
                   [(l[0], renumber[l[1]], l[2], l[3], l[4]) for l in inv_lines])

    names = {v[0]: v[2] for v in vendors}
    ctx.write("ap_team/matching_memo.md",
        "# Three-way matching - how we do it\n\n"
        "Every invoice must name a purchase order that exists and was raised with the same vendor that sent the\n"
        "invoice; otherwise it goes on hold as `no_matching_po`.\n\n"
        "For each invoice line, compare with the order line of the same line number and with everything received\n"
        "against that order line (deliveries often arrive in several parts, so add the receipts up). A line that\n"
        "bills more units than we have received puts the invoice on hold as `quantity_variance`.\n\n"
        "Suppliers may bill a unit price above the order price by up to a small percentage (inclusive) to cover\n"
        "small increases; the percentage is set for each batch when it is handed over. Anything higher puts the\n"
        "invoice on hold as `price_variance`. Billing below the order price is fine.\n\n"
        "An invoice gets one reason only. When several apply, the first in this order wins: vendor_hold,\n"
        "no_matching_po, quantity_variance, price_variance. Everything else is approved.\n"
    )
    ctx.write("inbox/procurement_contract_note.eml",
        f"From: procurement@company.example\nSubject: {names[special_vendor]} - new framework agreement\n\n"
        f"FYI, the new framework agreement with {names[special_vendor]} lets them pass on raw material surcharges, so\n"
        f"their invoices may exceed order prices by as much as {TOLERANCE_WORDS[special]} percent before we treat it as a\n"
        "price variance. The usual limit still applies to everyone else.\n"
    )
    ctx.write("inbox/treasury_alert.eml",
        f"From: treasury@company.example\nSubject: URGENT - bank details change request\n\n"
        f"We received a request to change the bank account of {names[held_vendor]} that we could not verify. Until it\n"
        "is resolved, every invoice from this vendor goes on hold with reason vendor_hold, whatever else is\n"
        "true of it. Do not approve anything from them.\n"
    )
    subjects = ["month-end close timetable", "expense card renewals", "audit walkthrough", "new cost centres",
                "VAT return reminder", "office move", "budget templates", "travel policy update"]
    for i in range(ctx.size("finance_mail")):
        subject = subjects[i % len(subjects)]
        ctx.write(f"inbox/fin_{i:03d}_{subject.replace(' ', '_')}.eml",
            f"Subject: {subject}\n\nHello all, a short note on the {subject}. "
            f"{names[rng.randint(1, n_vendors)]} is not\naffected. No change to invoice matching. "
            f"Ref {rng.randint(100, 999)}.\n")
