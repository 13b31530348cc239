"""State for marketing_campaigns/budget_reallocation: campaigns with weekly performance, the memo and team notes."""
from datetime import date, timedelta

CHANNELS = ["search", "social", "display", "video", "affiliate"]
PRODUCTS = ["Trail Shoes", "Rain Jackets", "Yoga Mats", "Smart Bottles", "Kids Boots", "Wool Socks", "Backpacks",
            "Camp Stoves", "Headlamps", "Bike Lights"]
MARKETS = ["DE", "FR", "NL", "UK", "ES", "IT", "SE", "PL"]
LAST_WEEK = date(2026, 11, 23)
WEEKS = 12


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE campaigns (id INTEGER PRIMARY KEY, name TEXT UNIQUE, channel TEXT, market TEXT, status TEXT,
            monthly_budget REAL);
        CREATE TABLE weekly_metrics (id INTEGER PRIMARY KEY, campaign_id INTEGER, week_start TEXT, spend REAL,
            revenue REAL, conversions INTEGER);
        CREATE TABLE budget_changes (id INTEGER PRIMARY KEY, campaign_id INTEGER, old_budget REAL, new_budget REAL, note TEXT);
        """
    )
    window = rng.choice([4, 6, 8])
    cut_count = rng.choice([4, 5, 6])
    names = rng.sample([f"{p} {m} {c}" for p in PRODUCTS for m in MARKETS for c in ("Prospecting", "Retargeting", "Always-on", "Lookalike", "Seasonal")],
                       ctx.size("campaigns"))
    campaigns = []
    for cid, name in enumerate(names, start=1):
        status = "ended" if rng.random() < 0.08 else "active"
        channel = "brand" if cid % 9 == 0 else rng.choice(CHANNELS)
        campaigns.append([cid, name, channel, name.split()[-2], status, float(rng.randint(20, 120) * 100)])
    for c in campaigns:
        c[1] = f"{c[1]} ({c[2]})"
    active = [c for c in campaigns if c[4] == "active"]
    brand = [c for c in active if c[2] == "brand"]
    if not brand:
        active[0][2], active[0][1] = "brand", active[0][1].rsplit(" (", 1)[0] + " (brand)"
        brand = [active[0]]
    ranked = [c for c in active if c[2] != "brand"]
    paused = rng.choice(ranked)
    ranked.remove(paused)

    # Return on ad spend, in whole percent, inside the window: distinct values except one tie exactly at the
    # cut line, so the tie-break decides who is cut.
    percents = sorted(rng.sample(range(-30, 420), len(ranked)))
    percents[cut_count] = percents[cut_count - 1]
    rng.shuffle(ranked)
    roi = {c[0]: percents[i] for i, c in enumerate(ranked)}
    for c in brand:
        roi[c[0]] = -60 + brand.index(c)          # would be cut first if brand were not exempt
    roi[paused[0]] = 450                          # would receive money if it were not being paused
    for c in campaigns:
        roi.setdefault(c[0], rng.randint(-50, 300))
    # The tied campaign with the higher id has more conversions, so a tie broken by id picks the wrong one.
    tie_pair = sorted((c[0] for c in ranked if roi[c[0]] == percents[cut_count]), reverse=True)

    metrics = []
    first_in_window = LAST_WEEK - timedelta(weeks=window - 1)
    for c in campaigns:
        weekly_conversions = {tie_pair[0]: 40, tie_pair[1]: 20}.get(c[0], rng.randint(5, 60))
        for w in range(WEEKS):
            start = LAST_WEEK - timedelta(weeks=WEEKS - 1 - w)
            spend = round(rng.uniform(200, 1500), 2)
            percent = roi[c[0]] if start >= first_in_window else rng.randint(-40, 500)
            conversions = weekly_conversions + rng.randint(0, 3)
            metrics.append((c[0], start.isoformat(), spend, round(spend * (1 + percent / 100), 2), conversions))
    rng.shuffle(metrics)
    db.executemany("INSERT INTO campaigns VALUES (?,?,?,?,?,?)", [tuple(c) for c in campaigns])
    db.executemany("INSERT INTO weekly_metrics (campaign_id, week_start, spend, revenue, conversions) VALUES (?,?,?,?,?)", metrics)

    ctx.write("memos/december_budget_shuffle.md",
        "# December budget shuffle\n\n"
        f"Rank every active campaign by its return on ad spend over the last {window} complete weeks, the most "
        f"recent of which started on Monday 23 November. Return on ad spend is revenue minus spend, divided by spend, "
        "over that whole period, and we compare it in whole percent (round to the nearest percent). When two "
        "campaigns are level, the one with more conversions over the same weeks ranks higher.\n\n"
        f"The {cut_count} lowest-ranked campaigns each lose a percentage of their monthly budget. All of the money "
        "taken from them is shared equally among the highest-ranked campaigns; the request for each shuffle sets the "
        "percentage and how many campaigns share the money. Round each share down to "
        "the cent and give any cents left over to the top-ranked campaign.\n"
    )
    ctx.write("team_notes/brand_team.eml",
        "From: brand-team@outdoorco.example\nSubject: Brand campaigns and the shuffle\n\n"
        "Hi, just a reminder that our brand campaigns run on a contractual media plan. They cannot be cut, so please "
        "skip them when picking the lowest-ranked campaigns and take the next ones up instead. They don't need any "
        "extra money either.\n"
    )
    ctx.write("team_notes/paused_campaign.eml",
        "From: performance-team@outdoorco.example\nSubject: Pausing one campaign\n\n"
        f"Heads-up: {paused[1]} will be paused for the whole of December while the product is out of stock. Leave "
        "it out of the shuffle completely: don't rank it, don't cut it, don't top it up.\n"
    )
    chatter = ["creative refresh", "attribution model", "agency invoice", "landing page tests", "Q1 planning",
               "tracking audit", "holiday calendar", "reporting dashboard"]

    def team_update(topic: str) -> str:
        sender, mentioned = rng.choice(CHANNELS), rng.choice(campaigns)[1]
        return (f"From: {sender}-team@outdoorco.example\nSubject: {topic.capitalize()}\n\nQuick note on the {topic}: "
                f"{mentioned} had a good week. No budget action needed from this. Numbers in the dashboard, "
                f"ref {rng.randint(100, 999)}.\n")

    updates = [chatter[i % len(chatter)] for i in range(ctx.size("team_updates"))]
    for i, topic in enumerate(updates):
        ctx.write(f"team_notes/update_{i:02d}_{topic.replace(' ', '_')}.eml", team_update(topic))
