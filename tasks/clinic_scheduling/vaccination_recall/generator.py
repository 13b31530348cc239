"""State for clinic_scheduling/vaccination_recall: a patient list, immunisation history, the schedule and clinical letters."""
import datetime as dt

FIRST = ["Agnes", "Bernard", "Clara", "Dennis", "Edna", "Frank", "Gloria", "Harold", "Irene", "Jack", "Kathleen", "Leonard",
         "Mabel", "Norman", "Olga", "Peter", "Queenie", "Ronald", "Sylvia", "Trevor", "Ursula", "Victor", "Winifred", "Yvonne"]
LAST = ["Abbott", "Barker", "Carver", "Dawson", "Elliott", "Fletcher", "Gibbs", "Hayward", "Ingram", "Jarvis", "Knight",
        "Lambert", "Mercer", "Norris", "Osborne", "Pearce", "Randall", "Sutton", "Thorne", "Walsh"]
VACCINES = {"Td": "tetanus-diphtheria booster", "FLU": "seasonal influenza vaccine", "RZV": "recombinant shingles vaccine",
            "PPV": "pneumococcal polysaccharide vaccine"}
SEASON_START = dt.date(2026, 9, 1)


def shift_years(day, years):
    return day.replace(year=day.year + years)


def add_months(day, months):
    m = day.month - 1 + months
    year, month = day.year + m // 12, m % 12 + 1
    for d in (day.day, 30, 29, 28):
        try:
            return dt.date(year, month, d)
        except ValueError:
            continue


def age_on(birth, day):
    return day.year - birth.year - ((day.month, day.day) < (birth.month, birth.day))


def due_dates(birth, doses, run_day):
    """Every vaccine's due date for one patient under the practice schedule (None when nothing is due)."""
    out = {}
    td = sorted(d for v, d in doses if v == "Td")
    out["Td"] = shift_years(td[-1], 10)
    if age_on(birth, run_day) >= 65:
        if not any(v == "FLU" and d >= SEASON_START for v, d in doses):
            out["FLU"] = SEASON_START
        if not any(v == "PPV" for v, _ in doses):
            out["PPV"] = shift_years(birth, 65)
    rzv = sorted(d for v, d in doses if v == "RZV")
    if age_on(birth, run_day) >= 50 and len(rzv) < 2:
        out["RZV"] = add_months(rzv[0], 2) if rzv else shift_years(birth, 50)
    return out


