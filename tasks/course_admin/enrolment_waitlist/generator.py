"""State for course_admin/enrolment_waitlist: catalogue, transcripts, registration requests, office mail."""
import datetime as dt

DEPARTMENTS = {"BIO": "Biology", "CHEM": "Chemistry", "CS": "Computer Science", "ECON": "Economics",
               "HIST": "History", "MATH": "Mathematics", "PHYS": "Physics", "PSY": "Psychology"}
TOPICS = ["Foundations", "Methods", "Systems", "Theory", "Laboratory", "Seminar", "Analysis", "Design"]
GRADES = ["A", "A-", "B+", "B", "B-", "C+", "C", "C-", "D", "F"]  # best first
GIVEN = ["Aiko", "Bram", "Celia", "Dario", "Emeka", "Freya", "Gustav", "Hana", "Ivo", "Jade", "Kofi", "Lena",
         "Milo", "Noor", "Oskar", "Pia", "Rafa", "Sana", "Teo", "Uma", "Viggo", "Wren", "Xia", "Zeno"]
FAMILY = ["Achebe", "Berg", "Costa", "Dubois", "Evans", "Fischer", "Garcia", "Horvat", "Ito", "Jensen", "Khan",
          "Lopez", "Meyer", "Novak", "Ortiz", "Park", "Quist", "Rossi", "Singh", "Torres", "Weber", "Young"]
OPENED = dt.datetime(2026, 8, 10, 9, 0)


