"""State for manufacturing_quality/calibration_overdue: an instrument register with calibration history,
a metrology memo (failed calibrations, torque interval change, exempt locations, labs) and QA deviations."""
import datetime as dt

TYPES = {"caliper": 365, "micrometer": 365, "gauge block": 730, "torque wrench": 365, "pressure gauge": 180,
         "height gauge": 365, "thermocouple": 180}
LOCATIONS = ["Line 1", "Line 2", "Line 3", "Assembly", "Goods-in inspection", "Tool crib", "Stores"]
AUDIT = dt.date(2026, 11, 30)
LABS = ["Aldridge Calibration", "Brightwater Metrology", "Castleford Test House"]


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE instruments (id INTEGER PRIMARY KEY, tag TEXT UNIQUE, type TEXT, location TEXT, status TEXT,
            interval_days INTEGER, commissioned_on TEXT, serial TEXT);
        CREATE TABLE calibrations (id INTEGER PRIMARY KEY, instrument_id INTEGER, performed_on TEXT, result TEXT,
            certificate TEXT);
        CREATE TABLE locks (id INTEGER PRIMARY KEY, instrument_id INTEGER, reason TEXT);
        CREATE TABLE bookings (id INTEGER PRIMARY KEY, lock_id INTEGER, lab TEXT, priority TEXT);
        """
    )
    torque_days = rng.choice([182, 200, 240])
    external_lab = rng.choice(LABS)
    n = ctx.size("instruments")
    instruments = []
    for iid in range(1, n + 1):
        kind = rng.choice(list(TYPES))
        status = "retired" if rng.random() < 0.06 else "in service"
        commissioned = dt.date(2019, 1, 1) + dt.timedelta(days=rng.randint(0, 2200))
        instruments.append([iid, f"{kind[:2].upper()}-{1000 + iid * 3}", kind, rng.choice(LOCATIONS), status,
                            TYPES[kind], commissioned.isoformat(), f"SN{rng.randint(100000, 999999)}"])
    history = []
    budget = ctx.size("calibration_history")
    for k in range(budget):
        inst = instruments[k % n] if k < n * 3 else rng.choice(instruments)
        start = dt.date.fromisoformat(inst[6])
        if start >= AUDIT - dt.timedelta(days=10):
            continue
        day = start + dt.timedelta(days=rng.randint(0, (AUDIT - start).days - 1))
        result = rng.choices(["pass", "adjusted", "fail"], [0.7, 0.15, 0.15])[0]
        history.append([inst[0], day.isoformat(), result, f"CERT-{rng.randint(10000, 99999)}"])

    # Traps guaranteed at every scale.
    def only(iid, rows):
        history[:] = [h for h in history if h[0] != iid] + [[iid, d, r, f"CERT-{rng.randint(10000, 99999)}"] for d, r in rows]
    # (type, location, status, interval, calibrations as (days before the audit, result)), one instrument each:
    # a recent fail does not reset the clock; overdue only on the torque interval; overdue but in Stores; overdue but
    # retired; covered by a QA deviation; due on the audit day (not overdue); the most overdue of all.
    traps = [("pressure gauge", "Line 1", "in service", 180, [(400, "pass"), (20, "fail")]),
             ("torque wrench", "Assembly", "in service", 365, [(torque_days + 9, "pass")]),
             ("caliper", "Stores", "in service", 365, [(500, "pass")]),
             ("micrometer", "Line 2", "retired", 365, [(700, "pass")]),
             ("height gauge", "Line 3", "in service", 365, [(375, "adjusted")]),
             ("caliper", "Goods-in inspection", "in service", 365, [(365, "pass")]),
             ("thermocouple", "Line 1", "in service", 180, [(1200, "pass"), (300, "fail")])]
    # Every area the request may leave out holds an instrument that is clearly overdue (even with a deviation), and
    # Line 1 (never left out) holds calipers between each pair of urgency cut-offs the request may set.
    traps += [("caliper", location, "in service", 365, [(500, "pass")])
              for location in ctx.choices("excluded_location")]
    traps += [("caliper", "Line 1", "in service", 365, [(365 + late, "pass")]) for late in (20, 38, 52, 75)]
    for inst, (kind, location, status, interval, calibrations) in zip(instruments, traps):
        inst[2:6] = [kind, location, status, interval]
        only(inst[0], [((AUDIT - dt.timedelta(days=ago)).isoformat(), result) for ago, result in calibrations])
    instruments[6][6] = (AUDIT - dt.timedelta(days=1500)).isoformat()  # commissioned before its first calibration
    deviation_days = rng.choice([21, 30, 45])
    deviated = [instruments[4][1]] + [i[1] for i in rng.sample(instruments[16:], 2)]
    # No other instrument may beat the designated most-overdue one.
    history.sort(key=lambda h: (h[0], h[1]))
    last_good = {}
    for iid, day, result, _ in history:
        if result != "fail":
            last_good[iid] = day
    for inst in instruments[7:]:
        base = last_good.get(inst[0], inst[6])
        if (AUDIT - dt.date.fromisoformat(base)).days > 1000:  # never calibrated: due on commissioning, so keep it under 1020
            history.append([inst[0], (AUDIT - dt.timedelta(days=rng.randint(100, 900))).isoformat(), "pass", "CERT-10000"])
    history.sort(key=lambda h: (h[1], h[0]))
    db.executemany("INSERT INTO instruments VALUES (?,?,?,?,?,?,?,?)", [tuple(i) for i in instruments])
    db.executemany("INSERT INTO calibrations (instrument_id, performed_on, result, certificate) VALUES (?,?,?,?)",
                   [tuple(h) for h in history])

    ctx.write("quality/metrology_memo.md",
        "# Metrology memo: calibration status\n\n"
        "An instrument falls due for calibration its recorded interval (in days) after its last successful\n"
        "calibration. Both a pass and a pass after adjustment count as successful; a failed calibration does\n"
        "not restart the clock. An instrument that has never been calibrated successfully is due on the day it\n"
        "was commissioned. It is overdue once its due date is behind us; on the due date itself it is still fine.\n\n"
        f"Since the new torque standard, every torque wrench is on a {torque_days}-day interval whatever the\n"
        "register says; the register has not been updated yet.\n\n"
        "Retired instruments and anything held in Stores are not in use and are outside the calibration\n"
        "programme until they are issued again.\n\n"
        "Where an overdue instrument is found, lock it out of use first and then book its calibration against\n"
        "that lock. Dimensional instruments (calipers, micrometers, gauge blocks and height gauges) go to our\n"
        f"own metrology lab, which is booked as \"In-house lab\"; everything else goes to {external_lab}.\n"
        "Bookings are urgent when the instrument is overdue by more than the number of days set for each audit sweep,\n"
        "otherwise routine.\n"
    )
    ctx.write("mail/2026-11-12_qa_deviation.eml",
        "From: qa.manager@plant.example\nSubject: Approved deviation DV-2611\n\n"
        f"I have approved a {deviation_days}-day extension of the calibration due date for the following\n"
        "instruments while the lab clears its backlog: " + ", ".join(deviated) + ".\n"
        "Add the extension to their due date; they are only overdue if they are past the extended date.\n"
    )
    for i in range(ctx.size("qa_mail")):
        ctx.write(f"mail/2026-11-{i + 1:02d}_qa_note.eml",
            f"From: qa.team@plant.example\nSubject: {rng.choice(['5S audit', 'scrap figures', 'training matrix', 'supplier PPAP'])}\n\n"
            "Routine update; nothing here affects calibration status or instrument use.\n")
    for i in range(ctx.size("shift_logs")):
        inst = rng.choice(instruments)
        ctx.write(f"shift_logs/shift_log_{i:03d}.txt",
            f"Shift {i + 1}: {inst[1]} used on {inst[3]} for first-off checks, readings normal. Operator signed the\n"
            "check sheet. Next shift to continue the sampling plan.\n")
