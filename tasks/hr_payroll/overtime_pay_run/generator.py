"""State for hr_payroll/overtime_pay_run: staff, daily timesheets around one fortnight, HR documents."""
import datetime as dt

FIRST = ["Ana", "Ben", "Chloe", "Dev", "Elif", "Farid", "Grace", "Hugo", "Ines", "Jonah", "Kemi", "Liam",
         "Mara", "Nils", "Olga", "Priya", "Quinn", "Rosa", "Sami", "Tess", "Umar", "Vera", "Wes", "Yara"]
LAST = ["Abbott", "Brandt", "Castillo", "Dunn", "Eriksen", "Fofana", "Gallo", "Hayes", "Iqbal", "Jansen",
        "Kowalski", "Lindqvist", "Moreau", "Nakamura", "Okafor", "Petrov", "Rahman", "Silva", "Tanaka", "Varga"]
UNIONS = ["Local 88", "Local 12"]
PERIOD_STARTS = [dt.date(2026, 9, 7), dt.date(2026, 9, 21), dt.date(2026, 10, 5), dt.date(2026, 10, 19)]
NUMBER_WORDS = {8: "eight", 9: "nine", 10: "ten"}


def long_date(day: dt.date) -> str:
    return f"{day:%A} {day.day} {day:%B %Y}"