def meets(transcript: list[tuple], prereqs: list[str], min_grade: str) -> bool:
    """True when every prerequisite has at least one attempt graded min_grade or better."""
    best = {}
    for code, grade in transcript:
        best[code] = min(best.get(code, 99), GRADES.index(grade))
    return all(best.get(code, 99) <= GRADES.index(min_grade) for code in prereqs)


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE courses (id INTEGER PRIMARY KEY, code TEXT UNIQUE, title TEXT, department TEXT, capacity INTEGER);
        CREATE TABLE prerequisites (course_id INTEGER, prereq_code TEXT);
        CREATE TABLE students (id INTEGER PRIMARY KEY, student_no TEXT UNIQUE, name TEXT, program TEXT, year INTEGER);
        CREATE TABLE transcript (student_id INTEGER, course_code TEXT, term TEXT, grade TEXT);
        CREATE TABLE requests (id INTEGER PRIMARY KEY, student_id INTEGER, course_id INTEGER, submitted_at TEXT,
            status TEXT, waitlist_position INTEGER);
        """
    )
    min_grade = rng.choice(["C", "C-", "D"])
    depts = list(DEPARTMENTS)
    # Earlier (past-term) courses that appear as prerequisites, and this term's courses.
    past = [f"{d} {n}" for d in depts for n in (101, 102, 150)]
    courses, prereqs = [], {}
    used = set()
    for cid in range(1, ctx.size("courses") + 1):
        while True:
            dept = rng.choice(depts)
            level = [100, 200, 200, 300][cid % 4]
            code = f"{dept} {level + rng.randint(1, 89)}"
            if code not in used and code not in past:
                break
        used.add(code)
        courses.append((cid, code, f"{DEPARTMENTS[dept]} {rng.choice(TOPICS)}", DEPARTMENTS[dept], rng.randint(5, 9)))
        own = [p for p in past if p.startswith(dept + " ")]
        prereqs[cid] = [] if level == 100 else rng.sample(own, 1 if level == 200 else 2)

    students, transcripts = [], {}
    numbers = rng.sample(range(200000, 299999), ctx.size("students"))
    for sid in range(1, ctx.size("students") + 1):
        name = f"{rng.choice(GIVEN)} {rng.choice(FAMILY)}"
        students.append((sid, f"S{numbers[sid - 1]}", name, DEPARTMENTS[rng.choice(depts)], rng.randint(1, 4)))
        taken = []
        for code in rng.sample(past, rng.randint(4, 8)):
            grade = GRADES[min(9, int(abs(rng.gauss(0, 3.2))))]
            taken.append((code, grade))
            if GRADES.index(grade) >= 7 and rng.random() < 0.4:  # retook a weak course
                taken.append((code, rng.choice(GRADES[:6])))
        transcripts[sid] = taken

    minutes = rng.sample(range(0, 4 * 24 * 60), ctx.size("requests"))
    requests, seen = [], set()
    while len(requests) < ctx.size("requests"):
        sid, cid = rng.randint(1, len(students)), rng.randint(1, len(courses))
        if (sid, cid) in seen:
            continue
        seen.add((sid, cid))
        requests.append([len(requests) + 1, sid, cid, OPENED + dt.timedelta(minutes=minutes[len(requests)])])

    # Exceptions that must exist at every scale and seed.
    holds = rng.sample(sorted({r[1] for r in requests}), 2)
    gated = [r for r in requests if prereqs[r[2]] and r[1] not in holds]
    waived = next((r for r in gated if not meets(transcripts[r[1]], prereqs[r[2]], min_grade)), gated[0])
    missing = prereqs[waived[2]][0]
    transcripts[waived[1]] = [t for t in transcripts[waived[1]] if t[0] != missing] + [(missing, "F")]

    def eligible(cid):
        rows = [r for r in requests if r[2] == cid and r[1] not in holds
                and (r is waived or meets(transcripts[r[1]], prereqs[cid], min_grade))]
        return sorted(rows, key=lambda r: (r[3], students[r[1] - 1][1]))

    intro = sorted((c for c in courses if not prereqs[c[0]]), key=lambda c: (-len(eligible(c[0])), c[0]))
    tie_course, small_course = intro[0], intro[1]
    capacity = {c[0]: c[4] for c in courses}
    queue = eligible(tie_course[0])
    # After the seats held back, the tie sits on the last seat, and one more student wants the waitlist than it holds.
    seats = max(1, len(queue) - ctx.params["waitlist_cap"] - 1)
    reserve = ctx.params["reserved_seats"]
    capacity[tie_course[0]] = seats + reserve
    last_in, first_out = queue[seats - 1], queue[seats]
    first_out[3] = last_in[3]  # same submission minute: the student number decides
    if students[last_in[1] - 1][1] > students[first_out[1] - 1][1]:
        last_in, first_out = first_out, last_in
    if last_in[0] < first_out[0]:  # make the earlier request id the loser, so id order is the wrong tie-break
        last_in[1], first_out[1] = first_out[1], last_in[1]
    room_seats = len(eligible(small_course[0])) - 2 + reserve
    capacity[small_course[0]] = len(eligible(small_course[0])) + 1 + reserve  # the system thinks everyone fits

    db.executemany("INSERT INTO courses VALUES (?,?,?,?,?)", [(c[0], c[1], c[2], c[3], capacity[c[0]]) for c in courses])
    db.executemany("INSERT INTO prerequisites VALUES (?,?)", [(cid, p) for cid, ps in prereqs.items() for p in ps])
    db.executemany("INSERT INTO students VALUES (?,?,?,?,?)", students)
    terms = ["2025 Fall", "2026 Spring"]
    db.executemany("INSERT INTO transcript VALUES (?,?,?,?)",
                   [(sid, code, terms[i % 2], grade) for sid, ts in transcripts.items() for i, (code, grade) in enumerate(ts)])
    db.executemany("INSERT INTO requests VALUES (?,?,?,?, 'pending', NULL)",
                   [(r[0], r[1], r[2], r[3].strftime("%Y-%m-%d %H:%M")) for r in requests])

    ctx.write("registrar/registration_rules.md",
        "# Registration rules\n\n"
        "1. Requests are handled strictly in the order they were submitted. When two requests carry the same\n"
        "   submission time, the student with the lower student number goes first.\n"
        f"2. A student may only take a course if they have passed each of its prerequisites with a grade of {min_grade} or better\n"
        "   (their best attempt counts). Requests that fail this are declined.\n"
        "3. While a course has free seats, eligible students are enrolled. Once it is full, further eligible\n"
        "   students join its waitlist in processing order.\n"
        "4. Students with a registration hold are declined outright; they are not waitlisted either.\n"
    )
    hold_students = [students[s - 1] for s in holds]
    ctx.write("mail/bursar_holds.eml",
        "From: bursar@university.example\nSubject: Registration holds\n\nDear registrar,\n\n"
        "The following students have unpaid balances and carry a registration hold for the coming term: "
        + " and ".join(f"{s[2]} (student number {s[1]})" for s in hold_students)
        + ". Please do not register them for anything until the hold is lifted.\n\nBursar's office\n"
    )
    who = students[waived[1] - 1]
    course_code = courses[waived[2] - 1][1]
    ctx.write("mail/prerequisite_waiver.eml",
        f"From: chair.{course_code.split()[0].lower()}@university.example\nSubject: Waiver\n\n"
        f"Hello, after reviewing her portfolio I am waiving the prerequisites of {course_code} for {who[2]},\n"
        f"student number {who[1]}. Please treat her request as eligible.\n\nBest, the department chair\n"
    )
    ctx.write("registrar/room_changes.md",
        "# Room changes for the coming term\n\n"
        f"{small_course[1]} has been moved to a smaller seminar room. Its class limit is now {room_seats} students;\n"
        "the course record in the system has not been updated yet, so go by this note.\n"
    )
    subjects = ["graduation ceremony", "transcript requests", "exam hall booking", "library hours",
                "advising week", "lost property", "orientation volunteers", "course evaluation survey"]
    office = {
        f"office_{i:03d}_{subjects[i % len(subjects)].replace(' ', '_')}.eml": (subjects[i % len(subjects)], rng.choice(courses))
        for i in range(ctx.size("office_mail"))
    }
    for filename, (subject, c) in office.items():
        body = f"A note about {subject}. {c[1]} ({c[2]}) will hold its first class as planned."
        ctx.write(f"mail/{filename}", f"Subject: {subject}\n\n{body}\nNothing here changes registration. "
                                     f"Ticket {rng.randint(10000, 99999)}.\n")
    special = [tie_course[1], small_course[1]]  # the same-minute tie on the last seat, the smaller room
    ctx.facts(special_courses=special)
