"""State for it_operations/access_review: people, systems and accounts, with the security team's rules and mail."""
import datetime as dt

SYSTEMS = ["ERP", "CRM", "HR Portal", "Data Warehouse", "Git Server", "VPN", "Payroll", "Ticketing", "Wiki", "Build Farm"]
FIRST = ["ada", "bo", "cy", "di", "ed", "fi", "gus", "hal", "ida", "jo", "kai", "liv", "max", "nia", "oz", "pam", "raj",
         "sal", "tom", "uma", "val", "wyn", "xia", "yan", "zed"]
LAST = ["ash", "brook", "clay", "dale", "east", "ford", "glen", "hart", "isle", "judd", "kerr", "lund", "moss", "nash",
        "orr", "pike", "reed", "shaw", "tate", "vale", "west", "york"]


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE users (id INTEGER PRIMARY KEY, username TEXT UNIQUE, full_name TEXT, department TEXT, status TEXT, left_on TEXT);
        CREATE TABLE systems (id INTEGER PRIMARY KEY, name TEXT, owner TEXT);
        CREATE TABLE accounts (id INTEGER PRIMARY KEY, system_id INTEGER, account_name TEXT, user_id INTEGER, role TEXT,
            created TEXT, last_login TEXT, status TEXT);
        CREATE TABLE reviews (id INTEGER PRIMARY KEY, name TEXT, opened TEXT);
        CREATE TABLE review_actions (id INTEGER PRIMARY KEY, review_id INTEGER, account_id INTEGER, action TEXT, reason TEXT);
        """
    )
    depts = ctx.choices("skipped_department")  # every department: the request may leave out any of them
    review_day = dt.date(2026, 11, 30) + dt.timedelta(days=rng.randint(0, 3))
    idle_days = rng.choice([60, 90, 120])
    admin_days = rng.choice([30, 45])
    fresh_days = rng.choice([14, 30])

    pool = rng.sample([(f, l) for f in FIRST for l in LAST], ctx.size("users"))
    users = []
    for uid, (f, l) in enumerate(pool, 1):
        status = rng.choices(["active", "left", "on leave"], [0.95, 0.02, 0.03])[0]
        left = (review_day - dt.timedelta(days=rng.randint(3, 200))).isoformat() if status == "left" else None
        users.append({"id": uid, "username": f"{f}.{l}", "full_name": f"{f.capitalize()} {l.capitalize()}",
                      "department": rng.choice(depts), "status": status, "left_on": left})
    n_sys = ctx.size("systems")
    systems = [(sid, SYSTEMS[(sid - 1) % len(SYSTEMS)] + ("" if sid <= len(SYSTEMS) else f" {(sid - 1) // len(SYSTEMS) + 1}"),
                f"{rng.choice(pool)[0]}.owner") for sid in range(1, n_sys + 1)]
    db.executemany("INSERT INTO systems VALUES (?,?,?)", systems)

    accounts, taken = [], set()
    ago = lambda days: (review_day - dt.timedelta(days=days)).isoformat()

    def add(system_id, name, user_id, role, created, last, status="active"):
        if (system_id, name) in taken:
            return None
        taken.add((system_id, name))
        accounts.append({"id": len(accounts) + 1, "system_id": system_id, "account_name": name, "user_id": user_id, "role": role,
                         "created": created, "last_login": last, "status": status})
        return accounts[-1]

    while len(accounts) < ctx.size("accounts"):
        u = rng.choice(users)
        sid = rng.randint(1, n_sys)
        roll = rng.random()
        last = None if roll < 0.02 else ago(rng.randint(0, idle_days - 1) if roll < 0.93 else rng.randint(0, 400))
        add(sid, u["username"], u["id"], "admin" if rng.random() < 0.06 else "user", ago(rng.randint(5, 900)), last,
            "disabled" if rng.random() < 0.05 else "active")
    # Pinned cases on deterministic systems/users so that every rule and exception matters at every scale.
    actives = [u for u in users if u["status"] == "active"]
    on_leave = next(u for u in users if u["status"] == "on leave") if any(u["status"] == "on leave" for u in users) else actives[-1]
    on_leave["status"], on_leave["left_on"] = "on leave", None
    leaver = actives[7]  # always at least one leaver, whatever the draw
    leaver["status"], leaver["left_on"] = "left", ago(rng.randint(3, 90))
    # The pinned people are never in the department left out, so every rule still bites.
    skipped_dept = ctx.params["skipped_department"]
    for u in actives[:8] + [on_leave]:
        if u["department"] == skipped_dept:
            u["department"] = rng.choice([d for d in depts if d != skipped_dept])
    s1, s2 = 1, 2
    pins = {
        "edge_in": add(s1, actives[0]["username"] + ".edge", actives[0]["id"], "user", ago(500), ago(idle_days)),
        "edge_out": add(s2, actives[1]["username"] + ".edge", actives[1]["id"], "user", ago(500), ago(idle_days + 1)),
        "admin_idle": add(s1, actives[2]["username"] + ".adm", actives[2]["id"], "admin", ago(500), ago(admin_days + 2)),
        "leaver_recent": add(s2, leaver["username"] + ".x", leaver["id"], "user", ago(300), ago(1)),
        "on_leave": add(s1, on_leave["username"] + ".x", on_leave["id"], "user", ago(600), ago(idle_days + 50)),
        "service": add(s2, f"svc-{systems[1][1].lower().replace(' ', '')}-sync", None, "user", ago(700), ago(idle_days + 20)),
        "service_busy": add(s1, f"svc-{systems[0][1].lower().replace(' ', '')}-backup", None, "user", ago(700), ago(2)),
        "breakglass": add(s1, "bg-emergency", None, "admin", ago(800), None),
        "exc_valid": add(s2, actives[3]["username"] + ".x", actives[3]["id"], "user", ago(400), ago(idle_days + 30)),
        "exc_expired": add(s1, actives[4]["username"] + ".x", actives[4]["id"], "user", ago(400), ago(idle_days + 30)),
        "never_new": add(s2, actives[5]["username"] + ".new", actives[5]["id"], "user", ago(fresh_days - 2), None),
        "never_old": add(s1, actives[6]["username"] + ".old", actives[6]["id"], "user", ago(fresh_days + 5), None),
    }
    # Stale personal accounts on systems 3-7, two or three per system from different departments and two per
    # department on different systems: whichever system and department are left out changes the review.
    scoped = []
    for j in range(12):
        u = actives[8 + j]
        u["department"] = depts[j % len(depts)]
        scoped.append(add(3 + j % 5, u["username"] + ".dormant", u["id"], "user", ago(500), ago(idle_days + 40)))
    scoped_objs = {id(a) for a in scoped}  # account ids are renumbered below
    # More break-glass accounts: every system has one; the memo protects them on some systems only.
    protected = sorted(rng.sample(range(1, n_sys + 1), k=max(2, n_sys // 2)))
    if 1 not in protected:
        protected[0] = 1
    for sid in range(2, n_sys + 1):
        add(sid, "bg-emergency", None, "admin", ago(800), None if rng.random() < 0.7 else ago(rng.randint(100, 300)))
    rng.shuffle(accounts)
    for new_id, a in enumerate(accounts, 1):
        a["id"] = new_id
    db.executemany("INSERT INTO users VALUES (:id, :username, :full_name, :department, :status, :left_on)", users)
    db.executemany("INSERT INTO accounts VALUES (:id, :system_id, :account_name, :user_id, :role, :created, :last_login, :status)", accounts)

    exc_until_valid = review_day + dt.timedelta(days=rng.randint(5, 60))
    exc_until_expired = review_day - dt.timedelta(days=rng.randint(1, 20))
    exceptions = [(pins["exc_valid"], exc_until_valid), (pins["exc_expired"], exc_until_expired)]
    for _ in range(ctx.files(1)):
        a = rng.choice([x for x in accounts if x["user_id"] and x["status"] == "active" and id(x) not in scoped_objs])
        exceptions.append((a, review_day + dt.timedelta(days=rng.randint(-40, 90))))

    sys_name = dict((s[0], s[1]) for s in systems)

    # --- workspace ---------------------------------------------------------------------------------
    long = lambda d: f"{d.day} {d.strftime('%B %Y')}"
    ctx.write("policy/access_policy.md",
        f"# Access management policy - quarterly review\n\nThe review is carried out as of {long(review_day)}.\n\n"
        f"1. Accounts belonging to people who have left the company are disabled, no matter what else applies.\n"
        f"2. An account is inactive when its last login was more than {idle_days} days before the review date; for "
        f"accounts with the admin role the limit is {admin_days} days. An account that has never been used counts as "
        f"inactive once it is more than {fresh_days} days old.\n"
        "3. Inactive accounts are disabled, with these exceptions:\n"
        "   - staff who are currently on approved leave keep their accounts;\n"
        "   - accounts covered by an exception in the exception register that is still valid on the review date keep "
        "their access (an exception is valid up to and including its end date);\n"
        "   - service accounts (names beginning with svc-) are never disabled in a review: ask the system owner for an "
        "attestation instead.\n"
        "4. Accounts that are already disabled need no action.\n")
    prot_names = ", ".join(sys_name[s] for s in protected)
    ctx.write("mail/breakglass_accounts.eml",
        f"From: ciso@corp.example\nSubject: Emergency (break-glass) accounts\n\nTeam, the bg-emergency accounts are rarely used "
        f"by design. On the following systems they are part of our disaster recovery plan and must be left alone in every "
        f"review: {prot_names}. On any other system the bg-emergency account is treated like any other account.\n")
    lines = []
    for a, until in exceptions:
        lines.append(f"- {a['account_name']} on {sys_name[a['system_id']]}: approved by the system owner, valid until {long(until)}.")
    rng.shuffle(lines)
    ctx.write("policy/exception_register.md", "# Access exception register\n\n" + "\n".join(lines) + "\n")
    topics = ["phishing test results", "MFA rollout", "password manager", "laptop encryption", "security awareness week"]
    for i in range(ctx.size("security_mail")):
        topic = topics[i % len(topics)]
        ctx.write(f"mail/security_{i:03d}.eml",
            f"From: security@corp.example\nSubject: {topic}\n\nAn update on {topic}. No change to the access review rules. Ref {rng.randint(100, 999)}.\n")
    for i in range(ctx.size("hr_updates")):
        u = rng.choice(users)
        ctx.write(f"hr/hr_update_{i:03d}.txt",
            f"HR update\n\n{u['full_name']} ({u['department']}) {rng.choice(['changed team', 'completed probation', 'moved desk', 'updated their address'])}. "
            "Employment records in the directory are current.\n")

    protected_ids = [a["id"] for a in accounts if a["account_name"] == "bg-emergency" and a["system_id"] in protected]
    ctx.facts(protected=protected_ids)
