"""State for manufacturing_quality/spc_signals: measured subgroups of machined characteristics and the SPC procedure.
The request (task.toml [params]) sets the number of baseline subgroups this month's review uses (the procedure leaves it
to the request; every characteristic has that many plus 25 subgroups; characteristics 1 and 2 jump at the last baseline
subgroup and the first monitoring one, so a baseline of another length changes the signals)."""
import datetime as dt
import json

FEATURES = [("bore diameter", "mm", 12.000, 0.004), ("flange thickness", "mm", 6.500, 0.006), ("shaft runout", "mm", 0.020, 0.002),
            ("thread pitch diameter", "mm", 9.026, 0.003), ("surface roughness", "um", 0.80, 0.05), ("hole position", "mm", 25.000, 0.008),
            ("groove depth", "mm", 1.750, 0.004), ("seal face flatness", "mm", 0.010, 0.001)]
PARTS = ["PX-2 housing", "VB-7 body", "CT-1 shaft", "SH-4 cap"]
A2, D4 = 0.577, 2.114
N = 5


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE characteristics (id INTEGER PRIMARY KEY, code TEXT UNIQUE, part TEXT, name TEXT, unit TEXT, nominal REAL);
        CREATE TABLE subgroups (id INTEGER PRIMARY KEY, characteristic_id INTEGER, seq INTEGER, measured_at TEXT, gauge TEXT,
            batch_no TEXT, readings TEXT);
        CREATE TABLE ncrs (id INTEGER PRIMARY KEY, characteristic_id INTEGER, seq INTEGER, rule TEXT);
        CREATE TABLE batch_holds (batch_no TEXT PRIMARY KEY, ncr_id INTEGER);
        """
    )
    baseline = ctx.params["baseline"]
    run_len = rng.choice([7, 8])
    per_char = baseline + 25
    n_chars = ctx.size("characteristics")
    gauges = [f"G-{k:02d}" for k in range(10, 18)]
    bad_gauge = rng.choice(gauges)
    bad_day = dt.date(2026, 11, rng.randint(10, 20))
    bad_from, bad_to = rng.choice([8, 9, 10]), rng.choice([13, 14, 15])

    chars, subgroups = [], []
    for cid in range(1, n_chars + 1):
        name, unit, nominal, sigma = FEATURES[(cid - 1) % len(FEATURES)]
        part = PARTS[(cid - 1) % len(PARTS)]
        chars.append((cid, f"CH-{100 + cid}", part, name, unit, nominal))
        # Pinned disturbances by characteristic number: a sustained shift, a spike, a widened range.
        kind = ["shift", "spike", "spread", "calm"][(cid - 1) % 4]
        start = dt.datetime(2026, 11, 2, 6, 0)
        shift_at = baseline + rng.randint(3, 10)
        for seq in range(1, per_char + 1):
            when = start + dt.timedelta(hours=7 * seq + rng.randint(0, 3))
            mean, spread = nominal, sigma
            if kind == "shift" and seq >= shift_at:
                mean += sigma * 0.9
            if kind == "spike" and seq == shift_at:
                mean += sigma * 3.5
            if kind == "spread" and seq == shift_at:
                spread *= 4.5
            if cid in (1, 2) and seq in (baseline, baseline + 1):
                mean += sigma * 4  # the last baseline and the first monitoring subgroup: a different baseline length shows
            vals = [round(rng.gauss(mean, spread), 4) for _ in range(N)]
            subgroups.append([cid, seq, when.strftime("%Y-%m-%d %H:%M"), rng.choice(gauges), f"B{when.strftime('%m%d')}-{cid % 7 + 1}", vals])
    # The bad gauge's window: force a few monitoring subgroups into it, one with a wild reading.
    trial = chars[rng.randint(0, n_chars - 1)]
    monitoring = [s for s in subgroups if s[1] > baseline and s[0] != trial[0] and not (s[0] in (1, 2) and s[1] == baseline + 1)]
    forced = rng.sample(monitoring, 3)
    for s in forced:
        s[2] = f"{bad_day.isoformat()} {rng.randint(bad_from, bad_to - 1):02d}:{rng.choice(['05', '20', '40'])}"
        s[3] = bad_gauge
    wild = forced[0]
    name_sigma = FEATURES[(wild[0] - 1) % len(FEATURES)][3]
    wild[5] = [round(v + 6 * name_sigma, 4) for v in wild[5]]
    # A measurement by the same gauge just after the window is valid.
    rows = [(i + 1, *s[:5], json.dumps(s[5])) for i, s in enumerate(subgroups)]
    db.executemany("INSERT INTO characteristics VALUES (?,?,?,?,?,?)", chars)
    db.executemany("INSERT INTO subgroups VALUES (?,?,?,?,?,?,?)", rows)

    # --- workspace ---------------------------------------------------------------------------------
    ctx.write("quality/spc_procedure.md",
        "# SPC procedure QP-21: X-bar and R charts\n\n"
        f"Each subgroup holds {N} consecutive parts. Control limits come from the baseline: the first subgroups of "
        "the month for each characteristic (in sequence order); each month's review request says how many. Centre line = mean of the baseline subgroup averages; R-bar = "
        "mean of the baseline subgroup ranges (largest minus smallest reading).\n\n"
        "| constant | value for n = 5 |\n|---|---|\n"
        f"| A2 | {A2} |\n| D3 | 0 |\n| D4 | {D4} |\n\n"
        "X-bar limits are centre line plus or minus A2 x R-bar; the upper range limit is D4 x R-bar.\n\n"
        "## Out-of-control rules (monitoring subgroups only, i.e. after the baseline)\n\n"
        "1. `beyond_limits`: the subgroup average is above the upper or below the lower X-bar limit.\n"
        "2. `range`: the subgroup range is above the upper range limit.\n"
        f"3. `run`: the subgroup is the {run_len}th or later in an unbroken run of subgroup averages on the same side of the "
        "centre line.\n\nWhen a subgroup breaks several rules, report the first one in this list. Raise one NCR per "
        "out-of-control subgroup and hold every batch involved (once) under one of those NCRs.\n")
    ctx.write("logs/calibration_notice.txt",
        f"Metrology notice\n\nGauge {bad_gauge} was found out of calibration. Every reading it took on {bad_day.strftime('%d %B %Y')} from "
        f"{bad_from:02d}:00 until {bad_to:02d}:00 is invalid. Leave those subgroups out of the SPC review entirely - they do not "
        "count as signals and they neither extend nor break a run.\n")
    ctx.write("logs/engineering_trial.txt",
        f"Engineering change note\n\n{trial[1]} ({trial[3]} on the {trial[2]}) is running an approved process trial all month. Do "
        "not chart it or raise anything against it this month.\n")
    for i in range(ctx.size("operator_logs")):
        c = rng.choice(chars)
        ctx.write(f"logs/operator_log_{i:03d}.txt",
            f"Operator log\n\nShift {rng.choice(['A', 'B', 'C'])}: measured {c[1]} ({c[3]}). {rng.choice(['Tool change at mid-shift.', 'Coolant topped up.', 'No issues.'])}\n")
    for i in range(ctx.size("quality_news")):
        ctx.write(f"news/quality_news_{i:03d}.md",
            f"# Quality news {i + 1}\n\nAudit season is coming; nothing changes in SPC.\n")

    ctx.facts(trial_characteristic=trial[0], invalid_subgroup=[wild[0], wild[1]])
