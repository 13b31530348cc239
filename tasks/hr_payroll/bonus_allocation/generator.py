"""State for hr_payroll/bonus_allocation: staff, two review cycles of scores, committee minutes and HR notes."""
import datetime as dt

DEPARTMENTS = ["Engineering", "Sales", "Finance", "Operations", "Marketing"]
NAMES = ["Ari", "Bex", "Cam", "Dov", "Eun", "Fox", "Gia", "Hux", "Ivy", "Jax", "Kai", "Lia", "Mo", "Nox", "Ona",
         "Pim", "Rio", "Sky", "Tao", "Uri", "Vea", "Wim", "Yas", "Zoe"]
FAMILY = ["Adler", "Bauer", "Cruz", "Dahl", "Eady", "Finch", "Gale", "Hart", "Imai", "Jovic", "Kerr", "Lund", "Mori",
          "Ng", "Oduya", "Pratt", "Roux", "Sato", "Tull", "Vos"]


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE employees (id INTEGER PRIMARY KEY, emp_no TEXT UNIQUE, name TEXT, department TEXT, hire_date TEXT,
            salary INTEGER);
        CREATE TABLE reviews (id INTEGER PRIMARY KEY, employee_id INTEGER, cycle INTEGER, score REAL, reviewer_comment TEXT);
        CREATE TABLE bonus_rounds (id INTEGER PRIMARY KEY, name TEXT);
        CREATE TABLE awards (id INTEGER PRIMARY KEY, round_id INTEGER, employee_id INTEGER, amount INTEGER,
            UNIQUE (round_id, employee_id));
        """
    )
    cutoff = dt.date(2026, rng.choice([9, 10]), rng.choice([1, 15]))
    tiers = rng.choice([(2, 5), (3, 6), (1, 4)])  # best rank for 3 units, best rank for 2 units
    n = ctx.size("employees")
    staff = []
    for eid in range(1, n + 1):
        department = DEPARTMENTS[eid % len(DEPARTMENTS)]
        hired = dt.date(2026, 12, 1) - dt.timedelta(days=rng.randint(10, 3000))
        staff.append([eid, f"B{7000 + eid * 13}", f"{rng.choice(NAMES)} {rng.choice(FAMILY)}", department,
                      hired.isoformat(), rng.randrange(42000, 140000, 500)])
    scores = {s[0]: round(rng.uniform(55, 99), 1) for s in staff}
    # Engineering's top scores form a tie pattern where dense and shared (competition) ranks give different units.
    eng = [s[0] for s in staff if s[3] == DEPARTMENTS[0]]
    top = 97.5
    pattern = [top, top - 2, top - 2] + [top - 3 - k for k in range(tiers[1] + 1)]
    for eid, value in zip(eng, pattern):
        scores[eid] = value
    for eid in eng[len(pattern):]:
        scores[eid] = min(scores[eid], top - 4 - len(pattern))
    # Two late joiners and two people on a performance plan with scores that would otherwise rank.
    late = [staff[1], staff[7]]
    for s in late:
        s[4] = (cutoff + dt.timedelta(days=rng.randint(1, 40))).isoformat()
    pip = [staff[2], staff[10]]  # neither in Engineering, whose tie pattern must stay intact
    # Late joiners and PIP cases score well enough to matter; two long-serving people
    # in each of Marketing and Sales (never both held) score just either side of the qualifying score, so
    # whichever score is asked for matters.
    for s in late + pip:
        scores[s[0]] = round(rng.uniform(80, 95), 1)
    for s, delta in ((staff[3], -0.5), (staff[8], 0.5), (staff[5], -0.5), (staff[15], 0.5)):
        s[4] = (cutoff - dt.timedelta(days=rng.randint(100, 2000))).isoformat()
        scores[s[0]] = ctx.params["min_score"] + delta
    db.executemany("INSERT INTO employees VALUES (?,?,?,?,?,?)", [tuple(s) for s in staff])
    remarks = ["consistently strong delivery", "needs to delegate more", "great mentor to new joiners",
               "solid year with some missed deadlines", "excellent stakeholder feedback", "steady contributor"]
    reviews = [(eid, 2026, sc) for eid, sc in scores.items()]
    reviews += [(s[0], cycle, round(rng.uniform(50, 99), 1)) for s in staff for cycle in (2024, 2025)]
    db.executemany("INSERT INTO reviews (employee_id, cycle, score, reviewer_comment) VALUES (?,?,?,?)",
                   [r + (rng.choice(remarks),) for r in rng.sample(reviews, len(reviews))])

    heads = {d: sum(1 for s in staff if s[3] == d) for d in DEPARTMENTS}
    pools = {d: heads[d] * rng.choice([1500, 2000, 2500]) + rng.choice([0, 250, 750]) for d in DEPARTMENTS}
    pool_text = "; ".join(f"{d} {pools[d]:,}" for d in DEPARTMENTS)
    minutes = (
        "# Compensation committee - minutes\n\nPresent: the CFO, the HR director, two non-executive members.\n\n"
        f"1. Bonus pools for the 2026 cycle were approved as follows: {pool_text}.\n"
        "2. Rankings use the scores from the 2026 review cycle only; earlier cycles are for reference.\n"
        f"3. People who joined after {cutoff:%d %B %Y} are not eligible this year.\n"
        "4. Any amount left over after rounding stays in the pool and is not paid out.\n")
    ctx.write("committee/minutes_bonus_pools.md", minutes)
    ctx.write("hr/bonus_scheme_rules.md",
        "# Bonus scheme rules\n\n"
        "Within a department, eligible people are ranked by review score, highest first. People with equal\n"
        "scores share a rank, and the ranks after a tie are skipped accordingly (two people sharing 2nd place\n"
        "are followed by 4th place).\n\n"
        f"Rank {tiers[0]} or better earns 3 units, rank {tiers[1]} or better earns 2 units, and every other eligible\n"
        "person earns 1 unit. Each person's bonus is the department pool times their units divided by the\n"
        "department's total units, rounded down to a whole amount.\n"
    )
    ctx.write("hr/performance_plans.eml",
        "From: hr.director@company.example\nSubject: Bonus eligibility - performance plans\n\n"
        "The following colleagues are on a performance improvement plan and are not eligible for a bonus this\n"
        f"year: {pip[0][2]} ({pip[0][1]}) and {pip[1][2]} ({pip[1][1]}). Please keep this confidential.\n"
    )
    for i in range(ctx.size("comp_notes")):
        topic = ["salary benchmarking", "pension matching", "car allowance", "share plan", "pay slips", "tax codes",
                 "holiday buy-back", "childcare vouchers"][i % 8]
        ctx.write(f"hr/comp_note_{i:03d}.txt",
            f"Comp team note: {topic}.\nThe {rng.choice(DEPARTMENTS)} team asked about {topic}; no effect on bonuses.\n"
            f"Ref {rng.randint(100, 999)}.\n")