def quarter_hours(rng, low: float, high: float) -> float:
    return rng.randint(int(low * 4), int(high * 4)) / 4


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE employees (id INTEGER PRIMARY KEY, emp_no TEXT UNIQUE, name TEXT, department TEXT,
            employment_type TEXT, union_local TEXT, hourly_rate REAL);
        CREATE TABLE timesheets (id INTEGER PRIMARY KEY, employee_id INTEGER, work_date TEXT, hours REAL);
        CREATE TABLE pay_runs (id INTEGER PRIMARY KEY, period_start TEXT, period_end TEXT, status TEXT);
        CREATE TABLE pay_lines (id INTEGER PRIMARY KEY, run_id INTEGER, employee_id INTEGER, regular_hours REAL,
            overtime_hours REAL, holiday_hours REAL, gross_pay REAL);
        """
    )
    departments = ctx.choices("excluded_department")  # every department: the request may leave out any of them
    start = rng.choice(PERIOD_STARTS)
    end = start + dt.timedelta(days=13)
    holiday = start + dt.timedelta(days=rng.choice([0, 4, 7, 11]))  # a weekday inside the fortnight
    daily_union, other_union = rng.sample(UNIONS, 2)
    threshold = rng.choice([8, 9, 10])

    n = ctx.size("employees")
    staff = []
    for eid in range(1, n + 1):
        kind = "contractor" if eid % 9 == 4 else "employee"
        union = daily_union if eid % 5 in (1, 3) else (other_union if eid % 7 == 2 else "")
        name = f"{FIRST[(eid * 7 + rng.randint(0, 3)) % len(FIRST)]} {LAST[(eid * 3 + rng.randint(0, 5)) % len(LAST)]}"
        department = rng.choice(departments)
        if eid in (1, 2, 3, 5, 6):  # every department has paid staff, so whichever one is left out matters
            department = departments[(1, 2, 3, 5, 6).index(eid)]
        staff.append((eid, f"E{1000 + eid}", name, department, kind, union,
                      round(rng.uniform(17.0, 42.0), 2)))
    db.executemany("INSERT INTO employees VALUES (?,?,?,?,?,?,?)", staff)

    hours_by_day = {}
    for eid, *_ in staff:
        if eid % 11 == 10:  # on leave this fortnight: only time from the previous run
            days = [start - dt.timedelta(days=k) for k in (1, 2, 3)]
        else:
            days = [start + dt.timedelta(days=k) for k in range(-3, 17)]
        long_weeker = rng.random() < 0.5
        for day in days:
            if day.weekday() == 6 or (day.weekday() == 5 and rng.random() < 0.7):
                continue
            if day == holiday and (eid % 3 == 0 or rng.random() < 0.4):
                continue  # most staff take the holiday off
            if day.weekday() == 5:
                hours = quarter_hours(rng, 3, 6)
            elif long_weeker and rng.random() < 0.5:
                hours = quarter_hours(rng, 8.25, 11)
            else:
                hours = quarter_hours(rng, 6, 8.5)
            hours_by_day[(eid, day.isoformat())] = hours
    # Guarantee every rule bites at every scale: long days for two union members, holiday work for two,
    # and one union member whose overtime runs past the cap (offsets 1-3 and 8-9 are never the holiday).
    excluded = ctx.params["excluded_department"]
    paid = [s for s in staff if s[4] == "employee" and s[3] != excluded and s[0] % 11 != 10]
    wednesday = (start + dt.timedelta(days=2)).isoformat()
    union_paid = [s[0] for s in paid if s[5] == daily_union]
    for eid in union_paid[:2]:
        hours_by_day[(eid, wednesday)] = threshold + 2.5
    for offset in (1, 2, 3, 8, 9):
        hours_by_day[(union_paid[2], (start + dt.timedelta(days=offset)).isoformat())] = threshold + 2.5
    for eid in [s[0] for s in paid[:2]]:
        hours_by_day[(eid, holiday.isoformat())] = 7.5
    entries = sorted(hours_by_day.items(), key=lambda kv: (kv[0][1], kv[0][0]))
    db.executemany("INSERT INTO timesheets (employee_id, work_date, hours) VALUES (?,?,?)",
                   [(e, d, h) for (e, d), h in entries])

    worked = {e for (e, d) in hours_by_day if start.isoformat() <= d <= end.isoformat()}
    eligible = [s for s in staff if s[4] == "employee" and s[0] in worked and s[3] != excluded]
    corrected = {s[1]: round(s[6] + rng.choice([1.25, 1.5, 2.0, 2.75]), 2) for s in rng.sample(eligible, 2)}

    lines = [f"- {emp_no}: the system still shows the old rate; pay {rate:.2f} per hour for this whole run."
             for emp_no, rate in sorted(corrected.items())]
    docs = {
        "payroll/payroll_calendar.md": (
            "# Payroll calendar - autumn\n\n"
            f"The current fortnightly run covers the period starting {long_date(start)} and ending "
            f"{long_date(end)}, both days included. Timesheet lines dated outside that window belong to "
            "other runs and must be left alone.\n\nPayslips are released on the Thursday after the period closes.\n"),
        "payroll/overtime_policy.md": (
            "# Overtime policy\n\n"
            "Unless a collective agreement says otherwise, overtime is worked time beyond 40 hours within a\n"
            "calendar week (Monday to Sunday). It is paid at 1.5 times (one and a half times) the ordinary\n"
            "hourly rate; everything else is regular time at the ordinary rate.\n\n"
            "Contractors are engaged through accounts payable and invoice us directly: they are never paid\n"
            "through the payroll run, even when they log hours in the timesheet system.\n\n"
            "Gross pay is rounded to the cent at the end of the calculation.\n"),
        "payroll/holiday_notice.txt": (
            f"Subject: Public holiday - {long_date(holiday)}\n\n"
            f"{long_date(holiday)} is a public holiday. Anyone who works that day is paid double time (twice the\n"
            "ordinary rate) for every hour worked on it. Holiday hours are reported separately and are left out\n"
            "when we work out regular time and overtime for the week.\n"),
        f"contracts/{daily_union.lower().replace(' ', '_')}_agreement.md": (
            f"# Collective agreement - {daily_union}\n\n"
            "Article 14 (Hours of work). The weekly 40-hour overtime rule in the company policy does not apply\n"
            f"to members of {daily_union}. Instead, any time worked beyond {NUMBER_WORDS[threshold]} hours in a single "
            "day is\n"
            "overtime, paid at time and a half; the first hours of each day are regular time.\n\n"
            "Article 15 (Public holidays). Members receive the company holiday rate.\n"),
        f"contracts/{other_union.lower().replace(' ', '_')}_agreement.md": (
            f"# Collective agreement - {other_union}\n\n"
            "Article 9 (Allowances). Members receive a safety footwear allowance once a year, paid through\n"
            "expenses rather than payroll.\n\n"
            f"Article 10 (Hours of work). Members of {other_union} follow the company overtime policy without "
            "change.\n"),
        "hr_inbox/rate_corrections.eml": (
            "From: hr@company.example\nTo: payroll@company.example\nSubject: Pay rate corrections before the run\n\n"
            "Hi, two promotions were approved last month but the HR system update is lagging behind:\n"
            + "\n".join(lines) + "\nPlease apply them in this fortnight's run.\n\nThanks, HR\n"),
    }
    topics = ["parking permits", "canteen menu", "first aid training", "pension webinar", "team offsite",
              "IT password reset", "charity bake sale", "new badge readers"]
    for i in range(ctx.size("circulars")):
        topic, contact = topics[i % len(topics)], rng.choice(staff)
        docs[f"hr_inbox/circular_{i:03d}_{topic.replace(' ', '_')}.txt"] = (
            f"Subject: {topic}\n\nA reminder about the {topic}: details are on the intranet. Contact {contact[2]}\n"
            f"({contact[3]}) with questions. This does not affect pay or hours. Ref {rng.randint(1000, 9999)}.\n")
    for name, text in docs.items():
        ctx.write(name, text)

    ctx.facts(daily_union=daily_union, corrected=sorted(corrected))
