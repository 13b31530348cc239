"""State for grant_management/reviewer_assignment: proposals, reviewers, co-authorship records and panel mail."""

INSTITUTIONS = ["Uppsala", "Leiden", "Ghent", "Bologna", "Porto", "Tartu", "Aarhus", "Graz", "Basel", "Krakow"]
GIVEN = ["Agnes", "Boris", "Carmen", "Dieter", "Elena", "Filip", "Greta", "Henri", "Irene", "Jakob", "Katrin", "Luis",
         "Marta", "Nils", "Olga", "Pieter", "Rosa", "Stefan", "Tereza", "Viktor"]
FAMILY = ["Andersson", "Bakker", "Conti", "Dvorak", "Esposito", "Fischer", "Gomez", "Horvat", "Ivanov", "Jansen",
          "Kowalczyk", "Larsen", "Moreau", "Novak", "Oliveira", "Peeters", "Rossi", "Schmid", "Tamm", "Virtanen"]
WORDS = ["Adaptive", "Resilient", "Scalable", "Hidden", "Coupled", "Emergent", "Long-term", "Multi-scale"]
THINGS = {"ecology": "wetland food webs", "materials": "porous ceramics", "neuroscience": "cortical circuits",
          "climate": "Arctic cloud feedbacks", "genomics": "regulatory variants", "robotics": "soft grippers"}


