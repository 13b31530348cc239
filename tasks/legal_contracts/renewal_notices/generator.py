"""State for legal_contracts/renewal_notices: a contract register, amendments and legal correspondence."""
from datetime import date, timedelta

COMPANY_STEMS = ["Arden", "Belmont", "Corvid", "Dunmore", "Elstree", "Fenwick", "Galloway", "Harrow", "Ilford",
                 "Juniper", "Kestrel", "Linden", "Marlow", "Norcott", "Orwell", "Pembroke", "Quarry", "Rosling",
                 "Stanmore", "Thornby", "Upton", "Verity", "Wexford", "Yardley"]
SUFFIXES = ["Ltd", "GmbH", "SAS", "BV", "Srl", "LLC", "plc", "AG"]
COUNTRIES = ["United Kingdom", "Germany", "France", "Netherlands", "Italy", "Spain", "Ireland", "Belgium"]
SUBJECTS = ["Cloud hosting", "Payroll software", "Facilities cleaning", "Fleet leasing", "Office supplies",
            "Security monitoring", "Translation services", "Data feed licence", "Recruitment platform",
            "Printer maintenance", "Telecoms", "Catering", "Legal research database", "Courier services"]
OTHER_CLAUSES = [("payment terms", "Payment terms changed to {n} days from invoice."),
                 ("pricing", "Annual fee indexed; uplift capped at {n} percent."),
                 ("governing law", "Disputes now referred to arbitration; {n}-day negotiation period first."),
                 ("service levels", "Availability target raised; service credits after {n} minutes of outage.")]


