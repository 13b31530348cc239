"""State for grant_management/effort_reporting: people, grants, effort lines, the university effort
policy, sponsor award letters (salary cap) and a dean's e-mail adding a clinical reserve."""
import datetime as dt

SPONSORS = ["National Health Institute", "Science Foundation", "Hartwell Foundation", "Energy Research Council",
            "Clarke Trust"]
DEPARTMENTS = ["Biology", "Chemistry", "Cardiology", "Physics", "Neurology", "Economics", "Mathematics"]
GIVEN = ["Amara", "Bjorn", "Chen", "Delia", "Emeka", "Freya", "Goran", "Hana", "Ivo", "Jules", "Kaveh", "Lena",
         "Milo", "Noor", "Otis", "Priya", "Quinn", "Rhea", "Sol", "Talia"]
FAMILY = ["Adeyemi", "Bergstrom", "Cho", "Dimitriou", "Ekwueme", "Fitzgerald", "Gupta", "Halvorsen", "Iwata",
          "Jankowski", "Kruger", "Lindqvist", "Mbeki", "Nakamura", "Ortega"]
PERIOD_START = dt.date(2026, 7, 1)


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT, department TEXT, role TEXT, annual_salary REAL);
        CREATE TABLE grants (id INTEGER PRIMARY KEY, code TEXT UNIQUE, sponsor TEXT, title TEXT, start_date TEXT,
            end_date TEXT);
        CREATE TABLE effort_lines (id INTEGER PRIMARY KEY, person_id INTEGER, grant_id INTEGER, charged_pct REAL,
            cost_shared_pct REAL);
        CREATE TABLE certifications (id INTEGER PRIMARY KEY, person_id INTEGER, total_effort_pct REAL);
        CREATE INDEX certifications_person ON certifications (person_id);
        CREATE INDEX effort_lines_person ON effort_lines (person_id);
        CREATE TABLE overcommitment_flags (id INTEGER PRIMARY KEY, certification_id INTEGER, excess_pct REAL);
        """
    )
    separate = ctx.choices("excluded_department")  # the departments a round may leave out
    teaching = rng.choice([10, 15, 20])
    clinical = rng.choice([20, 25, 30])
    clinical_dept = rng.choice(["Cardiology", "Neurology"])
    cap = rng.choice([221900, 225700])
    capped = "National Health Institute"

    people = []
    for pid in range(1, ctx.size("people") + 1):
        role = rng.choices(["faculty", "postdoc", "staff"], [0.5, 0.25, 0.25])[0]
        salary = float(rng.randrange(150000, 320000, 100) if role == "faculty" else rng.randrange(55000, 110000, 100))
        people.append([pid, f"{rng.choice(GIVEN)} {rng.choice(FAMILY)}", rng.choice(DEPARTMENTS), role, salary])
    grants = []
    for gid in range(1, ctx.size("grants") + 1):
        sponsor = SPONSORS[gid % len(SPONSORS)]
        end = PERIOD_START + dt.timedelta(days=rng.randint(-200, 900))
        grants.append([gid, f"{sponsor.split()[0][:3].upper()}-{rng.randint(10000, 99999)}-{gid}", sponsor,
                       f"Study {gid}", (end - dt.timedelta(days=1100)).isoformat(), end.isoformat()])
    lines, seen = [], set()
    while len(lines) < ctx.size("effort_lines"):
        person, grant = rng.choice(people), rng.choice(grants)
        if (person[0], grant[0]) in seen:
            continue
        seen.add((person[0], grant[0]))
        charged = float(rng.choice([5, 10, 15, 20, 25, 30]))
        shared = float(rng.choice([0, 0, 0, 5, 10]))
        lines.append([person[0], grant[0], charged, shared])

    # Guaranteed cases: (a) clinical faculty over only because of the clinical reserve, (b) someone whose
    # over-commitment sits on an ended grant, (c) a capped-sponsor line above the cap.
    for sponsor_is_capped in (True, False):  # make sure both kinds of active grant exist
        pool = [g for g in grants if (g[2] == capped) == sponsor_is_capped]
        if not any(g[5] >= PERIOD_START.isoformat() for g in pool):
            pool[0][5] = (PERIOD_START + dt.timedelta(days=300)).isoformat()
    active_capped = next(g for g in grants if g[2] == capped and g[5] >= PERIOD_START.isoformat())
    second_capped = next(g for g in grants if g[2] == capped and g is not active_capped)
    if second_capped[5] < PERIOD_START.isoformat():
        second_capped[5] = (PERIOD_START + dt.timedelta(days=500)).isoformat()
    active_other = next(g for g in grants if g[2] != capped and g[5] >= PERIOD_START.isoformat())
    ended = next((g for g in grants if g[5] < PERIOD_START.isoformat()), None)
    if ended is None:
        ended = grants[-1]
        ended[5] = (PERIOD_START - dt.timedelta(days=10)).isoformat()
    a, b, c, d = people[0], people[1], people[2], people[3]
    kept = [dep for dep in separate if dep != ctx.params["excluded_department"]]
    c[2], d[2] = rng.choice(kept), rng.choice(kept)
    # Staff whose totals (95, 100, 105) fall between the possible limits, and someone with active effort in
    # every department a round may leave out.
    limit_cases = people[4:7]
    for person, charged in zip(limit_cases, (85.0, 90.0, 95.0)):
        person[2:5] = ["Physics", "staff", 80000.0]
    dept_cases = people[7:7 + len(separate)]
    for person, dep in zip(dept_cases, separate):
        person[2] = dep
    d[3:5] = ["faculty", float(cap + 50000)]  # above the cap on an award the letter does not name
    a[2:5] = [clinical_dept, "faculty", float(cap + 30000)]
    b[2:4] = ["Physics", "faculty"]
    c[3] = "postdoc"
    planted = {p[0] for p in [a, b, c, d] + limit_cases + dept_cases}
    lines = [l for l in lines if l[0] not in planted]
    lines += [[p[0], active_other[0], charged, 10.0] for p, charged in zip(limit_cases, (85.0, 90.0, 95.0))]
    lines += [[p[0], active_other[0], 20.0, 0.0] for p in dept_cases]
    free = 100 - teaching - clinical
    lines += [[a[0], active_capped[0], float(free - 10), 0.0], [a[0], active_other[0], 15.0, 5.0],
              [b[0], active_other[0], 40.0, 10.0], [b[0], ended[0], 50.0, 0.0],
              [c[0], active_other[0], 60.0, 20.0], [c[0], active_capped[0], 30.0, 0.0],
              [d[0], second_capped[0], 10.0, 0.0]]
    db.executemany("INSERT INTO people VALUES (?,?,?,?,?)", [tuple(p) for p in people])
    db.executemany("INSERT INTO grants VALUES (?,?,?,?,?,?)", [tuple(g) for g in grants])
    db.executemany("INSERT INTO effort_lines (person_id, grant_id, charged_pct, cost_shared_pct) VALUES (?,?,?,?)",
                   [tuple(l) for l in lines])

    ctx.write("policy/effort_certification_policy.md",
        "# Effort certification policy\n\n"
        "Committed effort on a grant is the effort charged to it plus any effort we cost-share on it; both count\n"
        "in full. A person's total for the period is the sum over the grants that are active in the period, plus\n"
        "any effort the university reserves for other duties. A grant counts as active if it has not ended before\n"
        "the period starts; effort on grants that ended earlier is no longer certified.\n\n"
        f"Faculty always keep {teaching}% of their effort for teaching and service; that reserve counts towards\n"
        "their total. Postdocs and staff have no reserve.\n\n"
        "Anyone whose total exceeds the commitment limit set for the certification round is over-committed\n"
        "by the excess over that limit and must be flagged on their\n"
        "certification so that the department can rebalance.\n\n"
        "Salaries are recorded as annual rates. The period is six months, so the salary for the period is half\n"
        "the annual rate, and a person's charged percentage applies to that half.\n"
    )
    ctx.write(f"sponsor_letters/award_letter_{active_capped[1]}.txt",
        f"{capped}\nNotice of award - {active_capped[1]}\n\n"
        "Salary charged to this award, and to every other award we make, is limited to an annual rate of\n"
        f"${cap:,}. Where an investigator earns more than this, charges are calculated on the capped rate and\n"
        "the institution must meet the remainder from its own funds. This limit applies to effort charged to the\n"
        "award, not to effort the institution cost-shares.\n"
    )
    ctx.write("mail/2026-10-08_dean_clinical_reserve.eml",
        "From: dean.medicine@university.example\nSubject: Clinical reserve for effort reports\n\n"
        f"Colleagues, from this certification onward, faculty in {clinical_dept} also reserve {clinical}% of their\n"
        "effort for clinical duties, on top of the usual teaching reserve. Please include it when certifying.\n"
    )
    for i in range(ctx.size("sponsor_letters")):
        g = grants[(i * 3 + 1) % len(grants)]
        if g[2] == capped:
            g = active_other
        ctx.write(f"sponsor_letters/correspondence_{i:03d}_{g[1]}.txt",
            f"{g[2]}\nRe: {g[1]}\n\nThank you for the progress report on {g[3]}. We have no comments on the budget.\n"
            "Please remember to acknowledge our support in publications.\n")
    for i in range(ctx.size("admin_mail")):
        ctx.write(f"mail/2026-11-{i + 1:02d}_research_office_{i}.eml",
            "From: research.office@university.example\nSubject: "
            f"{rng.choice(['Timesheet reminder', 'Audit visit', 'New grants portal', 'Indirect cost rates'])}\n\n"
            "For information only; no change to how effort is certified.\n")
