"""State for customer_support/sla_escalations: accounts, a ticket queue, past escalations and desk documents."""
from datetime import datetime, timedelta

NOW = datetime(2026, 11, 20, 9, 0)
FIRST = ["Acme", "Brightwave", "Copperleaf", "Dunmore", "Evergreen", "Foxglove", "Granite", "Harbor", "Ivy",
         "Juniper", "Kestrel", "Lumen", "Meridian", "Northgate", "Orchid", "Pioneer", "Quarry", "Rosewood",
         "Sterling", "Tidewater", "Umber", "Vantage", "Willow", "Yardley", "Zephyr"]
SECOND = ["Logistics", "Dental", "Foods", "Studios", "Analytics", "Builders", "Pharmacy", "Outfitters",
          "Legal", "Robotics", "Travel", "Bakery", "Clinics", "Media"]
SUBJECTS = ["Cannot log in", "Invoice shows wrong VAT", "Export to CSV fails", "Password reset loop",
            "Sync stuck at 99%", "Add a new seat", "Webhook not firing", "Report totals look off",
            "Mobile app crashes on start", "Change billing contact", "SSO certificate expired", "Slow dashboard"]
PRIORITIES = ["low", "normal", "high", "urgent"]


def stamp(moment):
    return moment.strftime("%Y-%m-%d %H:%M")


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT UNIQUE, plan TEXT, region TEXT, seats INTEGER);
        CREATE TABLE tickets (id INTEGER PRIMARY KEY, customer_id INTEGER, subject TEXT, priority TEXT, status TEXT,
            channel TEXT, created_at TEXT, first_reply_at TEXT, assignee TEXT);
        CREATE TABLE escalations (id INTEGER PRIMARY KEY, ticket_id INTEGER, team TEXT, reason TEXT, created_at TEXT);
        """
    )
    names = rng.sample([f"{a} {b}" for a in FIRST for b in SECOND], ctx.size("customers"))
    regions = ctx.choices("excluded_region")  # every region: any of them may be left to its own desk
    customers = []
    for cid, name in enumerate(names, start=1):
        plan = rng.choices(["starter", "business", "enterprise"], weights=[4, 4, 2])[0]
        region = rng.choice(regions) if cid > len(regions) else regions[cid - 1]  # every region has accounts
        customers.append((cid, name, plan, region, rng.randint(3, 400)))
    # Fixed roles, chosen so that every scale has them: two VIP accounts that stay VIP, one that is
    # later dropped from the list, one added by the later e-mail, and one enterprise account.
    # They are outside the excluded region, so the traps bite in every instance.
    excluded, margin = ctx.params["excluded_region"], ctx.params["min_overdue_hours"] * 60
    picks = rng.sample([i for i in range(len(customers)) if customers[i][3] != excluded], 5)
    vip_kept, vip_dropped, vip_added, enterprise = [picks[0], picks[1]], picks[2], picks[3], picks[4]
    for idx in vip_kept + [vip_dropped, vip_added]:
        c = customers[idx]
        customers[idx] = (c[0], c[1], rng.choice(["starter", "business"]), c[3], c[4])
    c = customers[enterprise]
    customers[enterprise] = (c[0], c[1], "enterprise", c[3], c[4])
    db.executemany("INSERT INTO customers VALUES (?,?,?,?,?)", customers)

    standard = {"urgent": rng.choice([1, 2]), "high": rng.choice([4, 6, 8]), "normal": rng.choice([12, 16, 24]),
                "low": rng.choice([48, 72])}

    def target(cust_idx, priority):
        hours = standard[priority]
        return hours / 2 if customers[cust_idx][2] == "enterprise" else hours

    tickets = []
    agents = ["Mina", "Tobias", "Priya", "Jonas", "Aiko", "Rafael", None]

    def add(cust_idx, priority, status, age_minutes, replied):
        created = NOW - timedelta(minutes=age_minutes)
        reply = stamp(created + timedelta(minutes=rng.randint(5, max(6, age_minutes - 1)))) if replied else None
        tickets.append([len(tickets) + 1, customers[cust_idx][0], rng.choice(SUBJECTS), priority, status,
                        rng.choice(["email", "chat", "phone", "web"]), stamp(created), reply, rng.choice(agents)])

    for _ in range(ctx.size("tickets") - 14):
        status = rng.choices(["open", "pending", "solved"], weights=[6, 2, 2])[0]
        add(rng.randrange(len(customers)), rng.choices(PRIORITIES, weights=[2, 5, 3, 1])[0], status,
            rng.randint(10, 96 * 60), status == "solved" or rng.random() < 0.45)
    # Guaranteed traps.
    for idx in vip_kept + [vip_dropped, vip_added]:
        pr = rng.choice(["normal", "high"])
        add(idx, pr, "open", int(target(idx, pr) * 60) + margin + rng.randint(30, 600), False)
    pr = rng.choice(["high", "normal"])
    add(enterprise, pr, "open", int(target(enterprise, pr) * 60) + margin + rng.randint(20, int(target(enterprise, pr) * 60) - 10), False)
    # A clear breach in every region (whichever region is excluded changes the sweep), and breaches a quarter
    # of an hour either side of the escalation margin (whichever margin is asked for changes the sweep).
    for region in regions:
        idx = rng.choice([i for i in range(len(customers)) if customers[i][3] == region])
        pr = rng.choice(["normal", "high"])
        add(idx, pr, "open", int(target(idx, pr) * 60) + margin + rng.randint(60, 300), False)
    kept = [i for i in range(len(customers)) if customers[i][3] != excluded]
    for delta in (-15, 15):
        idx = rng.choice(kept)
        pr = rng.choice(["normal", "high"])
        add(idx, pr, "open", int(target(idx, pr) * 60) + margin + delta, False)
    boundary_customer = rng.choice([i for i in range(len(customers)) if customers[i][2] != "enterprise"])
    add(boundary_customer, "normal", "open", standard["normal"] * 60, False)  # exactly on target: not a breach
    add(rng.randrange(len(customers)), "high", "pending", standard["high"] * 60 + 300, False)  # clock paused
    already = len(tickets) + 1
    add(rng.randrange(len(customers)), "urgent", "open", standard["urgent"] * 60 + 500, False)
    rng.shuffle(tickets)
    for new_id, t in enumerate(tickets, start=1):
        if t[0] == already:
            already = new_id
        t[0] = new_id
    db.executemany("INSERT INTO tickets VALUES (?,?,?,?,?,?,?,?,?)", [tuple(t) for t in tickets])

    # Some escalations already exist, including one for a ticket that is breached right now.
    earlier = [already] + rng.sample([t[0] for t in tickets if t[0] != already], 4)
    db.executemany("INSERT INTO escalations (ticket_id, team, reason, created_at) VALUES (?,?,?,?)",
                   [(tid, rng.choice(["tier2", "duty_manager"]), "customer chased by phone",
                     stamp(NOW - timedelta(hours=rng.randint(1, 20)))) for tid in earlier])

    name = lambda idx: customers[idx][1]  # noqa: E731
    ctx.write("policies/service_levels.md",
        "# Service levels for first replies\n\n"
        "Every ticket is owed a first reply from a human agent, and the clock starts when the ticket is created.\n"
        f"For urgent tickets we promise that first reply within {standard['urgent']} hours. High-priority tickets "
        f"get theirs within {standard['high']} hours, normal ones within {standard['normal']} hours, and low-priority "
        f"requests within {standard['low']} hours.\n\n"
        "Accounts on the enterprise plan bought the premium support package, so they are owed half of each of "
        "those times. Reaching the target exactly still counts as on time; it is a breach only once the time "
        "is strictly exceeded.\n\n"
        "While a ticket is pending (we are waiting on the customer) its clock is stopped, so a pending ticket "
        "is never swept. Once a first reply has gone out the ticket has left the first-reply SLA for good, "
        "even if the reply was late.\n\n"
        "Breaches are escalated to tier 2 by default. A ticket that already has an escalation on file is left "
        "alone: do not escalate it a second time, and leave it out of the sweep report.\n"
    )
    ctx.write("inbox/2026-11-03_vip_watch_list.eml",
        "From: helena.kraus@ourdesk.example (Account management)\nTo: support-leads@ourdesk.example\n"
        "Subject: VIP watch list for the quarter\n\n"
        f"Hi all, after the renewal talks we are putting {name(vip_kept[0])}, {name(vip_dropped)} and "
        f"{name(vip_kept[1])} on the VIP watch list. If any of their tickets breaches, it should go straight to "
        "the duty manager instead of tier 2, so someone senior calls them the same day.\n\nThanks, Helena\n"
    )
    ctx.write("inbox/2026-11-17_watch_list_changes.eml",
        "From: helena.kraus@ourdesk.example (Account management)\nTo: support-leads@ourdesk.example\n"
        "Subject: Re: VIP watch list for the quarter\n\n"
        f"Quick update. {name(vip_dropped)} signed the downgrade last week, so they come off the watch list and "
        f"their tickets go back to the normal route. {name(vip_added)} joins the list from today, same treatment "
        "as the others.\n\nHelena\n"
    )
    topics = ["holiday rota", "macro clean-up", "new hire onboarding", "CSAT survey results", "knowledge base audit",
              "phone system outage", "team lunch", "tagging conventions", "chat widget redesign", "quality review"]
    for i in range(ctx.size("inbox_chatter")):
        topic = topics[i % len(topics)]
        someone = customers[rng.randrange(len(customers))][1]
        day = rng.randint(1, 19)
        ctx.write(f"inbox/2026-11-{day:02d}_{topic.replace(' ', '_')}_{i}.eml",
            f"From: desk-ops@ourdesk.example\nSubject: {topic.capitalize()}\n\n"
            f"Hello team, a note about the {topic}. {someone} mentioned it on a call, nothing to action on their "
            f"tickets. Please check the shared calendar before Friday. Ref {rng.randint(1000, 9999)}.\n"
        )
    ctx.write("policies/tone_of_voice.md",
        "# Tone of voice\n\nBe warm, brief and specific. Apologise once, not three times. Never promise a fix date "
        "that engineering has not confirmed. VIP customers appreciate a phone call, but the routing rules in the "
        "service-level policy and the account managers' notes decide who handles a breach.\n"
    )
