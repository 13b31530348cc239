"""State for insurance_claims/fraud_flag_review: claimants, policies, motor claims and SIU's indicator card."""
import datetime as dt

FIRST = ["Adrian", "Beth", "Callum", "Delia", "Euan", "Fiona", "Gareth", "Holly", "Ivor", "Jenna", "Kieran", "Lorna", "Magnus",
         "Nina", "Owen", "Pippa", "Rory", "Shona", "Tobias", "Una"]
LAST = ["Aird", "Baird", "Cairns", "Docherty", "Ewing", "Forsyth", "Gillies", "Hendry", "Imrie", "Jardine", "Keir", "Lennox",
        "Munro", "Niven", "Ogilvie", "Paton", "Rennie", "Sinclair"]
SHOP_WORDS = ["Autofix", "Bodyworks", "Carcare", "Dentaway", "Express Repairs", "Fastlane", "Garage One", "Highway Motors",
              "Ignition", "Junction Autos", "Kerbside", "Lowgear"]
TODAY = dt.date(2026, 11, 30)


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE claimants (id INTEGER PRIMARY KEY, name TEXT, phone TEXT, bank_account TEXT);
        CREATE TABLE policies (id INTEGER PRIMARY KEY, policy_no TEXT, claimant_id INTEGER, inception TEXT);
        CREATE TABLE repair_shops (id INTEGER PRIMARY KEY, name TEXT, town TEXT);
        CREATE TABLE claims (id INTEGER PRIMARY KEY, claim_no TEXT UNIQUE, policy_id INTEGER, claimant_id INTEGER, peril TEXT,
            loss_date TEXT, reported_date TEXT, amount REAL, shop_id INTEGER, status TEXT);
        CREATE TABLE flags (id INTEGER PRIMARY KEY, claim_id INTEGER, score INTEGER);
        CREATE TABLE referrals (id INTEGER PRIMARY KEY, flag_id INTEGER, note TEXT);
        """
    )
    perils = ctx.choices("excluded_peril")  # every motor peril: the request may leave out any of them
    pts = {"new_policy": rng.choice([25, 30, 35]), "repeat": rng.choice([15, 20]), "shared_bank": rng.choice([25, 30]),
           "watch_shop": rng.choice([10, 15]), "late": rng.choice([10, 15]), "inflated": rng.choice([20, 25])}
    new_days, late_days, repeat_n = rng.choice([30, 60, 90]), rng.choice([21, 30]), rng.choice([2, 3])
    inflate = rng.choice([2, 3])
    threshold = rng.choice([40, 45, 50])
    capacity = ctx.params["siu_capacity"]

    claimants = []
    for cid in range(1, ctx.size("claimants") + 1):
        claimants.append([cid, f"{rng.choice(FIRST)} {rng.choice(LAST)}", f"07{rng.randint(100000000, 999999999)}", f"GB{rng.randint(10, 99)}BANK{rng.randint(10000000, 99999999)}"])
    # A few claimants share a bank account (a ring).
    for a, b in [(rng.randint(1, len(claimants)), rng.randint(1, len(claimants))) for _ in range(max(2, len(claimants) // 20))]:
        if a != b:
            claimants[b - 1][3] = claimants[a - 1][3]
    db.executemany("INSERT INTO claimants VALUES (?,?,?,?)", claimants)
    policies = []
    for cid in range(1, len(claimants) + 1):
        inception = TODAY - dt.timedelta(days=rng.randint(10, 1500))
        policies.append((cid, f"MP{rng.randint(1000000, 9999999)}", cid, inception.isoformat()))
    shops = [(sid, SHOP_WORDS[(sid - 1) % len(SHOP_WORDS)] + ("" if sid <= len(SHOP_WORDS) else f" {sid}"),
              rng.choice(["Leith", "Paisley", "Dundee", "Perth", "Stirling"])) for sid in range(1, ctx.size("shops") + 1)]
    db.executemany("INSERT INTO repair_shops VALUES (?,?,?)", shops)
    watch = sorted(rng.sample([s[0] for s in shops], k=max(2, len(shops) // 5)))

    claims, seq = [], 0
    base = {"collision": 2400, "theft": 6000, "vandalism": 900, "windscreen": 350, "fire": 8000}

    def add(cid, status, loss, delay, amount=None, peril=None):
        nonlocal seq
        seq += 1
        peril = peril or rng.choice(perils)
        amount = amount if amount is not None else round(base[peril] * rng.uniform(0.5, 1.6), 2)
        claims.append({"id": seq, "claim_no": f"MC{26000 + seq * 7}", "policy_id": cid, "claimant_id": cid, "peril": peril,
                       "loss_date": loss.isoformat(), "reported_date": (loss + dt.timedelta(days=delay)).isoformat(), "amount": amount,
                       "shop_id": rng.randint(1, len(shops)), "status": status})
        return claims[-1]

    for _ in range(ctx.size("closed_claims")):
        cid = rng.randint(1, len(claimants))
        inc = dt.date.fromisoformat(policies[cid - 1][3])
        loss = inc + dt.timedelta(days=rng.randint(0, max(1, (TODAY - inc).days - 40)))
        add(cid, "closed", loss, rng.randint(0, 12))
    for _ in range(ctx.size("open_claims")):
        cid = rng.randint(1, len(claimants))
        inc = dt.date.fromisoformat(policies[cid - 1][3])
        loss = max(inc, TODAY - dt.timedelta(days=rng.randint(5, 60)))
        c = add(cid, "open", loss, rng.choice([0, 1, 2, 3, 5, 8, late_days, late_days + rng.randint(1, 20)]))
        if rng.random() < 0.1:
            c["amount"] = round(base[c["peril"]] * rng.uniform(3.2, 5.0), 2)
    # Pinned: one claim already with SIU, and one cleared by a senior handler despite a high score.
    open_claims = [c for c in claims if c["status"] == "open"]
    already = open_claims[0]
    already["status"] = "with SIU"
    cleared = open_claims[1]
    cleared.update(shop_id=watch[-1], amount=round(base[cleared["peril"]] * 4.5, 2), reported_date=(dt.date.fromisoformat(cleared["loss_date"]) + dt.timedelta(days=late_days + 9)).isoformat())
    # Enough clear-cut suspicious claims that SIU's capacity always binds.
    # Their perils cycle through every peril, so whichever peril the request leaves out loses flagged claims.
    for i, c in enumerate(open_claims[2:capacity + 4]):
        c["peril"] = perils[i % len(perils)]
        loss = dt.date.fromisoformat(c["loss_date"])
        c.update(amount=round(base[c["peril"]] * rng.uniform(3.5, 5.0), 2), shop_id=rng.choice(watch),
                 reported_date=(loss + dt.timedelta(days=late_days + rng.randint(1, 15))).isoformat())
        inc = loss - dt.timedelta(days=rng.randint(1, new_days))
        policies[c["policy_id"] - 1] = policies[c["policy_id"] - 1][:3] + (inc.isoformat(),)
    # Two claims that tie on score, from fresh claimants with no other history: the amount decides their order,
    # and the one with the lower claim number has the smaller amount, so ordering by claim number alone is wrong.
    tie_peril = rng.choice([p for p in perils if p != ctx.params["excluded_peril"]])
    for k, factor in enumerate((4.0, 4.6)):
        cid = len(claimants) + 1
        claimants.append([cid, f"{rng.choice(FIRST)} {rng.choice(LAST)}", f"07{rng.randint(100000000, 999999999)}", f"GB00TIE{cid:08d}"])
        loss = TODAY - dt.timedelta(days=rng.randint(5, 15))
        policies.append((cid, f"MP{rng.randint(1000000, 9999999)}", cid, (loss - dt.timedelta(days=rng.randint(1, new_days))).isoformat()))
        c = add(cid, "open", loss, late_days + rng.randint(1, 9), amount=round(base[tie_peril] * factor, 2), peril=tie_peril)
        c["shop_id"] = watch[0]
    db.executemany("INSERT INTO claimants VALUES (?,?,?,?)", claimants[-2:])
    db.executemany("INSERT INTO policies VALUES (?,?,?,?)", policies)
    db.executemany("INSERT INTO claims VALUES (:id, :claim_no, :policy_id, :claimant_id, :peril, :loss_date, :reported_date, :amount, :shop_id, :status)", claims)

    # --- workspace ---------------------------------------------------------------------------------
    words = {2: "twice", 3: "three times"}
    ctx.write("siu/indicator_card.md",
        "# SIU fraud indicator card (motor)\n\nAdd the points for every indicator an open claim shows:\n\n"
        f"- the loss happened within {new_days} days of the policy's inception date: {pts['new_policy']} points\n"
        f"- the same claimant has at least {repeat_n} other claims with a loss date in the 365 days before {TODAY.day} {TODAY.strftime('%B %Y')} "
        f"(open or closed): {pts['repeat']} points\n"
        f"- the claimant's bank account is also held by another claimant: {pts['shared_bank']} points\n"
        f"- the repair shop is on SIU's watch list: {pts['watch_shop']} points\n"
        f"- the claim was reported more than {late_days} days after the loss: {pts['late']} points\n"
        f"- the amount claimed is more than {words[inflate]} ({inflate} times) the median amount of all our claims (open and closed) for the same peril: "
        f"{pts['inflated']} points\n\n"
        f"Flag every claim scoring {threshold} points or more. Rank flagged claims by score, highest first; break ties by the larger "
        "amount claimed, then by claim number. Claims already with SIU are not scored again.\n")
    watch_names = ", ".join(shops[s - 1][1] for s in watch)
    ctx.write("siu/watch_list.eml",
        f"From: siu@insurer.example\nSubject: Repair shop watch list\n\nThe current watch list is: {watch_names}. Treat any claim "
        "repaired at one of these as showing the watch-list indicator.\n")
    ctx.write("siu/capacity_this_week.eml",
        "From: siu-lead@insurer.example\nSubject: Referrals this week\n\nWe are short-staffed: please refer no more than the "
        "number of claims agreed in this week's screening request, the highest ranked first. Flag the others as usual so we can pick them up later.\n")
    notes = [f"{cleared['claim_no']}: senior handler review complete - the late report and the high amount are fully explained "
             "(hospital stay, specialist vehicle). Cleared: do not flag or refer this claim."]
    for _ in range(ctx.size("handler_notes")):
        c = rng.choice(claims)
        notes.append(f"{c['claim_no']}: {rng.choice(['engineer report received', 'customer chased for photos', 'hire car extended', 'liability agreed'])}.")
    rng.shuffle(notes)
    for i, n in enumerate(notes, 1):
        ctx.write(f"notes/handler_note_{i:03d}.txt", f"Claims handler note\n\n{n}\n")
    for i in range(ctx.size("newsletters")):
        ctx.write(f"news/newsletter_{i:03d}.md",
            f"# Claims newsletter {i + 1}\n\n{rng.choice(['Winter driving tips', 'New FNOL form', 'Team news', 'Complaint trends'])}. "
            "No change to fraud screening.\n")

    ctx.facts(cleared=cleared["claim_no"])
