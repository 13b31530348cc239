"""State for course_admin/grade_finalisation: rosters, assessments, timestamped submissions, office decisions."""
import datetime as dt

SUBJECTS = ["Organic Chemistry", "Microeconomics", "Linear Algebra", "Cell Biology", "Data Structures",
            "Medieval History", "Cognitive Psychology", "Thermodynamics", "Statistics", "Ethics"]
PIECES = [("Lab report", 15), ("Problem set", 20), ("Essay", 25), ("Project", 30), ("Quiz", 10), ("Portfolio", 20)]
FIRST = ["Ada", "Bo", "Cai", "Dee", "Eli", "Fen", "Gus", "Hal", "Ida", "Jo", "Kit", "Lu", "Max", "Nia", "Oli",
         "Pax", "Rae", "Sol", "Tia", "Van"]
LAST = ["Archer", "Bishop", "Cole", "Dean", "Ellis", "Ford", "Grant", "Hale", "Irwin", "Jordan", "Knox", "Lane",
        "Mercer", "Nash", "Oakley", "Price", "Reid", "Shaw", "Tate", "Wade"]


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE courses (id INTEGER PRIMARY KEY, code TEXT UNIQUE, title TEXT, lecturer TEXT);
        CREATE TABLE assessments (id INTEGER PRIMARY KEY, course_id INTEGER, name TEXT, weight INTEGER, due_at TEXT);
        CREATE TABLE students (id INTEGER PRIMARY KEY, student_no TEXT UNIQUE, name TEXT);
        CREATE TABLE roster (course_id INTEGER, student_id INTEGER);
        CREATE TABLE submissions (id INTEGER PRIMARY KEY, assessment_id INTEGER, student_id INTEGER, submitted_at TEXT,
            raw_score REAL);
        CREATE TABLE final_grades (id INTEGER PRIMARY KEY, course_id INTEGER, student_id INTEGER, final_mark REAL,
            letter TEXT, UNIQUE (course_id, student_id));
        """
    )
    penalty = rng.choice([5, 10])
    cutoff_days = rng.choice([5, 7])
    bounds = rng.choice([(85, 70, 55, 45), (80, 65, 50, 40), (75, 65, 55, 40)])

    n_courses, n_students = ctx.size("courses"), ctx.size("students")
    for sid in range(1, n_students + 1):
        db.execute("INSERT INTO students VALUES (?,?,?)", (sid, f"U{rng.randint(10, 99)}{sid:05d}",
                                                            f"{rng.choice(FIRST)} {rng.choice(LAST)}"))
    term_start = dt.datetime(2026, 9, 14, 17, 0)
    assessments = {}
    for cid in range(1, n_courses + 1):
        code = f"{['CHM', 'ECO', 'MAT', 'BIO', 'CSC', 'HIS', 'PSY', 'ENG', 'STA', 'PHI'][cid % 10]}{200 + cid * 7}"
        db.execute("INSERT INTO courses VALUES (?,?,?,?)", (cid, code, SUBJECTS[cid % len(SUBJECTS)] + (f" {cid}" if cid > 10 else ""),
                                                            f"Dr {rng.choice(LAST)}"))
        pieces = rng.sample(PIECES[:4], 3)
        weights = [w for _, w in pieces]
        pieces.append(("Final exam", 100 - sum(weights)))
        for k, (name, weight) in enumerate(pieces):
            aid = len(assessments) + 1
            due = term_start + dt.timedelta(days=21 * (k + 1) + rng.randint(0, 6), hours=rng.choice([0, -8, 6]))
            assessments[aid] = (cid, name, weight, due)
            db.execute("INSERT INTO assessments VALUES (?,?,?,?,?)", (aid, cid, name, weight, due.isoformat(timespec="minutes")))
        members = sorted(rng.sample(range(1, n_students + 1), min(n_students, rng.randint(14, 22))))
        db.executemany("INSERT INTO roster VALUES (?,?)", [(cid, s) for s in members])
        for aid, (acid, name, weight, due) in assessments.items():
            if acid != cid:
                continue
            for s in members:
                if rng.random() < 0.05:
                    continue  # never submitted
                late = rng.random() < 0.2 and name != "Final exam"
                offset = dt.timedelta(hours=rng.randint(1, 24 * (cutoff_days + 2))) if late else -dt.timedelta(hours=rng.randint(1, 96))
                db.execute("INSERT INTO submissions (assessment_id, student_id, submitted_at, raw_score) VALUES (?,?,?,?)",
                           (aid, s, (due + offset).isoformat(timespec="minutes"), float(rng.randint(25, 100))))

    # Guaranteed cases in the first course: a submission 25 hours late (two started days, one calendar day when
    # due in the afternoon), a granted extension, and an excused component.
    first = [aid for aid, a in assessments.items() if a[0] == 1]
    roster1 = [r[0] for r in db.execute("SELECT student_id FROM roster WHERE course_id = 1 ORDER BY student_id")]
    late_student, extended_student, excused_student = roster1[:3]
    late_aid = first[0]
    due = assessments[late_aid][3].replace(hour=14, minute=0)
    db.execute("UPDATE assessments SET due_at = ? WHERE id = ?", (due.isoformat(timespec="minutes"), late_aid))
    assessments[late_aid] = assessments[late_aid][:3] + (due,)
    db.execute("DELETE FROM submissions WHERE assessment_id = ? AND student_id IN (?, ?)", (late_aid, late_student, extended_student))
    db.execute("INSERT INTO submissions (assessment_id, student_id, submitted_at, raw_score) VALUES (?,?,?,?)",
               (late_aid, late_student, (due + dt.timedelta(hours=25)).isoformat(timespec="minutes"), 78.0))
    new_deadline = due + dt.timedelta(days=4)
    db.execute("INSERT INTO submissions (assessment_id, student_id, submitted_at, raw_score) VALUES (?,?,?,?)",
               (late_aid, extended_student, (due + dt.timedelta(days=3, hours=2)).isoformat(timespec="minutes"), 81.0))
    excused_aid = first[1]

    courses = {r[0]: r[1] for r in db.execute("SELECT id, code FROM courses")}
    students = {r[0]: (r[1], r[2]) for r in db.execute("SELECT id, student_no, name FROM students")}
    ctx.write("regulations/assessment_regulations.md",
        "# Assessment regulations\n\n"
        "## Final mark\nThe final mark is the weighted average of a student's component marks using the component\n"
        "weights. A component that was never submitted scores zero. The final mark is rounded to one decimal place\n"
        "(halves up) before the letter grade is assigned.\n\n"
        "## Late work\n"
        f"Work handed in after its deadline loses {penalty} marks (out of 100) for every started period of 24 hours\n"
        f"after the deadline; a piece 30 hours late has started two periods. Work more than {cutoff_days} full days late\n"
        "scores zero. An extension replaces the deadline for that student and that piece only.\n"
        "Marks never go below zero.\n\n"
        "## Special consideration\nWhen a component is excused, it is left out of the student's average and the\n"
        "remaining weights are scaled up so they keep their proportions.\n\n"
        "## Letter grades\n"
        f"A from {bounds[0]}, B from {bounds[1]}, C from {bounds[2]}, D from {bounds[3]}; anything below {bounds[3]} is F (a fail).\n"
    )
    ext_no, ext_name = students[extended_student]
    ctx.write("office_mail/extension_granted.eml",
        f"From: {courses[1].lower()}-lecturer@uni.example\nSubject: Extension for {ext_name}\n\n"
        f"I have granted {ext_name} ({ext_no}) an extension on the {assessments[late_aid][1]} for {courses[1]}: "
        f"the new deadline\nis {new_deadline:%d %B %Y at %H:%M}. Please apply it when finalising marks.\n"
    )
    exc_no, exc_name = students[excused_student]
    ctx.write("office_mail/special_consideration.eml",
        "From: special.consideration@uni.example\nSubject: Outcome of application\n\n"
        f"The panel upheld the application of {exc_name} ({exc_no}). The {assessments[excused_aid][1]} in {courses[1]} is\n"
        "excused for this student, in line with the regulations.\n"
    )
    subjects = ["room bookings", "marking moderation", "open day", "printer credits", "library fines",
                "staff photos", "timetable clash", "exam invigilation"]
    for i in range(ctx.size("faculty_mail")):
        subject = subjects[i % len(subjects)]
        ctx.write(f"office_mail/faculty_{i:03d}_{subject.replace(' ', '_')}.eml",
            f"Subject: {subject}\n\nColleagues, about the {subject}: see the faculty page for details.\n"
            f"Nothing here alters marks or deadlines. Ref {rng.randint(1000, 9999)}.\n")
