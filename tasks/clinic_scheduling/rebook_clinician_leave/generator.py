"""State for clinic_scheduling/rebook_clinician_leave: a small practice's diary, open slots and front-desk notes."""
import datetime as dt

SPECIALTIES = ["General practice", "Physiotherapy", "Dermatology"]
SITES = ["Northgate", "Riverside", "Elm Park"]
FIRST = ["Amara", "Ben", "Chloe", "Dev", "Elena", "Farid", "Grace", "Hugo", "Ines", "Jonah", "Kira", "Luis",
         "Maya", "Nils", "Olive", "Pavel", "Quinn", "Rosa", "Sami", "Tara", "Umar", "Vera", "Wes", "Yara"]
LAST = ["Okafor", "Lindqvist", "Moreau", "Patel", "Brennan", "Sato", "Haddad", "Kowalski", "Reyes", "Fischer",
        "Nakamura", "Dunne", "Abara", "Castell", "Varga", "Holm", "Ibsen", "Quiroga", "Marsh", "Tanaka"]
TIMES = [f"{h:02d}:{m:02d}" for h in range(8, 17) for m in (0, 30)]


def working_days(start, end):
    day, out = start, []
    while day <= end:
        if day.weekday() < 5:
            out.append(day)
        day += dt.timedelta(days=1)
    return out


def assign(affected, slots, clinicians, prefs, use_prefs=True):
    """The practice's rule: earliest-first, each to the earliest fitting slot (ties: lower clinician id)."""
    taken, result = set(), {}
    for appt in sorted(affected, key=lambda a: (a["start"], a["id"])):
        own = clinicians[appt["clinician_id"]]
        pref = prefs.get(appt["patient_id"]) if use_prefs else None
        best = None
        for s in slots:
            doc = clinicians[s["clinician_id"]]
            if s["id"] in taken or doc["id"] == own["id"] or doc["specialty"] != own["specialty"]:
                continue
            if s["start"] < appt["start"] or not fits(pref, s, doc):
                continue
            key = (s["start"], doc["id"])
            if best is None or key < best[0]:
                best = (key, s["id"])
        if best is None:
            return None
        taken.add(best[1])
        result[appt["id"]] = best[1]
    return result


def fits(pref, slot, doc):
    if pref is None:
        return True
    kind, value = pref
    hour = int(slot["start"][11:13])
    return {"morning": hour < 12, "afternoon": hour >= 12, "site": doc["site"] == value,
            "avoid": doc["id"] != value}[kind]


