"""State for course_admin/room_allocation: rooms with features and floors, timetabled sections, estates notices."""

SLOTS = [f"{day} {hour}" for day in ("Mon", "Tue", "Wed", "Thu") for hour in ("09:00", "11:00", "14:00", "16:00")]
TOPICS = ["Introduction to", "Methods in", "Advanced", "Seminar in", "Field Studies in", "Topics in"]
AREAS = ["Kinship", "Ecology", "Spectroscopy", "Stagecraft", "Markets", "Landforms", "Syntax", "Topology",
         "Optics", "Inequality"]
SUBJECTS = ["ANTH", "BIOL", "CHEM", "DRAM", "ECON", "GEOG", "LING", "MATH", "PHYS", "SOCI"]
LECTURERS = ["Dr Adeyemi", "Dr Brennan", "Prof Castell", "Dr Dumont", "Dr Esposito", "Prof Fairley", "Dr Gupta",
             "Dr Holloway", "Prof Ibarra", "Dr Jakobsen", "Dr Kaur", "Prof Lindgren"]


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE rooms (code TEXT PRIMARY KEY, building TEXT, floor INTEGER, capacity INTEGER, features TEXT);
        CREATE TABLE sections (id INTEGER PRIMARY KEY, code TEXT UNIQUE, title TEXT, slot TEXT, enrolment INTEGER, needs TEXT,
            lecturer TEXT, room TEXT, state TEXT);
        CREATE TABLE timetable_status (published INTEGER);
        INSERT INTO timetable_status VALUES (0);
        """
    )
    buildings = ctx.choices("closed_building")  # every building on campus: any of them may be the closed one
    rooms = []
    for k in range(ctx.size("rooms")):
        building = buildings[k % len(buildings)]
        features = sorted({f for f in ("projector", "lab") if rng.random() < (0.8 if f == "projector" else 0.25)})
        rooms.append([f"{building[0]}{rng.randint(0, 3)}{k + 1:02d}", building, 0, rng.choice([24, 30, 40, 60, 80, 100, 120]),
                      ",".join(features)])
        rooms[-1][2] = int(rooms[-1][0][1])  # the floor is the first digit of the room number
    # Guarantees: the only two 150-seat rooms (section 1 fills one with exactly the spare seats left), one on the ground floor whose code sorts after the upper-floor one,
    # and a lab.
    # The guaranteed rooms stay out of the closed building (the ground-floor code still sorts after the upper one).
    shut = ctx.params["closed_building"]
    rooms[0] = ["D001", "Dalton", 0, 150, "projector"] if shut == "Crane" else ["C001", "Crane", 0, 150, "projector"]
    rooms[1] = ["A202", "Abbey", 2, 150, "projector"] if shut == "Beacon" else ["B202", "Beacon", 2, 150, "projector"]
    for k in (2, 3, 4):
        if rooms[k][1] == shut:
            moved = buildings[(buildings.index(shut) + 1) % len(buildings)]
            rooms[k][0], rooms[k][1] = moved[0] + rooms[k][0][1:], moved
    rooms[2][4] = "lab,projector"
    closed = rooms[3][0]
    rooms[3][3], rooms[3][4] = 40, "projector"  # a popular size, so the closure matters
    cut_room = rooms[4][0]
    rooms[4][3], rooms[4][4] = 60, "projector"
    new_capacity = 45
    db.executemany("INSERT INTO rooms VALUES (?,?,?,?,?)", [tuple(r) for r in rooms])

    access_lecturer = rng.choice(LECTURERS)
    sections = []
    for sid in range(1, ctx.size("sections") + 1):
        needs = rng.choice(["projector", "projector", "", "lab"])
        size = rng.choice([12, 18, 22, 28, 35, 38, 45, 55, 70, 95, 110, 140])
        lecturer = rng.choice(LECTURERS)
        slot = SLOTS[sid % len(SLOTS)]
        if sid <= 2:  # the access-needs lecturer: a class only the two 150-seat rooms can hold, and a small one
            lecturer, size, needs, slot = access_lecturer, 150 - ctx.params["spare_seats"] if sid == 1 else 18, "projector", SLOTS[0]
        elif sid == 4:  # a lab class larger than any lab can hold: cannot be placed
            size, needs = 400, "lab"
        if lecturer == access_lecturer and sid > 2:
            lecturer = LECTURERS[(LECTURERS.index(lecturer) + 1) % len(LECTURERS)]
        title = f"{rng.choice(TOPICS)} {rng.choice(AREAS)}"
        sections.append((sid, f"{rng.choice(SUBJECTS)}{rng.randint(100, 399)}-{sid:03d}", title, slot, size, needs, lecturer))
    db.executemany("INSERT INTO sections (id, code, title, slot, enrolment, needs, lecturer, state) VALUES (?,?,?,?,?,?,?, 'pending')",
                   rng.sample(sections, len(sections)))

    texts = {
        "timetabling/allocation_procedure.md":
            "# Room allocation procedure\n\n"
            "Allocate the biggest sections first (by enrolment; equal enrolments in order of section code). For each\n"
            "section, consider the rooms that are free in its slot, hold at least its enrolment and have every\n"
            "feature it needs. Give it the smallest such room by capacity, and among equally big rooms the one whose\n"
            "room code comes first alphabetically. If no room qualifies, the section is unplaced.\n",
        "estates/building_notice.md":
            "# Estates notice\n\n"
            f"Room {closed} is closed all next term for refurbishment and must not be timetabled.\n\n"
            f"After the fire safety inspection, room {cut_room} may hold at most {new_capacity} people; the room\n"
            "database still shows the old figure.\n",
        "staff_requests/access_request.eml":
            f"From: {access_lecturer.lower().replace(' ', '.')}@uni.example\nSubject: Teaching rooms\n\n"
            "Following my knee operation I cannot manage stairs for the coming term. Could all of my sections be\n"
            "on the ground floor (floor 0), please? Thank you.\n",
    }
    for i in range(ctx.size("estates_notices")):
        texts[f"estates/notice_{i:03d}.md"] = (
            f"# Notice {i + 1}\n\n{rng.choice(['Lift servicing', 'Window cleaning', 'Bike racks', 'Cafe refit', 'Signage'])} in "
            f"{rng.choice(buildings)} building next month. Teaching rooms are unaffected.\n")
    for rel, body in texts.items():
        ctx.write(rel, body)
    ctx.facts(closed=closed, capacity_cut=[cut_room, new_capacity], ground_floor_lecturer=access_lecturer)
