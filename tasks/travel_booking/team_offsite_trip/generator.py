"""State for travel_booking/team_offsite_trip: staff directory, flight schedule, hotels, policy and notes."""
import datetime as dt

CITIES = ["Lisbon", "Madrid", "Berlin", "Dublin", "Vienna", "Prague", "Copenhagen", "Milan"]
AIRLINES = ["Aurora Air", "Blue Skies", "Continental Hop", "Danube Wings", "Eastjet"]
FIRST = ["Ana", "Bruno", "Carla", "Dmitri", "Elif", "Felix", "Greta", "Hamid", "Ivy", "Jonas", "Kemal", "Lena",
         "Marta", "Nico", "Oona", "Pedro", "Rania", "Stefan", "Tilde", "Ugo", "Valeria", "Wiktor", "Xenia", "Yusuf"]
LAST = ["Almeida", "Berger", "Costa", "Dvorak", "Eriksen", "Fontaine", "Gallo", "Horvat", "Ivanova", "Jensen",
        "Keller", "Lopes", "Meyer", "Novak", "Olsen", "Petrov", "Quinn", "Rossi", "Schmidt", "Toth"]
HOTEL_WORDS = ["Grand", "Harbour", "Plaza", "Garden", "Central", "Riverside", "Old Town", "Station", "Park", "Royal"]


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE employees (id INTEGER PRIMARY KEY, name TEXT UNIQUE, department TEXT, home_city TEXT, email TEXT);
        CREATE TABLE flights (id INTEGER PRIMARY KEY, flight_no TEXT UNIQUE, airline TEXT, origin TEXT, destination TEXT,
            depart TEXT, arrive TEXT, cabin TEXT, fare REAL);
        CREATE TABLE hotels (id INTEGER PRIMARY KEY, name TEXT, city TEXT, nightly_rate REAL, rating REAL, distance_km REAL);
        CREATE TABLE trips (id INTEGER PRIMARY KEY, name TEXT, destination TEXT);
        CREATE TABLE flight_bookings (id INTEGER PRIMARY KEY, trip_id INTEGER, employee_id INTEGER, flight_id INTEGER, fare REAL);
        CREATE TABLE hotel_bookings (id INTEGER PRIMARY KEY, trip_id INTEGER, employee_id INTEGER, hotel_id INTEGER,
            check_in TEXT, check_out TEXT, cost REAL);
        """
    )
    dest = rng.choice(CITIES)
    origins = [c for c in CITIES if c != dest]
    names = rng.sample([f"{f} {l}" for f in FIRST for l in LAST], ctx.size("employees"))
    employees = []
    for eid in range(1, ctx.size("employees") + 1):
        home = dest if eid % 9 == 0 else rng.choice(origins)
        employees.append({"id": eid, "name": names[eid - 1], "department": rng.choice(["Sales", "Product", "Finance", "Design", "Support"]),
                          "home_city": home, "email": names[eid - 1].lower().replace(" ", ".") + "@corp.example"})
    db.executemany("INSERT INTO employees VALUES (:id, :name, :department, :home_city, :email)", employees)

    # Attendees: one local to the venue, one who drives, one who avoids an airline; the rest fly normally.
    local = rng.choice([e for e in employees if e["home_city"] == dest])
    flyers = rng.sample([e for e in employees if e["home_city"] != dest], ctx.size("attendees") - 1)
    attendees = sorted([local] + flyers, key=lambda e: e["id"])
    driver, avoider = flyers[0], flyers[1]

    first_day = dt.date(2027, 1, 11) + dt.timedelta(days=rng.randint(0, 2) + 7 * rng.randint(0, 2))
    last_day = first_day + dt.timedelta(days=rng.randint(1, 2))
    end_hour = rng.choice([16, 17])
    cutoff_hour = ctx.params["cutoff_hour"]
    gap_hours = rng.choice([2, 3])
    eve = first_day - dt.timedelta(days=1)

    flights, numbers = [], set()

    def add_flight(origin, destination, day, dep_minutes, duration, fare, airline=None, cabin="economy"):
        airline = airline or rng.choice(AIRLINES)
        while True:
            no = f"{airline[:2].upper()}{rng.randint(100, 9999)}"
            if no not in numbers:
                numbers.add(no)
                break
        dep = dt.datetime.combine(day, dt.time()) + dt.timedelta(minutes=dep_minutes)
        arr = dep + dt.timedelta(minutes=duration)
        flights.append({"flight_no": no, "airline": airline, "origin": origin, "destination": destination,
                        "depart": dep.strftime("%Y-%m-%d %H:%M"), "arrive": arr.strftime("%Y-%m-%d %H:%M"),
                        "cabin": cabin, "fare": round(fare, 2)})
        return flights[-1]

    mult = ctx.rows(1)
    for city in origins:
        duration = rng.randint(100, 230)
        for day in (eve, first_day, last_day, last_day + dt.timedelta(days=1)):
            for _ in range(rng.randint(2, 4) * mult):
                for origin, destination in ((city, dest), (dest, city)):
                    add_flight(origin, destination, day, rng.randint(6 * 60, 22 * 60), duration, rng.uniform(60, 320),
                               cabin="business" if rng.random() < 0.15 else "economy")
        # Always a fitting outbound and return on two airlines, plus cheap arrivals half an hour after each possible
        # cutoff, cheaper the later they land: whatever the cutoff, the cheapest flight breaks it, and each cutoff
        # has its own cheapest qualifying flight.
        latest_dep = cutoff_hour * 60 - duration
        for airline in rng.sample(AIRLINES, 2):
            add_flight(city, dest, eve, rng.randint(7 * 60, latest_dep - 30), duration, rng.uniform(90, 250), airline)
            add_flight(dest, city, last_day, rng.randint((end_hour + gap_hours) * 60, 21 * 60 + 30), duration, rng.uniform(90, 250), airline)
        for k, hour in enumerate(ctx.choices("cutoff_hour")):
            add_flight(city, dest, eve, hour * 60 + 30 - duration, duration, 45 - 5 * k - rng.uniform(0, 2))
        add_flight(dest, city, last_day, (end_hour + gap_hours) * 60 - rng.randint(15, 80), duration, rng.uniform(35, 55))
    for _ in range(ctx.size("noise_flights")):
        a, b = rng.sample(CITIES, 2)
        add_flight(a, b, first_day + dt.timedelta(days=rng.randint(-6, 9)), rng.randint(6 * 60, 22 * 60), rng.randint(90, 240), rng.uniform(50, 400))
    rng.shuffle(flights)
    for fid, f in enumerate(flights, 1):
        f["id"] = fid
    db.executemany("INSERT INTO flights VALUES (:id, :flight_no, :airline, :origin, :destination, :depart, :arrive, :cabin, :fare)", flights)

    def outbound_options(e):
        return [f for f in flights if f["origin"] == e["home_city"] and f["destination"] == dest and f["cabin"] == "economy"
                and f["depart"][:10] == eve.isoformat() and f["arrive"] <= f"{eve.isoformat()} {cutoff_hour:02d}:00"]

    def return_options(e):
        earliest = f"{last_day.isoformat()} {end_hour + gap_hours:02d}:00"
        return [f for f in flights if f["origin"] == dest and f["destination"] == e["home_city"] and f["cabin"] == "economy"
                and f["depart"][:10] == last_day.isoformat() and f["depart"] >= earliest]

    cheapest = lambda opts: min(opts, key=lambda f: (f["fare"], f["depart"], f["id"]))
    avoided_airline = cheapest(outbound_options(avoider))["airline"]

    caps = {c: rng.choice([120, 135, 150, 165, 180, 195]) for c in CITIES}
    cap = caps[dest]
    hotels = []
    n_local = max(5, ctx.size("hotels") // 3)
    for hid in range(1, ctx.size("hotels") + 1):
        city = dest if hid <= n_local else rng.choice(origins)
        hotels.append({"id": hid, "name": f"Hotel {rng.choice(HOTEL_WORDS)} {city} {hid}", "city": city,
                       "nightly_rate": round(rng.uniform(cap - 60, cap + 80), 2), "rating": rng.choice([3.5, 4.0, 4.5]),
                       "distance_km": round(rng.uniform(0.3, 9.0), 1)})
    # A star hotel over the cap, and two in-cap hotels tied on rating where distance decides.
    hotels[0].update(rating=5.0, nightly_rate=cap + 25.0)
    hotels[1].update(rating=4.8, nightly_rate=round(cap - 10.5, 2), distance_km=4.2)
    hotels[2].update(rating=4.8, nightly_rate=round(cap - 30.25, 2), distance_km=1.7)
    rng.shuffle(hotels)
    for hid, h in enumerate(hotels, 1):
        h["id"] = hid
    db.executemany("INSERT INTO hotels VALUES (:id, :name, :city, :nightly_rate, :rating, :distance_km)", hotels)

    # --- workspace ---------------------------------------------------------------------------------
    long = lambda d: f"{d.strftime('%A')} {d.day} {d.strftime('%B %Y')}"
    people = "\n".join(f"  - {e['name']}" for e in attendees)
    ctx.write("mail/offsite_invitation.eml",
        f"From: organiser@corp.example\nSubject: Team offsite in {dest}\n\nHi everyone,\n\nOur offsite will be in {dest}. "
        f"Sessions start at 09:00 on {long(first_day)} and the last session finishes at {end_hour}:00 on {long(last_day)}. "
        f"The following people are coming:\n{people}\n\nPlease let the travel desk know about any special arrangements.\n")
    allowances = "\n".join(f"| {c} | {caps[c]} EUR |" for c in CITIES)
    ctx.write("policy/travel_policy.md",
        "# Company travel policy\n\n## Flights\n\nBook economy class only. Travellers fly in on the day before an event "
        f"starts and must land no later than the cutoff hour the travel desk sets for the event, that evening. Return flights leave on the last day of the "
        f"event, departing at least {gap_hours} hours after the final session ends. Among the flights that qualify, "
        "book the cheapest fare; if two fares are equal take the earlier departure.\n\n## Hotels\n\nEveryone on a trip "
        "stays in the same hotel, from the night before the event until the morning of the last day (check-out on the last "
        "day). The nightly rate may not exceed the city allowance below. Among the hotels that qualify choose the best "
        "rated; if ratings are equal, the one closest to the venue.\n\n| City | Nightly allowance |\n|---|---|\n"
        f"{allowances}\n\nStaff who live in the event city do not get flights or hotel nights.\n")
    notes = [
        (driver, f"{driver['name']} is driving to {dest} in their own car (bringing the demo kit), so no flights are needed for them - they still need a hotel room like everyone else."),
        (avoider, f"{avoider['name']} has asked us never to book them on {avoided_airline} again after last year's lost-luggage saga. Any other airline is fine."),
    ]
    diets = ["is vegetarian", "would like an aisle seat where possible", "needs a quiet room", "is allergic to nuts",
             "would like a late checkout if free", "prefers window seats"]
    others = [e for e in employees if e not in (driver, avoider)]
    for _ in range(ctx.size("traveller_notes")):
        e = rng.choice(others)
        notes.append((e, f"{e['name']} {rng.choice(diets)}."))
    # A stale wish from a colleague who is not coming to this offsite: it must not change anything.
    bystander = rng.choice([e for e in employees if e not in attendees])
    notes.append((bystander, f"{bystander['name']} will not fly {rng.choice(AIRLINES)} under any circumstances."))
    rng.shuffle(notes)
    for i, (e, text) in enumerate(notes, 1):
        ctx.write(f"traveller_notes/note_{i:03d}.txt", f"Travel desk note\nRe: {e['name']} ({e['email']})\n\n{text}\n")
    topics = ["expense tool outage", "new corporate card", "visa reminder", "rail pass trial", "parking at HQ",
              "laptop security when travelling"]
    for i in range(ctx.size("other_mail")):
        topic = topics[i % len(topics)]
        ctx.write(f"mail/info_{i:03d}_{topic.replace(' ', '_')}.eml",
            f"From: travel.desk@corp.example\nSubject: {topic}\n\nA short update on the {topic}; this does not change how trips "
            f"are booked. Ref {rng.randint(1000, 9999)}.\n")

    ctx.facts(no_flights=[driver["id"], local["id"]], avoider=[avoider["id"], avoided_airline])
