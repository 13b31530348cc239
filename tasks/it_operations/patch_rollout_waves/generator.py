"""State for it_operations/patch_rollout_waves: a CMDB of servers, the patch catalogue and the ops team's mail."""
import datetime as dt

SERVICE_WORDS = ["billing", "payroll", "search", "intranet", "ledger", "crm", "mailrelay", "reporting", "ticketing",
                 "inventory", "auth", "gateway", "warehouse", "telemetry", "backup", "printing"]
TEAMS = ["Platform", "Finance Systems", "Digital", "Data", "Workplace IT", "Security"]
ENV_PREFIX = {"dev": "dev", "staging": "stg", "prod": "prd"}


def add_working_days(day, n, holidays):
    while n > 0:
        day += dt.timedelta(days=1)
        if day.weekday() < 5 and day not in holidays:
            n -= 1
    return day


def next_working_day_after(day, holidays):
    return add_working_days(day, 1, holidays)


def long_date(day):
    return f"{day.strftime('%A')} {day.day} {day.strftime('%B %Y')}"


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE services (id INTEGER PRIMARY KEY, name TEXT, tier INTEGER, owner_team TEXT);
        CREATE TABLE hosts (id INTEGER PRIMARY KEY, hostname TEXT UNIQUE, environment TEXT, os TEXT, service_id INTEGER,
            ip TEXT);
        CREATE TABLE patches (id INTEGER PRIMARY KEY, kb TEXT UNIQUE, title TEXT, os TEXT, severity TEXT, released TEXT);
        CREATE TABLE installations (id INTEGER PRIMARY KEY, host_id INTEGER, patch_id INTEGER, installed_on TEXT);
        CREATE TABLE changes (id INTEGER PRIMARY KEY, wave INTEGER, scheduled_date TEXT, summary TEXT, status TEXT);
        CREATE TABLE change_hosts (change_id INTEGER, host_id INTEGER, PRIMARY KEY (change_id, host_id));
        """
    )
    oses = ctx.choices("excluded_os")  # every operating system: the request may pull any one's update
    n_services = ctx.size("services")
    services = []
    for sid in range(1, n_services + 1):
        word = SERVICE_WORDS[(sid - 1) % len(SERVICE_WORDS)]
        name = word if sid <= len(SERVICE_WORDS) else f"{word}{(sid - 1) // len(SERVICE_WORDS) + 1}"
        services.append({"id": sid, "name": name, "tier": 1 if sid % 3 == 1 else rng.choice([2, 3]), "owner_team": rng.choice(TEAMS)})
    db.executemany("INSERT INTO services VALUES (:id, :name, :tier, :owner_team)", services)

    hosts, counters = [], {}
    for hid in range(1, ctx.size("hosts") + 1):
        svc = services[(hid - 1) % n_services] if hid <= 3 * n_services else rng.choice(services)
        env = ["dev", "staging", "prod"][(hid - 1) // n_services % 3] if hid <= 3 * n_services else rng.choice(["dev", "staging", "prod", "prod"])
        key = (env, svc["name"])
        counters[key] = counters.get(key, 0) + 1
        hosts.append({"id": hid, "hostname": f"{ENV_PREFIX[env]}-{svc['name']}-{counters[key]:02d}", "environment": env,
                      "os": rng.choice(oses), "service_id": svc["id"],
                      "ip": f"10.{rng.randint(0, 40)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}"})
    db.executemany("INSERT INTO hosts VALUES (:id, :hostname, :environment, :os, :service_id, :ip)", hosts)

    kb_numbers = rng.sample(range(5030000, 5059999), ctx.size("patches"))
    patches = []
    for pid in range(1, ctx.size("patches") + 1):
        os_name = oses[(pid - 1) % len(oses)]
        patches.append({"id": pid, "kb": f"KB{kb_numbers[pid - 1]}", "os": os_name,
                        "title": f"{rng.choice(['Cumulative', 'Security', 'Servicing stack', 'Kernel'])} update for {os_name}",
                        "severity": rng.choice(["critical", "important", "moderate"]),
                        "released": f"2026-{rng.randint(6, 11):02d}-{rng.randint(1, 28):02d}"})
    db.executemany("INSERT INTO patches VALUES (:id, :kb, :title, :os, :severity, :released)", patches)
    # This cycle: one patch for each operating system; the request holds one of them back.
    cycle = [patches[i] for i in rng.sample(range(len(oses)), len(oses))]
    cycle_os = {p["os"]: p for p in cycle if p["os"] != ctx.params["excluded_os"]}

    installs, done = [], set()
    for iid in range(1, ctx.size("installations") + 1):
        h = rng.choice(hosts)
        same_os = [p for p in patches if p["os"] == h["os"]]
        p = rng.choice(same_os)
        if (h["id"], p["id"]) in done:
            continue
        done.add((h["id"], p["id"]))
        installs.append((h["id"], p["id"], f"2026-{rng.randint(7, 11):02d}-{rng.randint(1, 28):02d}"))
    db.executemany("INSERT INTO installations (host_id, patch_id, installed_on) VALUES (?,?,?)", installs)

    needing = [h for h in hosts if h["os"] in cycle_os and (h["id"], cycle_os[h["os"]]["id"]) not in done]
    svc_by_id = {s["id"]: s for s in services}
    # Exceptions, chosen among servers that need patching so they always matter.
    held = svc_by_id[rng.choice([h for h in needing if h["environment"] == "prod"])["service_id"]]
    pool = [h for h in needing if h["service_id"] != held["id"]]
    decom = rng.sample(pool, k=max(2, len(pool) // 12))
    decom_ids = {h["id"] for h in decom}
    targets = [h for h in pool if h["id"] not in decom_ids]

    def wave_of(h):
        if h["environment"] != "prod":
            return 1 if h["environment"] == "dev" else 2
        return 4 if svc_by_id[h["service_id"]]["tier"] == 1 else 3

    waves = {w: sorted(h["id"] for h in targets if wave_of(h) == w) for w in (1, 2, 3, 4)}
    if not all(waves.values()):
        raise RuntimeError("a rollout wave came out empty; adjust the host mix")

    start = dt.datetime.strptime(ctx.params["first_wave_date"], "%A %d %B %Y").date()
    gap = rng.choice([2, 3])
    holiday = next_working_day_after(start, set())
    holidays = {holiday}
    wave_dates = {1: start, 2: add_working_days(start, gap, holidays)}
    # The freeze starts on or just before the staging wave (which it does not cover) and swallows wave 3.
    freeze_start = wave_dates[2] - dt.timedelta(days=rng.randint(0, 2))
    raw3 = add_working_days(wave_dates[2], gap, holidays)
    freeze_end = raw3 + dt.timedelta(days=rng.randint(1, 4))

    # --- workspace ---------------------------------------------------------------------------------
    kb_list = ", ".join(f"{p['kb']} ({p['os']})" for p in cycle)
    ctx.write("mail/cycle_announcement.eml",
        f"From: patching@ops.example\nSubject: December patch cycle\n\nHello all,\n\nThis month's cycle covers the "
        f"following updates only: {kb_list}. Nothing else from the catalogue is in scope. Any server running one of "
        f"those operating systems that does not yet have its update installed is in scope.\n\nThe patch manager "
        f"confirms the date of the first wave.\n\nPatching team\n")
    words = {2: "two", 3: "three"}[gap]
    ctx.write("standards/patching_standard.md",
        "# Server patching standard\n\n"
        "Servers are patched in four waves so that problems surface on the least important machines first:\n\n"
        "1. development servers;\n2. staging servers;\n3. production servers of tier 2 and tier 3 services;\n"
        "4. production servers of tier 1 services.\n\n"
        f"Each wave is scheduled {words} working days after the date the previous wave actually went out. "
        "Weekends and site holidays are not working days. Raise one change per wave and attach every server "
        "of that wave to it.\n")
    ctx.write("mail/change_freeze.eml",
        f"From: cab@ops.example\nSubject: Change freeze\n\nReminder: there is a change freeze on production systems from "
        f"{long_date(freeze_start)} until {long_date(freeze_end)}, both days included. Development and staging "
        f"environments are not covered by the freeze. Production work that would fall inside it moves to the first "
        f"working day after the freeze ends.\n\nChange Advisory Board\n")
    ctx.write("mail/site_closure.eml",
        f"From: facilities@ops.example\nSubject: Site closed for the office move\n\nThe data centre team will be "
        f"moving offices on {long_date(holiday)}; treat it as a site holiday - nobody is available for changes that day.\n")
    ctx.write(f"mail/hold_{held['name']}.eml",
        f"From: {held['owner_team'].lower().replace(' ', '.')}@ops.example\nSubject: Please skip {held['name']} this month\n\n"
        f"Hi patching team, we're waiting on our vendor to certify the new builds, so please leave every {held['name']} "
        f"server (all environments) out of this month's cycle. We'll catch up next month.\n")
    listing = "\n".join(f"  {h['hostname']}" for h in sorted(decom, key=lambda h: h["hostname"]))
    ctx.write("runbooks/decommission_tracker.txt",
        "Decommissioning tracker\n\nThe servers below are being switched off this month. Do not patch them, "
        f"the effort is wasted:\n{listing}\n")
    topics = ["backup restore drill", "certificate renewals", "on-call swap", "monitoring noise", "disk cleanup",
              "vpn maintenance", "laptop refresh", "printer queue", "dns migration", "log retention"]
    for i in range(ctx.size("team_emails")):
        svc = rng.choice(services)
        topic = topics[i % len(topics)]
        ctx.write(f"mail/team_{i:03d}_{topic.replace(' ', '_')}.eml",
            f"From: {svc['owner_team'].lower().replace(' ', '.')}@ops.example\nSubject: {topic}\n\nQuick note on the {topic} "
            f"for {svc['name']}: nothing needed from the patching team, the servers stay in the normal cycle. "
            f"Ticket {rng.randint(10000, 99999)}.\n")
    for i in range(ctx.size("runbooks")):
        os_name = rng.choice(oses)
        ctx.write(f"runbooks/runbook_{i:03d}.md",
            f"# Reboot runbook {i + 1} ({os_name})\n\nDrain the node from the load balancer, apply updates, reboot, "
            f"check the service health page, then put the node back. Expect about {rng.randint(10, 40)} minutes.\n")

    excluded = sorted([h["id"] for h in needing if h["service_id"] == held["id"]] + list(decom_ids))
    ctx.facts(excluded=excluded)