def address(name, institution):
    return f"{name.lower().replace('. ', '.').replace(' ', '.')}@{institution.lower()}.example"


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE proposals (id INTEGER PRIMARY KEY, ref TEXT UNIQUE, title TEXT, topic TEXT, pi_name TEXT,
            institution TEXT, co_investigators TEXT, requested_amount INTEGER, summary TEXT);
        CREATE TABLE reviewers (id INTEGER PRIMARY KEY, name TEXT UNIQUE, institution TEXT, expertise TEXT, max_load INTEGER);
        CREATE TABLE collaborations (id INTEGER PRIMARY KEY, reviewer_id INTEGER, coauthor TEXT, year INTEGER, venue TEXT);
        CREATE TABLE assignments (id INTEGER PRIMARY KEY, proposal_id INTEGER, reviewer_id INTEGER);
        """
    )
    per_proposal = rng.choice([2, 3])
    cap = rng.choice([3, 4])
    years = ctx.params["coi_years"]
    topics = ctx.choices("deferred_topic")  # the round's topics: the request may defer any of them
    people = rng.sample([f"{g} {m}. {f}" for g in GIVEN for m in "BKW" for f in FAMILY], ctx.size("reviewers") + ctx.size("proposals") * 2)
    reviewer_names, outsiders = people[:ctx.size("reviewers")], people[ctx.size("reviewers"):]

    reviewers = []
    for rid, name in enumerate(reviewer_names, start=1):
        expertise = sorted(rng.sample(topics, 2)) if rid > len(topics) else sorted({topics[rid - 1], rng.choice(topics)})
        reviewers.append((rid, name, rng.choice(INSTITUTIONS), ",".join(expertise), rng.choice([2, 3, 4, 5, 6])))
    proposals = []
    for pid in range(1, ctx.size("proposals") + 1):
        topic = topics[pid % len(topics)]
        pi = outsiders[2 * (pid - 1)]
        co = [outsiders[2 * (pid - 1) + 1]]
        if rng.random() < 0.2:  # a reviewer named as co-investigator
            co.append(rng.choice(reviewer_names))
        summary = (f"We will study {THINGS[topic]} using {rng.choice(['field campaigns', 'new instruments', 'large cohorts', 'simulation'])} "
                   f"over {rng.randint(2, 5)} years, with {rng.randint(1, 4)} doctoral students and partners in "
                   f"{rng.choice(INSTITUTIONS)}. Outcomes include open data and {rng.choice(['a software toolkit', 'policy briefs', 'a public dataset'])}.")
        proposals.append([pid, f"RG-2026-{pid:04d}", f"{rng.choice(WORDS)} {THINGS[topic]}", topic, pi, rng.choice(INSTITUTIONS),
                          "; ".join(co), rng.randint(15, 90) * 10000, summary])

    collaborations = []
    for r in reviewers:
        for _ in range(rng.randint(1, 7)):
            collaborations.append((r[0], rng.choice(outsiders), rng.randint(2015, 2026), rng.choice(["Nature Comms", "PLOS One", "J. Appl. Phys.", "eLife"])))

    # Guaranteed conflicts and boundaries for the first proposal whose topic stays in this round.
    first = next(p for p in proposals if p[3] != ctx.params["deferred_topic"])
    experts = [r for r in reviewers if first[3] in r[3].split(",")]
    same_inst, coauthor_recent, coauthor_old, recuser, coinv = rng.sample(experts, 5)
    first[5] = same_inst[2]
    # The co-authors sit at the window's edges; keep them clear of the institution rule so the window decides.
    for r in (coauthor_recent, coauthor_old):
        if r[2] == first[5]:
            reviewers[r[0] - 1] = r[:2] + (rng.choice([i for i in INSTITUTIONS if i != first[5]]),) + r[3:]
    collaborations.append((coauthor_recent[0], first[4], 2026 - years + 1, "eLife"))
    collaborations.append((coauthor_old[0], first[4], 2026 - years, "PLOS One"))
    first[6] = f"{first[6].split('; ')[0]}; {coinv[1]}"
    cast = {r[0] for r in (same_inst, coauthor_recent, coauthor_old, recuser, coinv)}
    unavailable = rng.choice([r for r in reviewers if r[0] not in cast])
    # Institution clashes elsewhere must not make a proposal unstaffable: co-investigator lists only name one reviewer.
    rng.shuffle(collaborations)
    db.executemany("INSERT INTO reviewers VALUES (?,?,?,?,?)", reviewers)
    db.executemany("INSERT INTO proposals VALUES (?,?,?,?,?,?,?,?,?)", [tuple(p) for p in proposals])
    db.executemany("INSERT INTO collaborations (reviewer_id, coauthor, year, venue) VALUES (?,?,?,?)", collaborations)

    ctx.write("panel/review_guidelines.md",
        "# Review panel guidelines, 2026 round\n\n"
        f"Every proposal is read by {('two', 'three')[per_proposal - 2]} reviewers, each of whom lists the proposal's "
        "topic among their areas of expertise.\n\n"
        "A reviewer has a conflict of interest with a proposal, and must not review it, when they work at the same "
        "institution as the principal investigator, when they are named on the proposal as a co-investigator, when "
        "they have co-authored a paper with the principal investigator within the co-authorship window set for "
        "the round (counting the current year, 2026), or when they have declared a conflict with that proposal themselves.\n\n"
        f"Workload: nobody reviews more than {cap} proposals this round, even where their profile would allow more, "
        "and never more than their own profile limit.\n"
    )
    ctx.write("mail/recusal.eml",
        f"From: {address(recuser[1], recuser[2])}\nSubject: Conflict to declare\n\n"
        f"Dear programme officer, I need to declare a conflict with proposal {first[1]}: the principal investigator "
        f"supervised my doctorate. Please do not send it to me.\n\nBest wishes,\n{recuser[1]}\n"
    )
    ctx.write("mail/sabbatical.eml",
        f"From: {address(unavailable[1], unavailable[2])}\nSubject: This round\n\n"
        "Dear programme officer, I am on sabbatical with very limited connectivity until spring, so I cannot take "
        f"on any reviews in this round. Apologies.\n\n{unavailable[1]}\n"
    )
    topics_chat = ["panel meeting date", "travel reimbursement", "scoring rubric", "conflict form reminder",
                   "video call link", "budget guidance", "deadline extension request"]
    for i in range(ctx.size("panel_mail")):
        r = rng.choice(reviewers)
        ctx.write(f"mail/note_{i:02d}_{topics_chat[i % len(topics_chat)].replace(' ', '_')}.eml",
            f"From: {address(r[1], r[2])}\nSubject: {topics_chat[i % len(topics_chat)].capitalize()}\n\n"
            f"Dear programme officer, a quick question about the {topics_chat[i % len(topics_chat)]}. I am happy to "
            f"review as planned and have nothing to declare. Regards, {r[1]}\n"
        )
    ctx.facts(cap=cap, unavailable=unavailable[0], recuser=recuser[0], recused=first[0])
