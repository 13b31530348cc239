"""State for fleet_maintenance/service_scheduling: vehicles, service history, open work orders, schedule and bulletins."""
from datetime import date

TODAY = date(2026, 12, 1)
MODELS = [("Ford", "Transit"), ("Mercedes", "Sprinter"), ("Iveco", "Daily"), ("Renault", "Master"),
          ("Volvo", "FL"), ("DAF", "LF"), ("Fiat", "Ducato")]
ABSENT = [("Scania", "P-series"), ("MAN", "TGL"), ("Isuzu", "N-series"), ("Toyota", "Hiace")]
DEPOTS = ["Riverside", "Northgate", "Eastfield", "Harbour"]
JOBS = ["OIL", "BRK", "TYR"]
OIL_DUE_BETWEEN = [date(2026, 12, 8), date(2026, 12, 28), date(2027, 1, 11)]  # between the possible plan dates


def add_months(day, months):
    years, month = divmod(day.month - 1 + months, 12)
    return date(day.year + years, month + 1, min(day.day, 28))


def months_before(day, months):
    return add_months(day, -months)


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE vehicles (id INTEGER PRIMARY KEY, unit_number TEXT UNIQUE, make TEXT, model TEXT, model_year INTEGER,
            depot TEXT, odometer_km INTEGER, status TEXT);
        CREATE TABLE service_history (id INTEGER PRIMARY KEY, vehicle_id INTEGER, job_code TEXT, service_date TEXT,
            odometer_km INTEGER);
        CREATE TABLE work_orders (id INTEGER PRIMARY KEY, vehicle_id INTEGER, status TEXT, note TEXT, created_on TEXT);
        CREATE TABLE work_order_jobs (work_order_id INTEGER, job_code TEXT, PRIMARY KEY (work_order_id, job_code));
        """
    )
    km = {"OIL": rng.choice([15000, 20000, 25000]), "BRK": rng.choice([30000, 40000]), "TYR": rng.choice([10000, 12000])}
    months = {"OIL": rng.choice([6, 12]), "BRK": rng.choice([12, 24]), "TYR": 6}
    handback = rng.choice(DEPOTS)

    vehicles, history = [], []
    for vid in range(1, ctx.size("vehicles") + 1):
        make, model = rng.choice(MODELS)
        odo = rng.randint(20000, 240000)
        status = "out_of_service" if rng.random() < 0.08 else "active"
        vehicles.append([vid, f"U-{400 + vid}", make, model, rng.randint(2016, 2025), rng.choice(DEPOTS), odo, status])
        for job in JOBS:
            if rng.random() < 0.08:
                continue  # no record of this job at all: due now
            since_km = int(km[job] * rng.uniform(0.2, 1.1))
            ago = months_before(TODAY, rng.randint(1, months[job] + 1))
            history.append([vid, job, date(ago.year, ago.month, rng.randint(1, 28)).isoformat(), max(1000, odo - since_km)])
            # An older record of the same job, which must not be mistaken for the latest.
            history.append([vid, job, months_before(ago, months[job]).isoformat(), max(0, odo - since_km - km[job])])

    # Two relevant recalls, each with guaranteed affected vehicles in every role.
    recalls = []
    for make, model in rng.sample(MODELS, 2):
        first = rng.randint(2017, 2021)
        recalls.append({"code": f"RC-26-{rng.randint(100, 999)}", "make": make, "model": model, "years": [first, first + 2]})
    roles = ["plain", "done", "handback", "retired"]
    for rc in recalls:
        for role in roles:
            v = vehicles[len(vehicles) - 1 - roles.index(role) - 4 * recalls.index(rc)]
            v[2], v[3], v[4] = rc["make"], rc["model"], rng.randint(*rc["years"])
            v[7] = "out_of_service" if role == "retired" else "active"
            if role == "handback":
                v[5] = handback
            elif v[5] == handback:
                v[5] = rng.choice([d for d in DEPOTS if d != handback])
            if role == "done":
                history.append([v[0], rc["code"], "2026-10-14", v[6] - 900])
        # A vehicle of the right model just outside the affected model years.
        v = vehicles[len(vehicles) - 9 - recalls.index(rc)]
        v[2], v[3], v[4] = rc["make"], rc["model"], rc["years"][1] + 1
    def last_oil(v, service_date, odometer_km):
        """Make v an active vehicle away from the hand-back depot whose only oil service is the one given."""
        v[7] = "active"
        v[5] = rng.choice([d for d in DEPOTS if d != handback])
        history[:] = [h for h in history if not (h[0] == v[0] and h[1] == "OIL")]
        history.append([v[0], "OIL", service_date.isoformat(), odometer_km])

    # Boundary: an active vehicle exactly at its oil interval less the look-ahead by distance, recent by date.
    v = vehicles[0]
    last_oil(v, months_before(TODAY, 1), v[6] - km["OIL"] + ctx.params["lookahead_km"])
    # Active vehicles whose oil service falls due by date between the possible plan dates (little distance since).
    for v, due in zip(vehicles[1:4], OIL_DUE_BETWEEN):
        last_oil(v, months_before(due, months["OIL"]), v[6] - 1000)
    # Active vehicles 400, 750 and 1,250 km short of their oil interval, serviced a month ago: how far ahead the
    # request books decides which of them are due.
    for v, short in zip(vehicles[4:7], (400, 750, 1250)):
        last_oil(v, months_before(TODAY, 1), v[6] - km["OIL"] + short)

    db.executemany("INSERT INTO vehicles VALUES (?,?,?,?,?,?,?,?)", [tuple(v) for v in vehicles])
    rng.shuffle(history)
    db.executemany("INSERT INTO service_history (vehicle_id, job_code, service_date, odometer_km) VALUES (?,?,?,?)", history)
    # Some vehicles already have an open work order (a few with a job on it), and some have closed ones.
    open_ids = rng.sample([v[0] for v in vehicles if v[7] == "active" and v[5] != handback], 4)
    for n, vid in enumerate(open_ids):
        cur = db.execute("INSERT INTO work_orders (vehicle_id, status, note, created_on) VALUES (?, 'open', 'driver reported noise', '2026-11-20')", (vid,))
        if n % 2 == 0:
            db.execute("INSERT INTO work_order_jobs VALUES (?, 'DIAG')", (cur.lastrowid,))
    for vid in rng.sample([v[0] for v in vehicles], 6):
        cur = db.execute("INSERT INTO work_orders (vehicle_id, status, note, created_on) VALUES (?, 'closed', 'done', '2026-09-02')", (vid,))
        db.execute("INSERT INTO work_order_jobs VALUES (?, 'OIL')", (cur.lastrowid,))

    ctx.write("shared/maintenance_schedule.md",
        "# Fleet maintenance schedule\n\n"
        f"Engine oil and filter service (job code OIL): every {km['OIL']:,} km or every {months['OIL']} months, "
        "whichever comes first.\n"
        f"Brake inspection (job code BRK): every {km['BRK']:,} km or every {months['BRK']} months, whichever comes first.\n"
        f"Tyre rotation (job code TYR): every {km['TYR']:,} km or every {months['TYR']} months, whichever comes first.\n\n"
        "Intervals run from the most recent time the job was done. A job is due once the distance since then "
        "reaches the interval, or once the calendar date reaches the same day that many months later. A vehicle "
        "with no record of a job at all is due for it now.\n\n"
        "Recalls: a vehicle covered by a manufacturer bulletin gets a job whose code is the bulletin reference, "
        "unless its service history already shows that reference. Vehicles whose status is out of service are "
        "waiting for disposal and get no work of any kind.\n"
    )
    for rc in recalls:
        ctx.write(f"shared/recall_bulletins/{rc['code']}.txt",
            f"MANUFACTURER RECALL NOTICE - reference {rc['code']}\n\n"
            f"{rc['make']} has identified a possible fault in the steering column fixing on {rc['model']} vehicles of "
            f"model years {rc['years'][0]} to {rc['years'][1]} inclusive. Owners should have the fixing inspected and "
            "replaced if needed, free of charge, at the earliest opportunity.\n"
        )
    for i in range(ctx.size("bulletins")):
        make, model = ABSENT[i % len(ABSENT)] if i % 2 == 0 else rng.choice(MODELS)
        code = f"RC-25-{rng.randint(100, 999)}"
        if i % 2 == 0:
            body = (f"{make} has identified a wiring fault on {model} vehicles of model years 2018 to 2022 "
                    "inclusive. Owners should contact a dealer.")
        else:
            body = (f"{make} has found a seat-belt buckle issue on {model} vehicles of model years 2008 to 2011 "
                    "inclusive. Owners should contact a dealer.")
        ctx.write(f"shared/recall_bulletins/{code}_{i}.txt",
                  f"MANUFACTURER RECALL NOTICE - reference {code}\n\n{body}\n")
    ctx.write(f"shared/depot_{handback.lower()}_handback.eml",
        f"From: depot.manager.{handback.lower()}@ourfleet.example\nSubject: {handback} vans going back to the lessor\n\n"
        f"Hi, a heads-up: every vehicle based at {handback} goes back to the leasing company at the end of the "
        "month, so please don't book routine servicing for any of them. Recalls are different: they are a legal "
        "obligation, so those still have to be raised as usual.\n"
    )
    topics = ["parking permits", "fuel card renewals", "driver rota", "wash bay hours", "christmas party", "tachograph training"]
    for i in range(ctx.size("depot_notes")):
        depot = rng.choice(DEPOTS)
        ctx.write(f"shared/depot_note_{i:02d}_{depot.lower()}.eml",
            f"From: office.{depot.lower()}@ourfleet.example\nSubject: {topics[i % len(topics)].title()}\n\n"
            f"Hello, a note about the {topics[i % len(topics)]} at {depot}. Unit U-{rng.randint(401, 400 + len(vehicles))} "
            "was mentioned at the briefing, but this does not affect maintenance. Cheers.\n"
        )