def add_months(d: date, months: int) -> date:
    """Same day of month, `months` later (days beyond the month's end fall back to its last day)."""
    y, m = divmod(d.month - 1 + months, 12)
    year, month = d.year + y, m + 1
    for day in (d.day, 30, 29, 28):
        try:
            return date(year, month, min(d.day, day))
        except ValueError:
            continue
    raise AssertionError("unreachable")


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE counterparties (id INTEGER PRIMARY KEY, name TEXT, country TEXT, legal_email TEXT);
        CREATE TABLE contracts (id INTEGER PRIMARY KEY, contract_no TEXT UNIQUE, counterparty_id INTEGER,
            title TEXT, start_date TEXT, initial_term_months INTEGER, auto_renew INTEGER,
            renewal_term_months INTEGER, notice_days INTEGER, annual_value REAL, status TEXT);
        CREATE TABLE amendments (id INTEGER PRIMARY KEY, contract_id INTEGER, signed_on TEXT, clause TEXT,
            summary TEXT);
        CREATE TABLE notices (id INTEGER PRIMARY KEY, contract_id INTEGER, notice_deadline TEXT, status TEXT,
            recipient TEXT);
        """
    )
    min_values = ctx.choices("min_value")  # the value floors a request may set
    renegotiated = ctx.choices("renegotiated")  # the kinds of agreement procurement may be renegotiating
    today = date(2026, 11, 2) + timedelta(days=rng.randint(0, 20))
    window = rng.choice([30, 45, 60])
    buffer_country = rng.choice(["France", "Germany", "Italy"])
    buffer_days = rng.choice([10, 14, 21])

    n_cp = ctx.size("counterparties")
    counterparties = []
    for cid in range(1, n_cp + 1):
        stem = COMPANY_STEMS[(cid - 1) % len(COMPANY_STEMS)]
        name = f"{stem} {rng.choice(SUFFIXES)}" + (f" {cid // len(COMPANY_STEMS) + 1}" if cid > len(COMPANY_STEMS) else "")
        country = buffer_country if cid <= 2 else rng.choice(COUNTRIES)
        counterparties.append((cid, name, country, f"legal@{stem.lower()}{cid}.example"))
    db.executemany("INSERT INTO counterparties VALUES (?,?,?,?)", counterparties)

    contracts = []
    for kid in range(1, ctx.size("contracts") + 1):
        start = date(2021, 1, 1) + timedelta(days=rng.randint(0, 2000))
        start = start.replace(day=min(start.day, 28))  # month-end clamping would make renewals ambiguous
        contracts.append({
            "id": kid, "contract_no": f"C-{kid:05d}", "counterparty_id": rng.randint(1, n_cp),
            "title": f"{rng.choice(SUBJECTS)} agreement", "start": start,
            "term": rng.choice([12, 24, 36]), "auto": int(rng.random() < 0.8), "renewal": rng.choice([12, 12, 24]),
            "notice": rng.choice([30, 60, 90]), "value": round(rng.uniform(4000, 250000), 2),
            "status": "active" if rng.random() < 0.9 else "terminated"})

    def craft(c, deadline, notice, rollovers):
        """Make contract c auto-renewing with a current term that ends `notice` days after `deadline`."""
        end = deadline + timedelta(days=notice)
        while end.day > 28:  # keep month arithmetic exactly reversible
            end += timedelta(days=1)
        c.update(auto=1, status="active", notice=notice,
                 start=add_months(end, -(c["term"] + rollovers * c["renewal"])))
        return end

    # Guaranteed cases, present at every scale and seed.
    kept_in_window = contracts[4]
    craft(kept_in_window, today + timedelta(days=window // 2), 60, 0)
    rolled = contracts[9]
    craft(rolled, today + timedelta(days=window // 3), 30, 2)
    amended = contracts[14]  # contract says 30 days, an amendment moved it to 90: due now
    craft(amended, today + timedelta(days=window - 5), 90, 1)
    amended["notice"] = 30
    buffered = contracts[19]  # contractual deadline just past the window, local counsel's buffer brings it in
    buffered["counterparty_id"] = 1
    craft(buffered, today + timedelta(days=window + 3), 60, 0)
    passed = contracts[24]  # deadline already missed: no notice can be sent any more
    craft(passed, today - timedelta(days=6), 30, 1)
    lapse_ok = contracts[29]  # discussed in the minutes, but the business lets it lapse
    craft(lapse_ok, today + timedelta(days=3), 90, 0)

    # Due contracts just above each possible value floor (none under the lowest), of kinds nobody renegotiates.
    plain = [t for t in SUBJECTS if t not in renegotiated]
    home = [cp[0] for cp in counterparties if cp[2] != buffer_country] or [counterparties[-1][0]]  # no registered-post buffer
    planted = []
    for k, value in enumerate((15000.0, 25000.0, 40000.0)):
        c = contracts[34 + 5 * k]
        craft(c, today + timedelta(days=5 + 2 * k), 60, 0)  # well inside the window, even after craft's nudge
        c.update(value=value, title=f"{rng.choice(plain)} agreement", counterparty_id=rng.choice(home))
        planted.append(c)
    # A due, valuable contract of every kind procurement might be renegotiating.
    for k, subject in enumerate(renegotiated):
        c = contracts[49 + 5 * k]
        craft(c, today + timedelta(days=11 + 2 * k), 30, 1)
        c.update(value=round(rng.uniform(60000, 250000), 2), title=f"{subject} agreement", counterparty_id=rng.choice(home))
        planted.append(c)
    for c in (kept_in_window, rolled, amended, buffered, passed, lapse_ok):  # the fixed cases stay in scope
        if c["value"] < max(min_values) or c["title"].removesuffix(" agreement") in renegotiated:
            c.update(value=max(c["value"], 60000.0), title=f"{rng.choice(plain)} agreement")

    db.executemany("INSERT INTO contracts VALUES (?,?,?,?,?,?,?,?,?,?,?)", [
        (c["id"], c["contract_no"], c["counterparty_id"], c["title"], c["start"].isoformat(), c["term"], c["auto"],
         c["renewal"], c["notice"], c["value"], c["status"]) for c in contracts])

    amendments = []
    crafted = {c["id"] for c in (kept_in_window, rolled, amended, buffered, passed, lapse_ok, *planted)}
    free = [c["id"] for c in contracts if c["id"] not in crafted]
    targets = [amended["id"]] + [rng.choice(free) for _ in range(ctx.size("amendments") - 1)]
    for aid, kid in enumerate(targets, start=1):
        c = contracts[kid - 1]
        signed = min(c["start"] + timedelta(days=rng.randint(30, 500)), today - timedelta(days=rng.randint(1, 60)))
        if kid == amended["id"] or rng.random() < 0.35:
            days = 90 if kid == amended["id"] else rng.choice([30, 45, 60, 90, 120])
            summary = f"Clause {rng.randint(10, 19)}.{rng.randint(1, 4)} replaced: either party may terminate at the end of a term by giving not less than {days} days' written notice."
            clause = "notice period"
            if kid == amended["id"]:
                signed = today - timedelta(days=40)
        else:
            clause, template = rng.choice(OTHER_CLAUSES)
            summary = template.format(n=rng.choice([5, 14, 30, 45, 60, 90]))
        amendments.append((aid, kid, signed.isoformat(), clause, summary))
    # An older, superseded notice amendment on the amended contract (the later one wins).
    amendments.append((len(amendments) + 1, amended["id"], (today - timedelta(days=400)).isoformat(), "notice period",
                       "Clause 12.1 replaced: either party may terminate at the end of a term by giving not less than 45 days' written notice."))
    order = sorted(amendments, key=lambda a: (a[2], a[0]))
    remap = {a[0]: i for i, a in enumerate(order, start=1)}
    db.executemany("INSERT INTO amendments VALUES (?,?,?,?,?)", [(remap[a[0]],) + a[1:] for a in order])

    cp_name = {c[0]: c[1] for c in counterparties}
    ctx.write("legal/renewal_review_memo.md",
        f"# Renewal review - current cycle\n\n"
        f"This review is being run as of {today.day} {today:%B %Y}. Unless a business owner has asked to keep an\n"
        "agreement, we do not want anything to roll over automatically. Please raise a non-renewal notice for\n"
        f"every active, auto-renewing contract whose notice deadline falls within the next {window} days, counting\n"
        "today as day zero and including the last day.\n\n"
        "The notice deadline is the last day on which the counterparty must have received our notice: the end of\n"
        "the current term minus the notice period, in calendar days. A contract that has already rolled over is\n"
        "in a renewal term, which runs for the renewal period stated in the contract from the end of the previous\n"
        "term. Remember that amendments override the original terms; where a clause was amended more than once,\n"
        "the most recently signed amendment is the one in force. If a deadline has already passed there is\n"
        "nothing we can do this cycle, so do not raise a notice for it.\n\n"
        "Each notice must be sent to the counterparty's legal contact address on file.\n"
    )
    ctx.write("legal/renewal_review_2025.md",
        "# Renewal review - 2025 cycle (SUPERSEDED)\n\n"
        f"This memo is superseded by the current cycle's memo. Last year we ran the review as of 3 November 2025\n"
        f"and looked {window + 30} days ahead, sending notices to the account managers rather than legal contacts.\n"
    )
    ctx.write("mail/local_counsel_deadlines.eml",
        f"From: general.counsel@ourco.example\nSubject: Non-renewal notices abroad\n\n"
        f"Team, for agreements with counterparties based in {buffer_country}, local counsel reminds us that\n"
        "notices go by registered post and service is only effective on receipt. Please treat the deadline for\n"
        f"those contracts as {buffer_days} days earlier than the contractual date, and use that earlier date both\n"
        "when deciding whether a notice is due now and as the deadline recorded on the notice.\n\nThanks\n"
    )
    keep_phrases = ["the business owner wants to keep it", "operations asked us to keep this one",
                    "finance confirmed it must be kept"]
    lines = [f"- {kept_in_window['contract_no']} ({cp_name[kept_in_window['counterparty_id']]}): {keep_phrases[0]}."]
    others = rng.sample([c for c in contracts if c["id"] not in crafted], 2)
    for c, phrase in zip(others, keep_phrases[1:]):
        lines.append(f"- {c['contract_no']} ({cp_name[c['counterparty_id']]}): {phrase}.")
    lines.append(f"- {lapse_ok['contract_no']} ({cp_name[lapse_ok['counterparty_id']]}): discussed; nobody objects to ending it.")
    rng.shuffle(lines)
    ctx.write("legal/business_owner_minutes.txt",
        "Minutes - contract owners' call\n\nWe walked through the agreements coming up for renewal.\n"
        + "\n".join(lines) + "\nAny agreement not listed above was not discussed.\n"
    )
    topics = ["NDA template update", "trademark renewal filing", "data processing addendum", "litigation hold",
              "board resolution filing", "insurance certificate", "office lease break clause", "GDPR training"]
    for i in range(ctx.size("distractors")):
        c = rng.choice(contracts)
        folder = "mail" if i % 2 else "legal"
        ctx.write(f"{folder}/note_{i:03d}_{topics[i % len(topics)].replace(' ', '_')}.txt",
            f"Re: {topics[i % len(topics)]}\n\nA quick update for the file. {cp_name[c['counterparty_id']]} asked about\n"
            f"{c['contract_no']} again; they want a copy of the signed version. No action on renewals is needed for\n"
            f"this; the notice period question was settled in {rng.randint(2019, 2024)}. Ref {rng.randint(1000, 9999)}.\n"
        )
    kept = sorted([kept_in_window["contract_no"]] + [c["contract_no"] for c in others])
    ctx.facts(kept=kept)
