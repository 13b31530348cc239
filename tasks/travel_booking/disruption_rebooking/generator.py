"""State for travel_booking/disruption_rebooking: a day of departures from one airport, customer bookings and agency files."""
import datetime as dt

AIRPORTS = {"LIS": "Lisbon", "MAD": "Madrid", "BER": "Berlin", "DUB": "Dublin", "VIE": "Vienna", "PRG": "Prague",
            "CPH": "Copenhagen", "MXP": "Milan", "ATH": "Athens", "OSL": "Oslo", "WAW": "Warsaw", "BRU": "Brussels"}
HUBS = ["AMS", "ZRH", "FRA"]
FIRST = ["Aino", "Boris", "Camille", "Dara", "Emil", "Flora", "Goran", "Hedda", "Ilse", "Joost", "Karin", "Lars", "Mira",
         "Nora", "Otto", "Paula", "Rune", "Saskia", "Timo", "Ulla", "Vince", "Wanda"]
LAST = ["Aalto", "Bakker", "Claes", "Dekker", "Engel", "Falk", "Graaf", "Hoek", "Jansen", "Kuiper", "Lind", "Mertens",
        "Nyberg", "Peeters", "Roos", "Smit", "Visser", "Wouters"]
TIERS = ["gold", "silver", "standard"]


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE flights (id INTEGER PRIMARY KEY, flight_no TEXT, origin TEXT, destination TEXT, depart TEXT, arrive TEXT,
            seats_left INTEGER);
        CREATE TABLE passengers (id INTEGER PRIMARY KEY, name TEXT, loyalty_tier TEXT, email TEXT);
        CREATE TABLE bookings (id INTEGER PRIMARY KEY, booking_ref TEXT UNIQUE, passenger_id INTEGER, flight_id INTEGER,
            booked_on TEXT, status TEXT, replaces INTEGER);
        CREATE TABLE vouchers (id INTEGER PRIMARY KEY, booking_id INTEGER, amount INTEGER);
        """
    )
    hub = rng.choice(HUBS)
    day = dt.date(2026, 12, rng.randint(7, 18))
    close_from, close_to = rng.choice([6, 7]), rng.choice([13, 14, 15])
    codes = list(AIRPORTS)
    routes = [codes[i % len(codes)] for i in range(ctx.size("routes"))]
    band1, band2 = rng.choice([(120, 300), (180, 360), (150, 420)])

    flights = []
    for r_idx, dest in enumerate(routes):
        duration = rng.randint(80, 200)
        carrier = rng.choice(["KL", "LX", "LH", "HV", "EW"])
        for d in (day, day + dt.timedelta(days=1)):
            hour = 6
            while hour < 22:
                dep = dt.datetime.combine(d, dt.time(hour, rng.choice([0, 10, 25, 40, 55])))
                flights.append({"flight_no": f"{carrier}{1000 + len(flights)}", "origin": hub, "destination": dest,
                                "depart": dep.strftime("%Y-%m-%d %H:%M"), "arrive": (dep + dt.timedelta(minutes=duration)).strftime("%Y-%m-%d %H:%M"),
                                "seats_left": rng.choice([0, 1, 2, 2, 3, 4, 6])})
                hour += rng.choice([2, 3, 4])
        # Inbound flights (other direction) are unaffected background.
        for _ in range(3):
            dep = dt.datetime.combine(day, dt.time(rng.randint(6, 20), 15))
            flights.append({"flight_no": f"{carrier}{1000 + len(flights)}", "origin": dest, "destination": hub,
                            "depart": dep.strftime("%Y-%m-%d %H:%M"), "arrive": (dep + dt.timedelta(minutes=duration)).strftime("%Y-%m-%d %H:%M"),
                            "seats_left": rng.randint(0, 9)})
    rng.shuffle(flights)
    for fid, f in enumerate(flights, 1):
        f["id"] = fid
    db.executemany("INSERT INTO flights VALUES (:id, :flight_no, :origin, :destination, :depart, :arrive, :seats_left)", flights)

    def closed(f):
        return f["origin"] == hub and f["depart"][:10] == day.isoformat() and close_from <= int(f["depart"][11:13]) < close_to
    cancelled = [f for f in flights if closed(f)]
    open_after = [f for f in flights if f["origin"] == hub and not closed(f)]

    passengers = []
    names = rng.sample([f"{a} {m}. {b}" for a in FIRST for m in "BDEGJKLMRSTW" for b in LAST], ctx.size("passengers"))
    for pid in range(1, ctx.size("passengers") + 1):
        passengers.append({"id": pid, "name": names[pid - 1], "loyalty_tier": rng.choices(TIERS, [0.15, 0.25, 0.6])[0],
                           "email": names[pid - 1].lower().replace(". ", ".").replace(" ", ".") + "@mail.example"})
    db.executemany("INSERT INTO passengers VALUES (:id, :name, :loyalty_tier, :email)", passengers)

    bookings, refs = [], set()

    def new_ref():
        while True:
            ref = "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(6))
            if ref not in refs:
                refs.add(ref)
                return ref

    # Affected bookings: about 2.5 per cancelled flight, with shared booking days so tiers and dates both decide order.
    pax_iter = iter(rng.sample(passengers, len(passengers)))
    for f in cancelled:
        for _ in range(rng.randint(1, 2)):
            p = next(pax_iter, None)
            if p is None:
                break
            bookings.append({"booking_ref": new_ref(), "passenger_id": p["id"], "flight_id": f["id"],
                             "booked_on": (day - dt.timedelta(days=rng.randint(3, 40))).isoformat(), "status": "confirmed"})
    affected = list(bookings)
    cancelled_one = rng.choice(affected)  # a customer who had already cancelled: nothing to do
    cancelled_one["status"] = "cancelled"
    for _ in range(ctx.size("background_bookings")):
        f = rng.choice(flights)
        if closed(f):
            continue
        bookings.append({"booking_ref": new_ref(), "passenger_id": rng.randint(1, len(passengers)), "flight_id": f["id"],
                         "booked_on": (day - dt.timedelta(days=rng.randint(1, 60))).isoformat(), "status": "confirmed"})
    rng.shuffle(bookings)
    for bid, b in enumerate(bookings, 1):
        b["id"] = bid
    db.executemany("INSERT INTO bookings VALUES (:id, :booking_ref, :passenger_id, :flight_id, :booked_on, :status, NULL)", bookings)

    live = [b for b in affected if b["status"] == "confirmed"]
    refund_wish = rng.choice(live)
    deadline_pick = rng.choice([b for b in live if b is not refund_wish])
    deadline_flight = next(f for f in flights if f["id"] == deadline_pick["flight_id"])
    # Any operating alternative departs later on the same route, so it lands after this: the note forces a refund.
    deadline = dt.datetime.strptime(deadline_flight["arrive"], "%Y-%m-%d %H:%M")

    # The rebookings the playbook leads to: priority order, earliest open flight with a seat, same destination,
    # departing no earlier; the customer who wants a refund, and anyone left without a flight, is refunded.
    tier_rank = {t: i for i, t in enumerate(TIERS)}
    pax = {p["id"]: p for p in passengers}
    flight = {f["id"]: f for f in flights}
    seats = {f["id"]: f["seats_left"] for f in flights}
    order = sorted(live, key=lambda b: (tier_rank[pax[b["passenger_id"]]["loyalty_tier"]], b["booked_on"], b["booking_ref"]))
    delays = set()
    for b in order:
        orig = flight[b["flight_id"]]
        if b is refund_wish:
            continue
        options = sorted((f for f in open_after if f["destination"] == orig["destination"] and f["depart"] >= orig["depart"]
                          and seats[f["id"]] > 0), key=lambda f: (f["depart"], f["id"]))
        if b is deadline_pick:
            options = [f for f in options if f["arrive"] <= deadline.strftime("%Y-%m-%d %H:%M")]
        if not options:
            continue
        new = options[0]
        seats[new["id"]] -= 1
        delay = dt.datetime.fromisoformat(new["depart"]) - dt.datetime.fromisoformat(orig["depart"])
        delays.add(int(delay.total_seconds() // 60))
    # Both voucher values must be earned by someone, so that each matters: where the drawn bands leave one of them
    # unused, put the bands at the shortest and the longest positive delay instead.
    delays = sorted(d for d in delays if d > 0)
    if len(delays) >= 2 and not (any(band1 <= d < band2 for d in delays) and delays[-1] >= band2):
        band1, band2 = delays[0], delays[-1]

    # --- workspace ---------------------------------------------------------------------------------
    long = lambda d: f"{d.strftime('%A')} {d.day} {d.strftime('%B %Y')}"
    ctx.write("inbox/airline_ops_notice.eml",
        f"From: ops-notices@airline.example\nSubject: Runway closure at {hub}\n\nDear partners,\n\nDue to emergency runway repairs at "
        f"{hub}, all departures from {hub} scheduled between {close_from:02d}:00 and {close_to:02d}:00 on {long(day)} are cancelled "
        f"(a departure at {close_to:02d}:00 or later operates). Arrivals into {hub} are not affected. Please reaccommodate your "
        "customers on later services; the schedules in the booking system have not been updated yet.\n")
    ctx.write("playbook/disruption_playbook.md",
        "# Disruption playbook\n\n## Who goes first\n\nSeats on alternative flights are limited. Handle affected customers in "
        "order of loyalty tier (gold, then silver, then standard); within a tier, whoever booked first goes first; if they "
        "booked on the same day, go by booking reference in alphabetical order.\n\n## Where to\n\nRebook each customer on the "
        "earliest flight to the same destination that departs no earlier than their original flight, actually operates and "
        "still has a free seat. If nothing is available before the end of the following day, refund the booking.\n\n"
        f"## Vouchers\n\nAfter rebooking, customers whose new departure is at least {band1} minutes later than the original get "
        f"the small voucher; at least {band2} minutes later, the large voucher instead. The airline sets the value of each\n"
        "voucher for every disruption. Vouchers are issued on the new booking.\n\n"
        "## Customer wishes\n\nAlways check the customer notes before rebooking.\n")
    p_refund, p_deadline = pax[refund_wish["passenger_id"]], pax[deadline_pick["passenger_id"]]
    notes = [
        f"Booking {refund_wish['booking_ref']} ({p_refund['name']}): customer called - if anything goes wrong with this trip they "
        "want their money back rather than a later flight.",
        f"Booking {deadline_pick['booking_ref']} ({p_deadline['name']}): travelling to a funeral, must land by {deadline.strftime('%H:%M')} on "
        f"{long(deadline.date())}. If we can't get them there by then, refund instead.",
    ]
    for _ in range(ctx.size("customer_notes")):
        b = rng.choice(bookings)
        notes.append(f"Booking {b['booking_ref']} ({pax[b['passenger_id']]['name']}): {rng.choice(['asked for a window seat', 'vegetarian meal requested', 'travelling with a guitar', 'wheelchair assistance at arrival'])}.")
    rng.shuffle(notes)
    for i in range(0, len(notes), 2):
        ctx.write(f"customer_notes/notes_{i // 2 + 1:03d}.txt",
                  "Customer service notes\n\n" + "\n".join(notes[i:i + 2]) + "\n")
    topics = ["fare filing changes", "office christmas party", "GDS maintenance", "new ancillary fees", "baggage rules"]
    for i in range(ctx.size("agency_mail")):
        topic = topics[i % len(topics)]
        ctx.write(f"inbox/agency_{i:03d}.eml", f"From: office@agency.example\nSubject: {topic}\n\nA note on {topic}. "
                                                f"Nothing to do for disruptions. Ref {rng.randint(100, 999)}.\n")

    ctx.facts(refund_wish=refund_wish["booking_ref"], closed_flights=[f["id"] for f in cancelled],
              already_cancelled=cancelled_one["booking_ref"])
