"""State for legal_contracts/clause_compliance: contracts, their clause texts and the legal playbook."""

VENDORS = ["Acorn Systems", "Brightwave", "Castellan", "Delphine Data", "Everline", "Foxglove Logistics", "Granite IT",
           "Halcyon Media", "Indigo Print", "Jetstream Cloud", "Kingfisher Labs", "Lumen Analytics", "Meridian Works",
           "Northgate Security", "Opal Software", "Pioneer Facilities"]
TYPES = ["services", "supply", "licence"]
LAWS = ["England and Wales", "Scotland", "New York", "Germany", "Singapore", "France"]


def clause_texts(rng, kind, spec):
    """The clause wordings of one contract, from its terms in `spec`."""
    texts = {}
    if spec["cap"] is None:
        texts["Limitation of liability"] = "Neither party limits its liability under this agreement; liability is unlimited."
    else:
        texts["Limitation of liability"] = (f"Each party's aggregate liability is capped at {spec['cap']:g} times the fees paid "
                                            "in the twelve months before the claim.")
    texts["Payment"] = f"The customer shall pay each undisputed invoice within {spec['pay']} days of receipt."
    texts["Governing law"] = f"This agreement and any dispute arising from it are governed by the laws of {spec['law']}."
    if spec["term"] is None:
        texts["Termination"] = "The customer may terminate only for material breach; there is no right to terminate for convenience."
    else:
        texts["Termination"] = f"The customer may terminate for convenience by giving {spec['term']} days' written notice."
    texts["Confidentiality"] = f"The confidentiality obligations survive for {spec['conf']} years after termination."
    if spec["breach"] is not None:
        texts["Data protection"] = (f"The supplier shall notify the customer of any personal data breach within {spec['breach']} "
                                    "hours of becoming aware of it.")
    return texts


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE contracts (id INTEGER PRIMARY KEY, contract_no TEXT UNIQUE, supplier TEXT, contract_type TEXT,
            annual_value REAL);
        CREATE TABLE clauses (id INTEGER PRIMARY KEY, contract_id INTEGER, heading TEXT, text TEXT);
        CREATE TABLE issues (id INTEGER PRIMARY KEY, contract_id INTEGER, heading TEXT, severity TEXT, reviewer TEXT);
        """
    )
    min_values = ctx.choices("min_value")  # the value cut-offs a request may set
    foreign_laws = ctx.choices("accepted_law")  # the governing laws outside the UK (a request may accept one)
    rules = {"cap_max": rng.choice([2, 3]), "pay_min": rng.choice([30, 45]), "breach_max": rng.choice([48, 72]),
             "conf_min": rng.choice([3, 5]), "term_max": 90, "small_value": rng.choice([15000, 25000])}
    contracts, clauses = [], []
    for cid in range(1, ctx.size("contracts") + 1):
        kind = rng.choice(TYPES)
        deviant = rng.random() < 0.22  # most contracts follow the playbook; about a fifth depart from it
        spec = {"cap": rng.choice([1, 1.5, 2]), "pay": rng.choice([45, 60, 60, 90]), "law": rng.choice(LAWS[:2]),
                "term": rng.choice([30, 60, 90]), "conf": rng.choice([5, 7]),
                "breach": rng.choice([24, 48]) if kind != "supply" else None}
        if deviant:
            for key in rng.sample(["cap", "pay", "law", "term", "conf", "breach"], k=rng.choice([1, 1, 2])):
                spec[key] = {"cap": rng.choice([None, 0.5, 3, 5]), "pay": rng.choice([14, 30]), "law": rng.choice(LAWS[2:]),
                             "term": rng.choice([None, 180]), "conf": rng.choice([1, 2, 3]),
                             "breach": rng.choice([72, 96]) if kind != "supply" else None}[key]
        value = round(rng.uniform(5000, 400000), 2)
        if cid == 2:    # small contract with no convenience termination: exempt from that rule
            kind, value, spec["term"] = "supply", rules["small_value"] - 1500.0, None
        if cid == 3:    # New York law on a licence: allowed
            kind, spec["law"], spec["breach"] = "licence", "New York", 24
        if cid == 4:    # New York law on services: a deviation
            kind, spec["law"] = "services", "New York"
        if cid == 5:    # the liability cap legal approved by side letter
            spec["cap"] = rules["cap_max"] + 2
        if cid == 6:    # unlimited liability, never waived
            spec["cap"] = None
        if 2 <= cid <= 6:   # the special contracts are always in scope, whatever the value cut-off
            value = max(value, 30000.0) if cid != 2 else value
        if 7 <= cid <= 10:  # a short payment term just below each possible value cut-off (and one below them all)
            low = ([5000] + min_values)[cid - 7]
            value, spec["pay"] = round(rng.uniform(low, min_values[cid - 7] - 1), 2), 14
        if 11 <= cid <= 13:  # a services contract under each foreign law (New York: contract 4), whichever is accepted
            kind, spec["law"], value = "services", foreign_laws[cid - 10], max(value, 30000.0)
        contracts.append((cid, f"SC-{cid * 11 + 300:05d}", VENDORS[(cid - 1) % len(VENDORS)] + (f" {cid // 16 + 1}" if cid > 16 else ""),
                          kind, value))
        for heading, text in clause_texts(rng, kind, spec).items():
            clauses.append((len(clauses) + 1, cid, heading, text))
    order = list(range(len(clauses)))
    rng.shuffle(order)  # the clause repository is not grouped by contract
    db.executemany("INSERT INTO contracts VALUES (?,?,?,?,?)", contracts)
    db.executemany("INSERT INTO clauses VALUES (?,?,?,?)", [(i + 1,) + clauses[j][1:] for i, j in enumerate(order)])

    ctx.write("legal/negotiation_playbook.md",
        "# Supplier contract playbook\n\n"
        "Severity tells us who has to look at a departure: high-severity issues go to the General Counsel, medium\n"
        "ones to Senior Counsel and low ones to the Paralegal team.\n\n"
        "**Limitation of liability.** We accept a cap between one and "
        f"{rules['cap_max']} times the annual fees, inclusive. A cap below one times the fees, or unlimited liability, is a high-\n"
        f"severity issue. A cap above {rules['cap_max']} times the fees is medium.\n\n"
        f"**Payment.** We need at least {rules['pay_min']} days to pay an invoice. Anything shorter is a medium issue.\n\n"
        "**Governing law.** The law of England and Wales or of Scotland is fine. Licence agreements may also be\n"
        "governed by New York law, because most software licensors insist on it. Any other governing law is medium.\n\n"
        f"**Termination.** We must be able to terminate for convenience on no more than {rules['term_max']} days' notice. A longer\n"
        "notice period, or no convenience termination at all, is medium. Contracts worth less than "
        f"{rules['small_value']:,} pounds a year are exempt from this point.\n\n"
        f"**Confidentiality.** Obligations should survive at least {rules['conf_min']} years; a shorter survival is a low issue.\n\n"
        f"**Data protection.** Where a contract has a data protection clause, breaches must be notified within\n"
        f"{rules['breach_max']} hours. A longer notification window is high severity.\n"
    )
    waived = contracts[4]
    ctx.write("mail/side_letter_approval.eml",
        f"From: general.counsel@ourco.example\nSubject: {waived[1]} liability cap\n\nFor the record: I approved the\n"
        f"higher liability cap in {waived[1]} with {waived[2]} by side letter last month, so it is not an issue for\n"
        "this audit. Every other clause of that contract follows the playbook as usual.\n"
    )
    ctx.write("mail/declined_request.eml",
        f"From: general.counsel@ourco.example\nSubject: {contracts[5][1]} liability\n\nThe business asked me to\n"
        f"approve the unlimited liability in {contracts[5][1]}. I have declined; it stays on the issues list.\n"
    )
    housekeeping = ["e-signature rollout", "matter numbering", "outside counsel panel", "template library", "training day",
                    "document retention", "board pack", "filing deadlines"]
    for i in range(ctx.size("distractors")):
        c, topic = rng.choice(contracts), housekeeping[i % len(housekeeping)]
        lines = [f"Re: {topic}", "", f"Quick note on the {topic}. {c[2]} asked for a copy of {c[1]}; please send the signed PDF.",
                 "This does not change any clause or playbook position.", ""]
        folder = "legal" if i % 2 else "mail"
        ctx.write(f"{folder}/{i:03d}_{topic.replace(' ', '_')}.txt", "\n".join(lines))
    ctx.facts(waived=[waived[0], "Limitation of liability"])
