"""State for fleet_maintenance/tyre_replacement_plan: vehicles, repeated tread inspections, a tyre price
list, and the tyre policy, winter notice and budget e-mail that decide the plan."""
import datetime as dt

LAYOUT = {"car": ["FL", "FR", "RL", "RR"], "van": ["FL", "FR", "RL", "RR"],
          "truck": ["FL", "FR", "RLO", "RLI", "RRI", "RRO"], "minibus": ["FL", "FR", "RL", "RR"]}
LETTERS = "ABCDEFGHJKLMNPRSTVWXY"


def _plan_cost(vehicles, readings, prices, legal, threshold, winter_depot, winter_min):
    """Candidates with their axle-paired positions and cost (used to size the budget so it always bites)."""
    out = []
    for v in vehicles:
        limit = max(threshold[v[2]], winter_min) if v[3] == winter_depot else threshold[v[2]]
        worn = [p for p, mm in readings[v[0]].items() if mm < limit]
        if worn:
            axles = {p[0] for p in worn}
            positions = [p for p in LAYOUT[v[2]] if p[0] in axles]
            season = "winter" if v[3] == winter_depot else "all-season"
            out.append((min(readings[v[0]].values()) < legal, len(positions) * prices[(v[2], season)]))
    return out


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE vehicles (id INTEGER PRIMARY KEY, reg TEXT UNIQUE, type TEXT, depot TEXT, odometer_km INTEGER);
        CREATE TABLE inspections (id INTEGER PRIMARY KEY, vehicle_id INTEGER, position TEXT, tread_mm REAL,
            inspected_on TEXT, inspector TEXT);
        CREATE TABLE tyre_prices (id INTEGER PRIMARY KEY, vehicle_type TEXT, season TEXT, unit_price REAL);
        """
    )
    depots = ctx.choices("excluded_depot")  # every depot: the request may leave out any of them
    legal = 1.6
    threshold = {"car": rng.choice([2.5, 3.0]), "van": 3.0, "truck": rng.choice([4.0, 5.0]), "minibus": 4.0}
    excluded = ctx.params["excluded_depot"]
    winter_depot = rng.choice([d for d in ["Highland", "Northgate"] if d != excluded])
    winter_min = 4.0
    prices = {}
    for kind, base in (("car", 95), ("van", 130), ("truck", 310), ("minibus", 170)):
        prices[(kind, "all-season")] = float(base + rng.randint(0, 20))
        prices[(kind, "winter")] = float(base + 25 + rng.randint(0, 20))
    db.executemany("INSERT INTO tyre_prices (vehicle_type, season, unit_price) VALUES (?,?,?)",
                   [(k, s, p) for (k, s), p in sorted(prices.items())])

    vehicles, readings, rows = [], {}, []
    used = set()
    for vid in range(1, ctx.size("vehicles") + 1):
        while True:
            reg = f"{rng.choice(LETTERS)}{rng.choice(LETTERS)}{rng.randint(10, 75)} {''.join(rng.choice(LETTERS) for _ in range(3))}"
            if reg not in used:
                used.add(reg)
                break
        kind = rng.choices(list(LAYOUT), [0.25, 0.4, 0.2, 0.15])[0]
        vehicles.append((vid, reg, kind, depots[vid % len(depots)], rng.randint(5000, 300000)))
        readings[vid] = {}
        for pos in LAYOUT[kind]:
            mm = round(rng.uniform(1.2, 9.0), 1)
            day = dt.date(2026, 8, 1) + dt.timedelta(days=rng.randint(0, 20))
            for _ in range(3):  # three inspection rounds since August
                rows.append([vid, pos, mm, day.isoformat(), rng.choice(["K. Obi", "L. Shaw", "M. Ruiz"])])
                day += dt.timedelta(days=rng.randint(20, 35))
                mm = round(max(0.8, mm - rng.uniform(0.1, 1.2)), 1) if rng.random() < 0.85 else round(rng.uniform(7.5, 9.0), 1)
            readings[vid][pos] = rows[-1][2]
    # Traps at every scale: a tyre replaced since an illegal reading (only the latest counts), a winter-depot
    # van between its normal threshold and the winter minimum, and an illegal tyre (mandatory).
    def set_latest(vid, pos, mm):
        last = max(i for i, r in enumerate(rows) if r[0] == vid and r[1] == pos)
        rows[last][2] = mm
        readings[vid][pos] = mm
    vans = [v for v in vehicles if v[2] == "van" and v[3] != excluded]
    replaced = vans[0]
    for pos in LAYOUT["van"]:
        set_latest(replaced[0], pos, 8.0)
    first = min(i for i, r in enumerate(rows) if r[0] == replaced[0] and r[1] == "RL")
    rows[first][2] = 1.1
    winter_van = next(v for v in vans[1:] if v[3] == winter_depot)
    for pos in LAYOUT["van"]:
        set_latest(winter_van[0], pos, 6.5)
    set_latest(winter_van[0], "FR", 3.5)
    illegal = next(v for v in vehicles[1:] if v[3] not in (winter_depot, excluded) and v not in (replaced, winter_van))
    set_latest(illegal[0], LAYOUT[illegal[2]][-1], 1.4)
    # An illegal tyre at the depot the request leaves out: leaving that depot out changes the plan.
    left_out = next(v for v in vehicles if v[3] == excluded)
    set_latest(left_out[0], LAYOUT[left_out[2]][0], 1.3)
    db.executemany("INSERT INTO vehicles VALUES (?,?,?,?,?)", vehicles)
    db.executemany("INSERT INTO inspections (vehicle_id, position, tread_mm, inspected_on, inspector) VALUES (?,?,?,?,?)",
                   [tuple(r) for r in rows])

    candidates = _plan_cost([v for v in vehicles if v[3] != excluded], readings, prices, legal, threshold, winter_depot, winter_min)
    mandatory = sum(c for m, c in candidates if m)
    optional = sum(c for m, c in candidates if not m)
    budget = int((mandatory + optional * 0.5) // 100 * 100)

    ctx.write("policy/tyre_policy.md",
        "# Fleet tyre policy\n\n"
        "Only the most recent tread reading of each tyre position matters; older readings are history.\n\n"
        f"The legal minimum tread depth is {legal} mm. A vehicle with any tyre below that must not be driven and its\n"
        "tyres are replaced this month regardless of budget.\n\n"
        "Beyond the law we replace early. A tyre is due for replacement when its tread is below the company\n"
        f"threshold for the vehicle type: {threshold['car']} mm for cars, {threshold['van']} mm for vans, "
        f"{threshold['minibus']} mm for minibuses\nand {threshold['truck']} mm for trucks.\n\n"
        "Tyres are always replaced in axle sets: if any tyre on an axle is due, every tyre on that axle is\n"
        "replaced. Positions starting with F are on the front axle and positions starting with R on the rear.\n\n"
        "Prices come from the tyre price list for the vehicle type. Vehicles use all-season tyres unless a\n"
        "depot has been told to fit winter tyres.\n"
    )
    ctx.write("mail/2026-11-24_winter_tyres.eml",
        "From: fleet.engineer@ourfleet.example\nSubject: Winter conditions from 1 December\n\n"
        f"All vehicles based at {winter_depot} depot run winter tyres from 1 December, so any replacement there\n"
        f"is a winter tyre. Winter tyres lose their grip below {winter_min} mm, so at {winter_depot} a tyre is due\n"
        f"below {winter_min} mm or below its normal company threshold, whichever is higher.\n"
    )
    ctx.write("mail/2026-11-27_december_budget.eml",
        "From: finance@ourfleet.example\nSubject: December tyre budget\n\n"
        f"The tyre budget for December is GBP {budget:,}. Legal-minimum work comes first and is paid for whatever\n"
        "happens, out of that budget. Then take the remaining vehicles in order of their worst tyre, lowest tread\n"
        "first; if two vehicles have the same worst tread, go by registration in alphabetical order. A vehicle is\n"
        "done in full or not at all: if it does not fit in what is left, defer it and carry on down the list.\n"
    )
    for i in range(ctx.size("depot_mail")):
        v = rng.choice(vehicles)
        ctx.write(f"mail/2026-11-{i + 1:02d}_depot_{i}.eml",
            f"From: {v[3].lower().replace(' ', '')}@ourfleet.example\nSubject: {v[1]} - driver report\n\n"
            f"Driver of {v[1]} reports a {rng.choice(['rattling door', 'sticky gearbox', 'noisy heater fan', 'cracked mirror'])}.\n"
            "Nothing tyre related; booked into the workshop.\n")
    for i in range(ctx.size("workshop_notes")):
        ctx.write(f"workshop/workshop_note_{i:03d}.txt",
            f"Workshop note {i + 1}: wheel balancing machine serviced, torque wrench checked. Stock of valve caps\n"
            f"reordered ({rng.randint(50, 200)} units). No change to the tyre policy.\n")