def pref_sentence(rng, kind, value, clinicians):
    if kind == "morning":
        return rng.choice(["can only come in before midday because of work, so mornings only please",
                           "asked that any appointment be in the morning (finishing before noon) as she does the school run in the afternoons"])
    if kind == "afternoon":
        return rng.choice(["works night shifts and can only attend from 12:00 onwards",
                           "would like afternoon appointments only - nothing before noon"])
    if kind == "site":
        return rng.choice([f"does not drive and can only get to our {value} site",
                           f"asked to be seen at {value} only, it is the one on her bus route"])
    name = clinicians[value]["name"]
    return rng.choice([f"asked not to be booked with {name} again after a previous complaint",
                       f"does not want to see {name}; please book anyone else"])


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE clinicians (id INTEGER PRIMARY KEY, name TEXT, specialty TEXT, site TEXT);
        CREATE TABLE patients (id INTEGER PRIMARY KEY, mrn TEXT UNIQUE, name TEXT, phone TEXT, birth_date TEXT);
        CREATE TABLE appointments (id INTEGER PRIMARY KEY, patient_id INTEGER, clinician_id INTEGER, start TEXT,
            status TEXT, reason TEXT, moved_to INTEGER);
        CREATE TABLE slots (id INTEGER PRIMARY KEY, clinician_id INTEGER, start TEXT, status TEXT);
        CREATE TABLE notifications (id INTEGER PRIMARY KEY, appointment_id INTEGER, patient_id INTEGER, sent_at TEXT);
        """
    )
    clinicians = {}
    names = rng.sample([f"Dr {f} {l}" for f in FIRST for l in LAST], ctx.size("clinicians"))
    for cid in range(1, ctx.size("clinicians") + 1):
        clinicians[cid] = {"id": cid, "name": names[cid - 1], "specialty": SPECIALTIES[(cid - 1) % 3],
                           "site": rng.choice(SITES)}
    db.executemany("INSERT INTO clinicians VALUES (:id, :name, :specialty, :site)", clinicians.values())

    patients = []
    mrns = rng.sample(range(100000, 999999), ctx.size("patients"))
    for pid in range(1, ctx.size("patients") + 1):
        patients.append((pid, f"MRN{mrns[pid - 1]}", f"{rng.choice(FIRST)} {rng.choice(LAST)}",
                         f"07{rng.randint(100000000, 999999999)}", f"{rng.randint(1940, 2015)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"))
    db.executemany("INSERT INTO patients VALUES (?,?,?,?,?)", patients)

    december = working_days(dt.date(2026, 12, 1), dt.date(2026, 12, 31))
    january = working_days(dt.date(2027, 1, 4), dt.date(2027, 1, 22))
    extensions = ctx.choices("extension_days")
    leave_doc = clinicians[rng.randint(1, len(clinicians))]
    length = rng.randint(4, 6)
    first = rng.randint(4, 12 - length)  # the longest extension still ends before Christmas Eve
    leave_days = december[first:first + length]                                   # as written in the notice
    extra_days = december[first + length:first + length + max(extensions)]        # every day an extension can add
    away_days = leave_days + extra_days[:ctx.params["extension_days"]]            # this request's whole absence
    busy = set()

    def free_time(cid, days):
        while True:
            start = f"{rng.choice(days).isoformat()} {rng.choice(TIMES)}"
            if (cid, start) not in busy:
                busy.add((cid, start))
                return start

    reasons = ["review", "new problem", "follow-up", "results", "check-up", "referral discussion"]
    appts = []
    for _ in range(ctx.size("appointments")):
        cid = rng.randint(1, len(clinicians))
        appts.append([cid, free_time(cid, december), "booked" if rng.random() > 0.1 else "cancelled"])
    for _ in range(ctx.size("leave_extra")):
        appts.append([leave_doc["id"], free_time(leave_doc["id"], leave_days), "booked"])
    # Every day an extension can add holds a booking, so the extension's length changes what moves; boundary traps:
    # booked just outside the leave, and cancelled inside it.
    for day in extra_days + [december[first - 1], december[first + len(away_days)]]:
        appts.append([leave_doc["id"], free_time(leave_doc["id"], [day]), "booked"])
    appts.append([leave_doc["id"], free_time(leave_doc["id"], leave_days), "cancelled"])
    rng.shuffle(appts)
    rows = []
    for aid, (cid, start, status) in enumerate(appts, 1):
        rows.append({"id": aid, "patient_id": rng.randint(1, len(patients)), "clinician_id": cid, "start": start,
                     "status": status, "reason": rng.choice(reasons)})
    db.executemany("INSERT INTO appointments VALUES (:id, :patient_id, :clinician_id, :start, :status, :reason, NULL)", rows)

    slots = []
    for sid in range(1, ctx.size("slots") + 1):
        cid = rng.randint(1, len(clinicians))
        slots.append({"id": sid, "clinician_id": cid, "start": free_time(cid, december + january)})
    db.executemany("INSERT INTO slots VALUES (:id, :clinician_id, :start, 'open')", slots)

    # Preferences and patients are drawn over the longest possible absence, whatever the request's extension.
    window = (leave_days[0].isoformat(), extra_days[-1].isoformat())
    affected = [a for a in rows if a["clinician_id"] == leave_doc["id"] and a["status"] == "booked"
                and window[0] <= a["start"][:10] <= window[1]]
    # Each affected patient appears once among them (a patient with two affected visits would make notes ambiguous).
    seen = set()
    for a in sorted(affected, key=lambda a: a["id"]):
        while a["patient_id"] in seen:
            a["patient_id"] = rng.randint(1, len(patients))
        seen.add(a["patient_id"])
        db.execute("UPDATE appointments SET patient_id = ? WHERE id = ?", (a["patient_id"], a["id"]))

    peers = [c for c in clinicians.values() if c["specialty"] == leave_doc["specialty"] and c["id"] != leave_doc["id"]]
    prefs = {}
    for a in affected:
        if rng.random() < 0.45:
            kind = rng.choice(["morning", "afternoon", "site", "avoid"])
            value = rng.choice(peers)["site"] if kind == "site" else rng.choice(peers)["id"] if kind == "avoid" else None
            prefs[a["patient_id"]] = (kind, value)
    # Guarantee the notes matter: the first patient to be rebooked gets a wish the naive choice breaks.
    naive = assign(affected, slots, clinicians, prefs, use_prefs=False)
    head = min(affected, key=lambda a: (a["start"], a["id"]))
    naive_slot = next(s for s in slots if s["id"] == naive[head["id"]])
    prefs[head["patient_id"]] = ("afternoon", None) if int(naive_slot["start"][11:13]) < 12 else ("morning", None)
    for extension in extensions:  # whatever the request's extension, every affected appointment can be moved
        last = (leave_days + extra_days[:extension])[-1].isoformat()
        if assign([a for a in affected if a["start"][:10] <= last], slots, clinicians, prefs) is None:
            raise RuntimeError("generator produced an affected appointment with no fitting slot; widen the slots")

    # --- workspace ---------------------------------------------------------------------------------
    fmt = lambda d: d.strftime("%A %d %B %Y")
    ctx.write("inbox/leave_notice.eml",
        f"From: practice.manager@clinic.example\nSubject: Short-notice leave - {leave_doc['name']}\n\n"
        f"Hi all,\n\n{leave_doc['name']} ({leave_doc['specialty']}) has been granted compassionate leave. "
        f"The first day away is {fmt(leave_days[0])} and the last day away is {fmt(leave_days[-1])}; "
        f"they are back at work the following working day. Anything booked with them in that period needs to "
        f"be moved, and please don't put anyone into their own open slots while they are off either.\n\nThanks,\nPractice manager\n"
    )
    ctx.write("policies/rebooking_procedure.md",
        "# Rebooking procedure when a clinician is unavailable\n\n"
        "Work through the affected appointments in the order they were originally booked for (earliest "
        "appointment time first). Offer each patient the earliest open slot with a different clinician of "
        "the same specialty that does not start before the time of their original appointment, taking any "
        "preferences the patient has given the front desk into account. Where two suitable slots start at "
        "exactly the same time, give the patient the one belonging to the clinician with the lower staff "
        "number.\n\nOnce a patient has been moved, send them a notification about the new appointment "
        "(not the old one). Cancelled appointments are not rebooked.\n"
    )
    patient_by_id = {p[0]: p for p in patients}
    notes = []
    for pid, (kind, value) in prefs.items():
        p = patient_by_id[pid]
        notes.append(f"{p[2]} ({p[1]}) {pref_sentence(rng, kind, value, clinicians)}.")
    others = [p for p in patients if p[0] not in seen]
    for _ in range(ctx.size("other_notes")):
        p = rng.choice(others)
        kind = rng.choice(["morning", "afternoon", "site", "avoid"])
        value = rng.choice(SITES) if kind == "site" else rng.randint(1, len(clinicians)) if kind == "avoid" else None
        notes.append(f"{p[2]} ({p[1]}) {pref_sentence(rng, kind, value, clinicians)}.")
    rng.shuffle(notes)
    per_file = 3
    for i in range(0, len(notes), per_file):
        body = "\n\n".join(f"- {n}" for n in notes[i:i + per_file])
        ctx.write(f"notes/front_desk_{i // per_file + 1:03d}.txt",
            f"Front desk notes, batch {i // per_file + 1}\n\n{body}\n")
    topics = ["flu clinic rota", "car park resurfacing", "new phone system", "fire alarm test", "coffee machine",
              "prescription line hours", "staff training day", "christmas opening hours"]
    for i in range(ctx.size("admin_notes")):
        topic = topics[i % len(topics)]
        doc = rng.choice(list(clinicians.values()))
        ctx.write(f"inbox/admin_{i:03d}_{topic.replace(' ', '_')}.eml",
            f"From: office@clinic.example\nSubject: {topic}\n\nA reminder about the {topic}. {doc['name']} is "
            f"coordinating; no change to anyone's bookings. Ref {rng.randint(1000, 9999)}.\n")

    ctx.facts(prefs=prefs)
