"""State for event_planning/guest_seating: guests with RSVPs and plus-ones, tables, seating notes and guest e-mails."""
import math

GIVEN = ["Alba", "Bram", "Celine", "Dario", "Elif", "Frode", "Giulia", "Hamid", "Ilse", "Jonah", "Karin", "Lars",
         "Mireille", "Niamh", "Oskar", "Paloma", "Rui", "Sanne", "Teodor", "Ulla", "Viggo", "Wanda", "Xavier", "Yara"]
FAMILY = ["Aalto", "Bergstrom", "Castellano", "Dufour", "Eklund", "Fontaine", "Garrido", "Hartmann", "Iversen",
          "Janssen", "Kaur", "Laurent", "Mancini", "Nakamura", "Olsen", "Pereira", "Quist", "Rinaldi"]
MEALS = ["standard", "vegetarian", "vegan", "gluten_free"]


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE guests (id INTEGER PRIMARY KEY, name TEXT UNIQUE, email TEXT, organisation TEXT, rsvp TEXT, meal TEXT,
            plus_one_of INTEGER);
        CREATE TABLE dining_tables (id INTEGER PRIMARY KEY, table_number INTEGER UNIQUE, seats INTEGER, zone TEXT);
        CREATE TABLE seating (guest_id INTEGER PRIMARY KEY, table_id INTEGER);
        """
    )
    names = rng.sample([f"{g} {m}. {f}" for g in GIVEN for m in "CELS" for f in FAMILY], ctx.size("guests"))
    orgs = ["Harbour Trust", "Lumen Bank", "Vesta Group", "Northlight Media", "City Council", "Aster Labs", "Kelp & Co"]
    guests = []
    for gid, name in enumerate(names, start=1):
        rsvp = "declined" if rng.random() < 0.12 else "attending"
        meal = rng.choices(MEALS, weights=[10, 3, 1, 1])[0]
        guests.append([gid, name, name.lower().replace(". ", ".").replace(" ", ".") + "@guest.example", rng.choice(orgs), rsvp, meal, None])
    # Plus-ones: some attending guests bring someone, who is listed as their plus-one.
    hosts = [g for g in guests if g[4] == "attending"]
    for plus in rng.sample(range(len(guests)), len(guests) // 8):
        host = rng.choice(hosts)
        if guests[plus] is not host and guests[plus][6] is None and host[6] is None and all(g[6] != guests[plus][0] for g in guests):
            guests[plus][6], guests[plus][4] = host[0], "attending"

    singles = [g for g in guests if g[4] == "attending" and g[6] is None and all(x[6] != g[0] for x in guests)]
    picks = rng.sample(singles, 10)
    board, feud, step_free, changers, cancel = picks[:4], picks[4:6], picks[6:8], picks[8:9], picks[9]
    declined_writer = next(g for g in guests if g[4] == "declined")

    attending = sum(1 for g in guests if g[4] == "attending") - 1
    seats = 10
    n_tables = math.ceil(attending * 1.3 / seats) + 2  # one more than before: the sponsors' table (a floor table)
    tables = [(t, t, seats, "mezzanine" if t > n_tables // 2 + 1 else "floor") for t in range(1, n_tables + 1)]
    db.executemany("INSERT INTO guests VALUES (?,?,?,?,?,?,?)", [tuple(g) for g in guests])
    db.executemany("INSERT INTO dining_tables VALUES (?,?,?,?)", tables)

    ctx.write("organiser/seating_notes.md",
        "# Seating notes for the gala\n\n"
        f"Table 1 is the board table: {', '.join(g[1] for g in board)} sit there, and nobody else does.\n\n"
        "Everyone who brings a plus-one sits at the same table as their guest.\n\n"
        f"{feud[0][1]} and {feud[1][1]} are on opposite sides of a court case at the moment; under no circumstances "
        "seat them at the same table.\n\n"
        f"{step_free[0][1]} and {step_free[1][1]} use wheelchairs. The mezzanine tables are up a short flight of "
        "steps, so both must be seated at tables on the floor zone.\n\n"
        "Fill tables as you like otherwise, but never put more people at a table than it has seats.\n"
    )
    ctx.write("inbox/msg_000.eml",
        f"From: {changers[0][1]} <{changers[0][2]}>\nSubject: Dinner choice\n\nHello! Since I replied I have gone "
        "plant-based. Could you please change my meal to vegan? Thank you so much.\n"
    )
    ctx.write("inbox/msg_001.eml",
        f"From: {cancel[1]} <{cancel[2]}>\nSubject: Saturday\n\nI am so sorry, a family matter came up and I can no "
        "longer attend on Saturday. Please give my seat to someone else.\n"
    )
    ctx.write("inbox/msg_002.eml",
        f"From: {declined_writer[1]} <{declined_writer[2]}>\nSubject: Re: Gala\n\nI know I said no, and sadly that "
        "still stands, but for your records: please change my meal to gluten_free should plans ever change.\n"
    )
    questions = ["Is there parking near the venue?", "What is the dress code?", "Can I pay for the raffle by card?",
                 "What time do doors open?", "Is there a cloakroom?", "Will there be a live band?"]
    for i in range(ctx.size("guest_mail")):
        g = rng.choice(guests)
        meal = rng.choice(["vegetarian", "gluten_free", "standard"]) if i % 3 == 2 else None
        # Only guests who are coming, and not the board, change meals; the others ask a question instead.
        if meal and g[4] == "attending" and g not in board:
            body = f"Quick one: please change my meal to {meal}. Many thanks!"
        else:
            body = f"{rng.choice(questions)} Looking forward to it."
        ctx.write(f"inbox/msg_{i + 3:03d}.eml", f"From: {g[1]} <{g[2]}>\nSubject: Gala question\n\n{body}\n")

    ctx.facts(feud=[g[0] for g in feud], step_free=[g[0] for g in step_free])