def random_day(rng, lo, hi):
    day = lo + dt.timedelta(days=rng.randint(0, (hi - lo).days))
    return day if (day.month, day.day) != (2, 29) else day - dt.timedelta(days=1)


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE patients (id INTEGER PRIMARY KEY, mrn TEXT UNIQUE, name TEXT, birth_date TEXT, status TEXT, phone TEXT);
        CREATE TABLE immunizations (id INTEGER PRIMARY KEY, patient_id INTEGER, vaccine TEXT, given_on TEXT, batch TEXT);
        CREATE TABLE recalls (id INTEGER PRIMARY KEY, patient_id INTEGER, vaccine TEXT, due_date TEXT);
        CREATE TABLE reminders (id INTEGER PRIMARY KEY, recall_id INTEGER, send_on TEXT);
        """
    )
    run_day = dt.date(2026, 12, rng.randint(1, 4))
    lookahead = ctx.params["lookahead_days"]  # pins 3 and 4 sit on either side of this request's horizon
    lead = rng.choice([7, 14, 21])
    horizon = run_day + dt.timedelta(days=lookahead)

    patients, doses = [], {}
    mrns = rng.sample(range(200000, 899999), ctx.size("patients"))
    for pid in range(1, ctx.size("patients") + 1):
        birth = random_day(rng, dt.date(1930, 1, 1), dt.date(1995, 12, 31))
        status = "active" if rng.random() > 0.08 else rng.choice(["deceased", "transferred out"])
        # Most patients are up to date; a minority has something falling due.
        td_from = dt.date(2015, 1, 1) if rng.random() < 0.07 else dt.date(2017, 3, 1)
        shots = [("Td", random_day(rng, max(td_from, birth + dt.timedelta(days=6600)), dt.date(2026, 10, 1)))]
        if rng.random() < 0.3:
            shots.append(("Td", random_day(rng, dt.date(2002, 1, 1), dt.date(2012, 1, 1))))
        years = age_on(birth, run_day)
        if years >= 60:
            for season in (2024, 2025, 2026):
                if rng.random() < (0.92 if season == 2026 else 0.6):
                    shots.append(("FLU", random_day(rng, dt.date(season, 9, 1), dt.date(season, 11, 25))))
            if years >= 66 and rng.random() < 0.92:
                shots.append(("PPV", random_day(rng, max(shift_years(birth, 65), dt.date(2000, 1, 1)), dt.date(2026, 6, 1))))
        if years >= 51 and rng.random() < 0.95:
            first = random_day(rng, max(shift_years(birth, 50), dt.date(2018, 1, 1)), dt.date(2026, 9, 1))
            shots.append(("RZV", first))
            if rng.random() < 0.92 and add_months(first, 3) < run_day:
                shots.append(("RZV", add_months(first, rng.randint(2, 5))))
        patients.append({"id": pid, "mrn": f"MRN{mrns[pid - 1]}", "name": f"{rng.choice(FIRST)} {rng.choice(LAST)}",
                         "birth_date": birth.isoformat(), "status": status, "phone": f"01632 {rng.randint(100000, 999999)}"})
        doses[pid] = shots

    # Pinned cases, present at every scale and seed. Every vaccine has due recalls (pins 1, 3, 9, 10), so whichever
    # one the request leaves out matters.
    def pin(pid, birth, shots, status="active"):
        patients[pid - 1].update(birth_date=birth.isoformat(), status=status)
        doses[pid] = shots
    td_old = lambda: ("Td", random_day(rng, shift_years(run_day, -11), shift_years(run_day, -10) - dt.timedelta(days=30)))
    td_fresh = ("Td", dt.date(2024, 5, 5))
    pin(1, shift_years(run_day, -65), [td_fresh, ("PPV", dt.date(2025, 1, 10)), ("RZV", dt.date(2023, 1, 1)), ("RZV", dt.date(2023, 4, 1))])  # turns 65 today: flu due
    pin(2, shift_years(run_day, -65) + dt.timedelta(days=1), [td_fresh, ("RZV", dt.date(2023, 1, 1)), ("RZV", dt.date(2023, 4, 1))])  # 64: no flu/PPV
    pin(3, dt.date(1970, 3, 3), [("Td", shift_years(horizon, -10)), ("RZV", dt.date(2022, 2, 2)), ("RZV", dt.date(2022, 5, 2))])  # Td due on the horizon: in
    pin(4, dt.date(1972, 4, 4), [("Td", shift_years(horizon, -10) + dt.timedelta(days=1)), ("RZV", dt.date(2022, 2, 2)), ("RZV", dt.date(2022, 5, 2))])  # a day later: out
    pin(5, dt.date(1950, 6, 6), [td_fresh, ("FLU", SEASON_START - dt.timedelta(days=1)), ("PPV", dt.date(2016, 1, 1)), ("RZV", dt.date(2021, 1, 1)), ("RZV", dt.date(2021, 3, 1))])  # flu before season: due
    pin(6, dt.date(1948, 7, 7), [td_old(), ("FLU", dt.date(2026, 9, 20))])  # declines shingles; Td overdue
    pin(7, dt.date(1945, 8, 8), [td_fresh, ("PPV", dt.date(2012, 1, 1)), ("RZV", dt.date(2022, 2, 2)), ("RZV", dt.date(2022, 5, 2))])  # flu contraindicated
    pin(8, dt.date(1944, 9, 9), [td_old()], status="deceased")
    pin(9, dt.date(1966, 10, 10), [td_fresh, ("RZV", add_months(run_day, -2) + dt.timedelta(days=lookahead - 3))])  # 2nd shingles dose within look-ahead
    pin(10, dt.date(1955, 11, 11), [td_fresh, ("FLU", dt.date(2026, 10, 1)), ("RZV", dt.date(2021, 1, 1)), ("RZV", dt.date(2021, 3, 1))])  # PPV overdue
    db.executemany("INSERT INTO patients VALUES (:id, :mrn, :name, :birth_date, :status, :phone)", patients)
    rows = [(pid, v, d.isoformat(), f"{v}{rng.randint(1000, 9999)}") for pid, shots in doses.items() for v, d in shots]
    rng.shuffle(rows)
    db.executemany("INSERT INTO immunizations (patient_id, vaccine, given_on, batch) VALUES (?,?,?,?)", rows)

    declines = {6: "RZV"}
    contraindicated = {7: "FLU"}
    extra = rng.sample(range(11, len(patients) + 1), k=ctx.files(2))
    for pid in extra:
        due = due_dates(dt.date.fromisoformat(patients[pid - 1]["birth_date"]), doses[pid], run_day)
        if due:
            (declines if rng.random() < 0.5 else contraindicated)[pid] = rng.choice(sorted(due))

    # --- workspace ---------------------------------------------------------------------------------
    long = lambda d: f"{d.strftime('%A')} {d.day} {d.strftime('%B %Y')}"
    ctx.write("protocols/immunisation_schedule.md",
        "# Practice immunisation schedule (adults)\n\n"
        f"- Tetanus-diphtheria booster (Td): due ten years after the most recent Td dose.\n"
        f"- Seasonal influenza vaccine (FLU): for patients aged 65 or over. Due from the start of the season on "
        f"{SEASON_START.day} {SEASON_START.strftime('%B %Y')} unless they have had a dose on or after that date.\n"
        "- Pneumococcal polysaccharide vaccine (PPV): a single dose for patients aged 65 or over, due from their 65th "
        "birthday; never repeated.\n"
        "- Recombinant shingles vaccine (RZV): a two-dose course for patients aged 50 or over. The first dose is due from "
        "the 50th birthday; the second dose is due two calendar months after the first. Nothing more once both are given.\n\n"
        "Ages are counted on the day of the recall run.\n")
    ctx.write("protocols/recall_run_memo.md",
        f"# Recall run - {long(run_day)}\n\nThis month's run is dated {long(run_day)}. Recall every active patient for each "
        "vaccine that is due on or before the run date or within the look-ahead period after it, which is set for each run "
        "when it is requested (the due date is the "
        "date the schedule gives, even if it passed long ago). Patients who have died or left the practice are not recalled.\n\n"
        f"Reminders: each recall gets one reminder, sent {lead} days before its due date - or on the run date itself if that "
        "day has already passed.\n")
    letters = []
    for pid, vaccine in sorted(declines.items()):
        p = patients[pid - 1]
        letters.append(f"Re: {p['name']} ({p['mrn']})\n\nThe patient has told us clearly that they do not wish to receive the "
                       f"{VACCINES[vaccine]} and asked not to be contacted about it again. Please respect this.\n")
    for pid, vaccine in sorted(contraindicated.items()):
        p = patients[pid - 1]
        letters.append(f"Re: {p['name']} ({p['mrn']})\n\nClinical note: severe allergic reaction documented after a previous "
                       f"dose. The {VACCINES[vaccine]} is contraindicated for this patient - do not recall.\n")
    for _ in range(ctx.size("clinical_letters")):
        p = rng.choice(patients)
        letters.append(f"Re: {p['name']} ({p['mrn']})\n\nSeen in clinic for {rng.choice(['blood pressure review', 'knee pain', 'medication review', 'asthma check'])}. "
                       "No change to immunisation plans.\n")
    rng.shuffle(letters)
    for i, text in enumerate(letters, 1):
        ctx.write(f"letters/letter_{i:03d}.txt", f"Clinical correspondence\n{text}")
    topics = ["new phlebotomy hours", "online booking", "staff changes", "car park", "patient survey", "building works"]
    for i in range(ctx.size("practice_news")):
        topic = topics[i % len(topics)]
        ctx.write(f"news/news_{i:03d}.md",
                  f"# Practice news: {topic}\n\nAn update about {topic}. Nothing here affects recalls.\n")
