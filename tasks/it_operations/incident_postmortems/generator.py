"""State for it_operations/incident_postmortems: services, incidents with event timelines, changes and review notes."""
import datetime as dt

SERVICE_NAMES = ["checkout", "search", "identity", "payments", "catalog", "notifications", "reporting", "media", "pricing",
                 "shipping", "reviews", "loyalty"]
TEAMS = ["Storefront", "Platform", "Core Services", "Data", "Mobile"]
COVERAGE_IDS = range(13, 21)  # November incidents pinned to the first eight services, one each


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE services (id INTEGER PRIMARY KEY, name TEXT UNIQUE, tier INTEGER, team TEXT);
        CREATE TABLE changes (id INTEGER PRIMARY KEY, ref TEXT UNIQUE, service_id INTEGER, deployed_at TEXT, summary TEXT);
        CREATE TABLE incidents (id INTEGER PRIMARY KEY, ref TEXT UNIQUE, service_id INTEGER, severity TEXT, opened_at TEXT,
            title TEXT, caused_by_change INTEGER);
        CREATE TABLE incident_events (id INTEGER PRIMARY KEY, incident_id INTEGER, at TEXT, kind TEXT, note TEXT);
        CREATE TABLE postmortems (id INTEGER PRIMARY KEY, incident_id INTEGER, owner_team TEXT, due_date TEXT);
        CREATE TABLE postmortem_links (postmortem_id INTEGER, change_id INTEGER, PRIMARY KEY (postmortem_id, change_id));
        """
    )
    services = []
    for sid in range(1, ctx.size("services") + 1):
        base = SERVICE_NAMES[(sid - 1) % len(SERVICE_NAMES)]
        services.append({"id": sid, "name": base if sid <= len(SERVICE_NAMES) else f"{base}-{(sid - 1) // len(SERVICE_NAMES) + 1}",
                         "tier": 1 if sid % 3 == 1 else 2, "team": rng.choice(TEAMS)})
    db.executemany("INSERT INTO services VALUES (:id, :name, :tier, :team)", services)
    changes = []
    for cid in range(1, ctx.size("changes") + 1):
        when = dt.datetime(2026, 10, 20) + dt.timedelta(minutes=rng.randint(0, 60 * 24 * 50))
        changes.append({"id": cid, "ref": f"CHG{40000 + cid * 3}", "service_id": rng.randint(1, len(services)),
                        "deployed_at": when.strftime("%Y-%m-%d %H:%M"), "summary": rng.choice(["config update", "release", "schema migration", "library bump"])})
    db.executemany("INSERT INTO changes VALUES (:id, :ref, :service_id, :deployed_at, :summary)", changes)

    budgets = {1: rng.choice([30, 45, 60]), 2: rng.choice([90, 120, 180])}
    sev2_limit = rng.choice([30, 45, 60])
    pm_days = rng.choice([3, 5])
    incidents, events = [], []
    stamp = lambda t: t.strftime("%Y-%m-%d %H:%M")
    excluded_id = SERVICE_NAMES.index(ctx.params["excluded_service"]) + 1
    for iid in range(1, ctx.size("incidents") + 1):
        svc = rng.choice(services)
        if iid in COVERAGE_IDS:  # every service has a November incident, so whichever is left out matters
            svc = services[iid - COVERAGE_IDS[0]]
        # Mostly November, some just outside it (in UTC, which is what the standard uses).
        if iid % 10 == 1:
            opened = dt.datetime(2026, 10, 31, 23, 0) + dt.timedelta(minutes=rng.randint(0, 50))
        elif iid % 10 == 2:
            opened = dt.datetime(2026, 12, 1, 0, 5) + dt.timedelta(minutes=rng.randint(0, 300))
        else:
            opened = dt.datetime(2026, 11, 1) + dt.timedelta(minutes=rng.randint(0, 60 * 24 * 29 + 1380))
        sev = rng.choices(["sev1", "sev2", "sev3"], [0.2, 0.4, 0.4])[0]
        ack = opened + dt.timedelta(minutes=rng.randint(1, 25))
        mitigated = ack + dt.timedelta(minutes=rng.randint(5, 150))
        resolved = mitigated + dt.timedelta(minutes=rng.randint(10, 400))
        cause = rng.choice([c for c in changes if c["service_id"] == svc["id"]] or [None]) if rng.random() < 0.4 else None
        incidents.append({"id": iid, "ref": f"INC-{5000 + iid * 7}", "service_id": svc["id"], "severity": sev, "opened_at": stamp(opened),
                          "title": f"{svc['name']} {rng.choice(['errors elevated', 'latency high', 'partial outage', 'login failures'])}",
                          "caused_by_change": cause["id"] if cause else None})
        timeline = [(opened, "opened"), (ack, "acknowledged"), (mitigated, "mitigated"), (resolved, "resolved")]
        if rng.random() < 0.15:  # reopened and resolved again later
            again = resolved + dt.timedelta(minutes=rng.randint(30, 600))
            timeline += [(again, "reopened"), (again + dt.timedelta(minutes=rng.randint(20, 240)), "resolved")]
        timeline.append((opened + dt.timedelta(minutes=rng.randint(2, 20)), "note"))
        for at, kind in timeline:
            events.append((iid, stamp(at), kind, "" if kind != "note" else rng.choice(["status page updated", "exec update sent", "vendor engaged"])))
    # Duplicates: later incidents filed for the same problem; they are excluded everywhere.
    nov = [i for i in incidents if i["opened_at"].startswith("2026-11")]
    # The two pinned cases below are never on the excluded service, and the coverage incidents are never duplicates.
    traps = [i for i in nov if i["service_id"] != excluded_id and i["id"] not in COVERAGE_IDS][:2]
    dupes = {}
    for inc in rng.sample([i for i in nov if i not in traps and i["id"] not in COVERAGE_IDS], k=max(2, len(nov) // 12)):
        original = rng.choice([i for i in nov if i["id"] != inc["id"] and i["id"] not in dupes])
        dupes[inc["id"]] = original["id"]
    # Guarantee: one sev1 incident in November, and a sev2 with mitigation time right at the limit (not over).
    traps[0]["severity"] = "sev1"
    traps[1]["severity"] = "sev2"
    opened1 = dt.datetime.strptime(traps[1]["opened_at"], "%Y-%m-%d %H:%M")
    events = [e for e in events if not (e[0] == traps[1]["id"] and e[2] == "mitigated")]
    events.append((traps[1]["id"], stamp(opened1 + dt.timedelta(minutes=sev2_limit)), "mitigated", ""))
    # ...and the sev1 one was reopened, so only its last resolution counts.
    if not any(e[0] == traps[0]["id"] and e[2] == "reopened" for e in events):
        last = max(parse_at for iid, parse_at, kind, _ in events if iid == traps[0]["id"] and kind == "resolved")
        again = dt.datetime.strptime(last, "%Y-%m-%d %H:%M") + dt.timedelta(minutes=rng.randint(60, 900))
        events += [(traps[0]["id"], stamp(again), "reopened", ""), (traps[0]["id"], stamp(again + dt.timedelta(minutes=rng.randint(30, 200))), "resolved", "")]
    rng.shuffle(events)
    db.executemany("INSERT INTO incidents VALUES (:id, :ref, :service_id, :severity, :opened_at, :title, :caused_by_change)", incidents)
    db.executemany("INSERT INTO incident_events (incident_id, at, kind, note) VALUES (?,?,?,?)", events)

    # --- workspace ---------------------------------------------------------------------------------
    ctx.write("standards/incident_standard.md",
        "# Incident management standard (extract)\n\n## Counting\n\nA month's figures cover incidents opened during that calendar "
        "month, using the UTC timestamps in the incident system. Incidents confirmed as duplicates in an incident review are "
        "left out of every figure and never get their own postmortem.\n\n## Measures\n\n- Time to acknowledge: from opening to the "
        "first acknowledgement.\n- Time to resolve: from opening to the final resolution (if an incident was reopened, its last "
        "resolution counts).\n- Customer impact: from opening to the first mitigation. Only sev1 and sev2 incidents count as "
        "downtime for their service.\n\nMTTA and MTTR are the means per severity, in minutes.\n\n## Downtime budgets\n\n"
        f"Tier 1 services may have at most {budgets[1]} minutes of downtime a month; tier 2 services at most {budgets[2]} minutes. "
        "A service breaches its budget when its downtime is strictly greater.\n\n## Postmortems\n\nEvery sev1 incident gets a "
        f"postmortem; a sev2 incident gets one when its customer impact lasted more than {sev2_limit} minutes. The owner is the "
        f"team that runs the service; the postmortem is due {pm_days} business days (Monday to Friday) after the date of the final "
        "resolution. Link the change that caused the incident, when there is one.\n")
    notes = [f"{next(i['ref'] for i in incidents if i['id'] == d)} was confirmed as a duplicate of "
             f"{next(i['ref'] for i in incidents if i['id'] == o)} - same root cause, raised by a second on-call." for d, o in dupes.items()]
    for _ in range(ctx.size("review_notes")):
        inc = rng.choice(incidents)
        notes.append(f"{inc['ref']}: {rng.choice(['good comms, no follow-up', 'runbook needs an update', 'alert threshold tuned', 'customer apology sent'])}.")
    rng.shuffle(notes)
    for i in range(0, len(notes), 2):
        ctx.write(f"reviews/weekly_review_{i // 2 + 1:02d}.md",
                  "# Weekly incident review - notes\n\n" + "\n".join(f"- {n}" for n in notes[i:i + 2]) + "\n")
    for i in range(ctx.size("ops_mail")):
        ctx.write(f"mail/ops_{i:03d}.eml",
            f"From: sre@shop.example\nSubject: {rng.choice(['On-call handover', 'Pager rota', 'Game day', 'Dashboard changes'])}\n\n"
            "FYI only - no effect on the monthly figures.\n")
