"""State for fleet_maintenance/fuel_anomalies: vehicles, drivers with fuel cards, November transactions, ops mail."""
from datetime import datetime, timedelta

DRIVERS = ["Ana Petrova", "Ben Carter", "Chidi Obi", "Dana Levy", "Emil Novak", "Fatima Zahra", "Goran Ilic",
           "Hanna Berg", "Ivan Rossi", "Jade Wong", "Karl Meier", "Lina Haddad", "Marco Silva", "Nora Quinn",
           "Omar Aziz", "Pia Lund", "Raj Mehta", "Sofia Costa", "Tom Reid", "Ula Nowak"]
STATIONS = ["Shell A1 North", "BP Ringway", "Esso Dockside", "Total Parkway", "Aral Westgate", "Q8 Harbour Rd"]
PRICE = {"diesel": 1.62, "petrol": 1.74}


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE drivers (id INTEGER PRIMARY KEY, name TEXT, card_number TEXT UNIQUE, card_status TEXT);
        CREATE TABLE vehicles (id INTEGER PRIMARY KEY, unit_number TEXT UNIQUE, fuel_type TEXT, tank_litres INTEGER,
            driver_id INTEGER, depot TEXT);
        CREATE TABLE fuel_transactions (id INTEGER PRIMARY KEY, card_number TEXT, unit_number TEXT, txn_time TEXT,
            station TEXT, fuel_type TEXT, litres REAL, amount REAL, odometer_km INTEGER);
        CREATE TABLE anomaly_flags (id INTEGER PRIMARY KEY, transaction_id INTEGER UNIQUE, rule TEXT);
        """
    )
    n = ctx.size("vehicles")
    lasts = rng.sample(range(1000, 10000), n)
    drivers = [(i, f"{DRIVERS[(i - 1) % len(DRIVERS)]}{'' if i <= len(DRIVERS) else f' ({(i - 1) // len(DRIVERS) + 1})'}",
                f"7077 {rng.randint(1000, 9999)} {rng.randint(1000, 9999)} {lasts[i - 1]}", "active") for i in range(1, n + 1)]
    vehicles = []
    for vid in range(1, n + 1):
        fuel = rng.choice(["diesel", "diesel", "petrol"])
        vehicles.append([vid, f"V-{200 + vid}", fuel, rng.choice([60, 70, 80, 90]), vid, rng.choice(["North", "South", "Port"])])
    window_hours = rng.choice([3, 4, 6])

    txns = []

    def txn(vehicle, when, litres, odometer, fuel=None, card=None):
        fuel = fuel or vehicle[2]
        txns.append([0, card or drivers[vehicle[4] - 1][2], vehicle[1], when.strftime("%Y-%m-%d %H:%M"), rng.choice(STATIONS),
                     fuel, round(litres, 1), round(litres * PRICE[fuel], 2), odometer])

    start = datetime(2026, 11, 2, 7, 0)
    odometers = {}
    for v in vehicles:
        odo = rng.randint(30000, 150000)
        day = start + timedelta(days=rng.randint(0, 2))
        while day < datetime(2026, 11, 28):
            if day.weekday() >= 5:
                day += timedelta(days=7 - day.weekday())
            when = day.replace(hour=rng.randint(6, 20), minute=rng.randint(0, 59))
            odo += rng.randint(250, 700)
            txn(v, when, v[3] * rng.uniform(0.4, 0.9), odo)
            day += timedelta(days=rng.randint(3, 5))
        odometers[v[0]] = odo

    # Guaranteed anomalies, one vehicle per rule, none tripping an earlier rule.
    cast = rng.sample(vehicles, 12)
    stolen_v, wrong_v, over_v, aux_v, rollback_v, rapid_v, night_v, off_v, spare = cast[:9]
    stolen_at = datetime(2026, 11, rng.randint(12, 20), rng.choice([9, 13, 16]), 0)
    stolen_card = drivers[stolen_v[4] - 1][2]
    # Whoever used the stolen card typed no unit number and no odometer reading at the pump.
    for when in (stolen_at + timedelta(hours=5), stolen_at + timedelta(days=1, hours=2)):
        txns.append([0, stolen_card, "", when.strftime("%Y-%m-%d %H:%M"), rng.choice(STATIONS), "diesel", 55.0,
                     round(55 * PRICE["diesel"], 2), None])
    monday = datetime(2026, 11, 30)
    wrong_fuel = "petrol" if wrong_v[2] == "diesel" else "diesel"
    txn(wrong_v, monday.replace(hour=10, minute=15), 30, odometers[wrong_v[0]] + 300, fuel=wrong_fuel)
    txn(over_v, monday.replace(hour=11, minute=40), over_v[3] + rng.randint(8, 20), odometers[over_v[0]] + 400)
    aux_litres = rng.choice([40, 50, 60])
    txn(aux_v, monday.replace(hour=9, minute=5), aux_v[3] + aux_litres - 5, odometers[aux_v[0]] + 500)  # fits the new tank
    txn(rollback_v, monday.replace(hour=12, minute=30), 35, odometers[rollback_v[0]] - 1200)
    first = monday.replace(hour=7, minute=0)
    txn(rapid_v, first, 50, odometers[rapid_v[0]] + 350)
    txn(rapid_v, first + timedelta(hours=window_hours, minutes=-20), 20, odometers[rapid_v[0]] + 420)   # too soon
    txn(rapid_v, first + timedelta(hours=2 * window_hours, minutes=-20), 25, odometers[rapid_v[0]] + 500)  # exactly the window
    txn(night_v, monday.replace(hour=23, minute=30), 45, odometers[night_v[0]] + 300)   # night shift: allowed
    txn(off_v, datetime(2026, 11, 29, 14, 0), 45, odometers[off_v[0]] + 100)          # Sunday afternoon
    txn(off_v, monday.replace(hour=4, minute=10), 30, odometers[off_v[0]] + 200)       # before 05:00
    # Evening fills at 20:30, 21:30 and 22:30 on day-shift cards: whichever evening cut-off the request names
    # decides which of them are out of hours.
    for hour, late_v in zip((20, 21, 22), cast[9:]):
        txn(late_v, monday.replace(hour=hour, minute=30), 30, odometers[late_v[0]] + 300)
    txns.sort(key=lambda t: t[3])
    for i, t in enumerate(txns, start=1):
        t[0] = i
    db.executemany("INSERT INTO drivers VALUES (?,?,?,?)", drivers)
    db.executemany("INSERT INTO vehicles VALUES (?,?,?,?,?,?)", [tuple(v) for v in vehicles])
    db.executemany("INSERT INTO fuel_transactions VALUES (?,?,?,?,?,?,?,?,?)", [tuple(t) for t in txns])

    ctx.write("audit/fuel_audit_rules.md",
        "# Fuel card audit rules\n\n"
        "Check every transaction against the rules below, in this order, and label it with the code of the first "
        "rule it breaks (one label per transaction).\n\n"
        "1. stolen_card - any purchase on a card at or after the moment it was reported lost or stolen.\n"
        "2. wrong_fuel - fuel of a different type from the vehicle's.\n"
        "3. over_capacity - more litres than the vehicle's tank can hold.\n"
        "4. odometer_rollback - an odometer reading lower than the one at that vehicle's previous fill.\n"
        f"5. rapid_refill - a purchase on a card less than {window_hours} hours after the previous purchase on the same card.\n"
        "6. off_hours - a purchase on a Saturday or Sunday, or between the evening cut-off named in the audit request "
        "and 05:00 on any day, unless the card "
        "belongs to a driver on the night-shift roster.\n\n"
        "A card reported lost or stolen must also be blocked.\n"
    )
    ctx.write("ops_inbox/workshop_aux_tank.eml",
        f"From: workshop@fleet.example\nSubject: {aux_v[1]} tank upgrade\n\nFYI, {aux_v[1]} came out of the workshop on "
        f"3 November with an auxiliary tank fitted. It now holds {aux_v[3] + aux_litres} litres in total, so big fills "
        "on it are expected from now on. The system record will be updated next month.\n"
    )
    ctx.write("ops_inbox/night_shift_roster.eml",
        "From: planning@fleet.example\nSubject: November night shift\n\n"
        f"Night-shift drivers for November are {drivers[night_v[4] - 1][1]} and {drivers[spare[4] - 1][1]}. They "
        "refuel late in the evening and overnight as part of the job.\n"
    )
    ctx.write("ops_inbox/lost_card.eml",
        f"From: {drivers[stolen_v[4] - 1][1].lower().replace(' ', '.')}@fleet.example\nSubject: My fuel card\n\n"
        f"Hi, my wallet was stolen and my fuel card went with it (card ending {stolen_card[-4:]}). I noticed at "
        f"{stolen_at.strftime('%H:%M')} on {stolen_at.day} November and reported it straight away. Sorry!\n"
    )
    chatter = ["car wash tokens", "depot gate codes", "tyre supplier change", "mileage logs", "winter kit", "parking fines"]
    picks = [(chatter[i % len(chatter)], rng.choice(vehicles), rng.randint(100, 999)) for i in range(ctx.size("ops_mail"))]
    for i, (topic, v, ref) in enumerate(picks):
        body = f"A note on the {topic}. {v[1]} at {v[5]} depot is mentioned in the log but nothing about fuel changes."
        ctx.write(f"ops_inbox/ops_{i:02d}_{topic.replace(' ', '_')}.eml",
            f"From: ops@fleet.example\nSubject: {topic.capitalize()}\n\n{body} Reference {ref}.\n")
