"""State for clinic_scheduling/room_allocation: rooms and their kit, next week's sessions, bookings and estates notices."""
import datetime as dt

SITES = ["Northgate", "Riverside"]
KIT = ["ultrasound", "sterile trolley", "treatment couch", "ECG", "height-adjustable bed"]
CLINICS = {  # clinic type -> (required kit, typical size)
    "antenatal": (["ultrasound"], (3, 6)),
    "minor surgery": (["sterile trolley"], (2, 4)),
    "physio group": ([], (6, 14)),
    "cardiac review": (["ECG"], (2, 5)),
    "general": ([], (2, 5)),
}
CLINICIANS = ["Dr Aziz", "Dr Byrne", "Dr Chowdhury", "Dr Devlin", "Nurse Evans", "Nurse Foley", "Dr Grant", "Dr Hale"]


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE rooms (id INTEGER PRIMARY KEY, name TEXT UNIQUE, site TEXT, capacity INTEGER, equipment TEXT, step_free INTEGER);
        CREATE TABLE sessions (id INTEGER PRIMARY KEY, clinic_type TEXT, clinician TEXT, site TEXT, day TEXT, start TEXT, end TEXT,
            expected_attendees INTEGER, status TEXT);
        CREATE TABLE bookings (id INTEGER PRIMARY KEY, room_id INTEGER, session_id INTEGER, day TEXT, start TEXT, end TEXT,
            purpose TEXT, confirmed INTEGER DEFAULT 0);
        CREATE TABLE flags (id INTEGER PRIMARY KEY, session_id INTEGER, note TEXT);
        """
    )
    rooms = []
    for rid in range(1, ctx.size("rooms") + 1):
        site = SITES[(rid - 1) % len(SITES)]
        kit = sorted(rng.sample(KIT, rng.randint(0, 2)))
        rooms.append({"id": rid, "name": f"{site[0]}-{100 + rid}", "site": site, "capacity": rng.choice([4, 6, 8, 12, 16, 20]),
                      "equipment": ", ".join(kit), "step_free": int(rng.random() < 0.6)})
    # Guarantee each site has a large step-free room and kit rooms, so most sessions can be housed.
    for i, site in enumerate(SITES):
        rooms[i].update(capacity=20, step_free=1, equipment="treatment couch")
        rooms[i + 2].update(equipment="ultrasound, ECG", capacity=8, step_free=1)
        rooms[i + 4].update(equipment="sterile trolley", capacity=6, step_free=0)
    db.executemany("INSERT INTO rooms VALUES (:id, :name, :site, :capacity, :equipment, :step_free)", rooms)

    monday = dt.date(2026, 12, 7)
    days = [monday + dt.timedelta(days=i) for i in range(5)]
    slots = [("08:30", "12:00"), ("09:00", "11:00"), ("13:00", "16:30"), ("13:30", "15:30"), ("10:00", "12:30")]
    sessions = []
    types = list(CLINICS)
    for sid in range(1, ctx.size("sessions") + 1):
        kind = types[(sid - 1) % len(types)] if sid <= len(types) else rng.choice(types)
        lo, hi = CLINICS[kind][1]
        start, end = rng.choice(slots)
        sessions.append({"id": sid, "clinic_type": kind, "clinician": rng.choice(CLINICIANS), "site": rng.choice(SITES),
                         "day": rng.choice(days).isoformat(), "start": start, "end": end, "expected_attendees": rng.randint(lo, hi),
                         "status": "unallocated"})
    existing = []
    for _ in range(ctx.size("existing_bookings")):
        r = rng.choice(rooms)
        start, end = rng.choice(slots)
        existing.append({"room_id": r["id"], "day": rng.choice(days).isoformat(), "start": start, "end": end,
                         "purpose": rng.choice(["staff training", "audit meeting", "vaccination catch-up", "student teaching"])})

    # Notices: a room out of service for part of the week; the portable ultrasound moved into another room.
    outage_room = rooms[2]  # Northgate's kit room
    outage_days = days[1:3]
    moved_to = next((r for r in rooms if r["site"] == "Riverside" and "ultrasound" not in r["equipment"]
                     and r["id"] > 6), rooms[1])
    moved_from = rooms[3]  # Riverside kit room loses its ultrasound for the week
    # Sessions needing step-free access (from the organisers' notes).
    step_free_sessions = set(rng.sample([s["id"] for s in sessions], k=max(2, len(sessions) // 8)))
    # Make sure the outage and the ultrasound move matter.
    sessions[0].update(clinic_type="antenatal", site="Northgate", day=outage_days[0].isoformat(), start="09:00", end="11:00", expected_attendees=4)
    sessions[1].update(clinic_type="antenatal", site="Riverside", day=days[0].isoformat(), start="13:00", end="16:30", expected_attendees=4)
    # Sessions on Wednesday, Thursday and Friday, so whichever last day the request gives changes what is dealt with.
    for i in (2, 3, 4):
        sessions[i]["day"] = days[i].isoformat()
    db.executemany("INSERT INTO sessions VALUES (:id, :clinic_type, :clinician, :site, :day, :start, :end, :expected_attendees, :status)", sessions)
    # Keep the Riverside kit room free on Monday so a stale room list would really send the antenatal clinic there.
    existing = [b for b in existing if not (b["room_id"] == moved_from["id"] and b["day"] == days[0].isoformat())]
    db.executemany("INSERT INTO bookings (room_id, session_id, day, start, end, purpose) VALUES (:room_id, NULL, :day, :start, :end, :purpose)", existing)
    staff_extra = rng.choice([1, 2])

    # --- workspace ---------------------------------------------------------------------------------
    def long(d):
        return f"{d.strftime('%A')} {d.day} {d.strftime('%B')}"
    ctx.write("guides/room_allocation_guide.md",
        "# Room allocation guide\n\nAllocate sessions in time order (day, then start time; earlier session number first when they "
        "start together). A session must get a room at its own site that is free for the whole session and has the kit the "
        "clinic needs:\n\n- antenatal clinics need an ultrasound;\n- minor surgery needs a sterile trolley;\n- cardiac reviews need "
        "an ECG;\n- other clinics need no special kit.\n\n"
        f"The room must also seat everyone: the expected attendees plus {staff_extra} staff. Among the rooms that qualify take "
        "the smallest (by capacity), then the lowest room number. If no room qualifies, flag the session for manual handling "
        "rather than squeezing it in.\n")
    ctx.write("estates/room_outage.eml",
        f"From: estates@clinic.example\nSubject: {outage_room['name']} out of service\n\n{outage_room['name']} will be closed for "
        f"flooring repairs on {long(outage_days[0])} and {long(outage_days[1])}. It is available as normal on the other days.\n")
    ctx.write("estates/ultrasound_move.eml",
        f"From: medical.physics@clinic.example\nSubject: Portable ultrasound relocated\n\nFor the whole of next week the portable "
        f"ultrasound normally kept in {moved_from['name']} will be in {moved_to['name']} (the room list has not been updated). "
        f"{moved_from['name']} has no ultrasound until it comes back.\n")
    notes = []
    for sid in sorted(step_free_sessions):
        s = sessions[sid - 1]
        notes.append(f"Session {sid} ({s['clinic_type']}, {s['clinician']}): several attendees use wheelchairs - it needs a "
                     "step-free room.")
    for _ in range(ctx.size("session_notes")):
        s = rng.choice(sessions)
        notes.append(f"Session {s['id']} ({s['clinic_type']}, {s['clinician']}): {rng.choice(['please put water jugs out', 'interpreter booked', 'start may slip by ten minutes', 'students observing'])}.")
    rng.shuffle(notes)
    for i in range(0, len(notes), 3):
        ctx.write(f"session_notes/organiser_notes_{i // 3 + 1:03d}.txt",
                  "Notes from session organisers\n\n" + "\n".join(notes[i:i + 3]) + "\n")
    for i in range(ctx.size("estates_mail")):
        r = rng.choice(rooms)
        ctx.write(f"estates/estates_info_{i:03d}.eml",
            f"From: estates@clinic.example\nSubject: {rng.choice(['Cleaning rota', 'Window blinds', 'Heating check', 'Signage'])} in {r['name']}\n\n"
            "Routine works outside clinic hours; no effect on bookings.\n")

    outage = {"room": outage_room["id"], "days": [d.isoformat() for d in outage_days]}
    ctx.facts(outage=outage)
