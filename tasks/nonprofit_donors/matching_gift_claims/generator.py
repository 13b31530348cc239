"""State for nonprofit_donors/matching_gift_claims: donors, their employers, gifts, amounts already
matched this year, one programme guide per employer, a fund note and a programme suspension e-mail.
The request (task.toml [params]) holds back one company's claim (never the suspended one; every excludable company has
a donor with a recent eligible gift)."""
import datetime as dt

COMPANIES = ["Altamira Software", "Brookfield Foods", "Cobalt Engineering", "Dovetail Insurance", "Everline Bank",
             "Foxglove Pharma", "Greyhaven Logistics", "Helix Energy"]
FUNDS = ["general", "general", "scholarships", "capital campaign", "gala tickets", "community kitchen"]
FIRST = ["Alice", "Ben", "Carmen", "Dev", "Elif", "Fergus", "Gwen", "Hamid", "Isla", "Jorge", "Kofi", "Lucia",
         "Mateo", "Nadia", "Oskar", "Petra", "Ravi", "Sofia", "Theo", "Uma"]
LAST = ["Archer", "Bell", "Cruz", "Doyle", "Ellis", "Frost", "Greer", "Hale", "Ivers", "Joyce", "Khan", "Lamb",
        "Moss", "Nash", "Owen", "Pike"]
RATIO_WORDS = {1.0: "dollar for dollar (1 times the gift)", 2.0: "two dollars for every dollar (2 times the gift)",
               0.5: "fifty cents for every dollar (0.5 times the gift)"}
TODAY = dt.date(2026, 12, 1)
EXCLUDABLE = COMPANIES[2:]  # Altamira and Brookfield carry the retiree, cap and deadline traps


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE employers (id INTEGER PRIMARY KEY, name TEXT UNIQUE, contact_email TEXT);
        CREATE TABLE donors (id INTEGER PRIMARY KEY, name TEXT, employer_id INTEGER, employment_status TEXT, email TEXT);
        CREATE TABLE gifts (id INTEGER PRIMARY KEY, donor_id INTEGER, gift_date TEXT, amount REAL, fund TEXT, method TEXT);
        CREATE TABLE matched_this_year (donor_id INTEGER PRIMARY KEY, matched_amount REAL);
        CREATE TABLE claims (id INTEGER PRIMARY KEY, employer_id INTEGER, submitted_on TEXT);
        CREATE TABLE claim_lines (id INTEGER PRIMARY KEY, claim_id INTEGER, gift_id INTEGER, match_amount REAL);
        """
    )
    programmes = {}
    for i, name in enumerate(COMPANIES):
        programmes[name] = {
            "ratio": rng.choice(list(RATIO_WORDS)),
            "minimum": rng.choice([25, 50, 100]),
            "cap": rng.choice([1000, 2500, 5000]),
            "deadline": ("days", rng.choice([90, 180, 365])) if i % 2 else ("june", None),
            "retirees": rng.random() < 0.5,
            "excluded": rng.choice(["capital campaign", "scholarships", None]),
        }
    # Keep each rule in play at every seed.
    first, second = COMPANIES[0], COMPANIES[1]
    programmes[first]["retirees"] = False
    programmes[second]["deadline"] = ("days", 90)
    suspended = rng.choice([c for c in EXCLUDABLE if c != ctx.params["excluded_company"]])
    suspended_from = TODAY - dt.timedelta(days=rng.randint(40, 100))
    db.executemany("INSERT INTO employers VALUES (?,?,?)",
                   [(i + 1, n, f"giving@{n.split()[0].lower()}.example") for i, n in enumerate(COMPANIES)])

    donors = []
    for did in range(1, ctx.size("donors") + 1):
        employer = rng.randint(1, len(COMPANIES)) if rng.random() < 0.75 else None
        donors.append([did, f"{rng.choice(FIRST)} {rng.choice(LAST)}", employer,
                       rng.choice(["employee", "employee", "employee", "retiree"]) if employer else "", f"donor{did}@mail.example"])
    donors[0][2:4] = [1, "retiree"]
    donors[1][2:4] = [1, "employee"]
    donors[2][2:4] = [2, "employee"]
    donors[3][2:4] = [COMPANIES.index(suspended) + 1, "employee"]
    for k, company in enumerate(EXCLUDABLE):  # donors 5-10: an employee of each excludable company, one recent gift
        donors[4 + k][2:4] = [COMPANIES.index(company) + 1, "employee"]
    db.executemany("INSERT INTO donors VALUES (?,?,?,?,?)", [tuple(d) for d in donors])

    gifts = []
    start = dt.date(2025, 3, 1)
    for _ in range(ctx.size("gifts")):
        d = rng.choice(donors)
        day = start + dt.timedelta(days=rng.randint(0, (TODAY - start).days - 1))
        gifts.append([d[0], day.isoformat(), float(rng.choice([10, 20, 25, 40, 50, 75, 100, 150, 250, 500, 1000, 2000])),
                      rng.choice(FUNDS), rng.choice(["card", "cheque", "bank transfer"])])
    gifts = [g for g in gifts if not 5 <= g[0] <= 4 + len(EXCLUDABLE)]
    gifts += [[5 + k, (TODAY - dt.timedelta(days=20 + k)).isoformat(), 200.0, "general", "card"] for k in range(len(EXCLUDABLE))]
    gifts += [[1, "2026-10-02", 300.0, "general", "card"],                                 # retiree, employees-only
              [2, "2026-09-14", 3000.0, "general", "bank transfer"],                       # hits the annual cap
              [2, "2026-10-20", 800.0, "general", "card"],                                 # nothing left under the cap
              [3, (TODAY - dt.timedelta(days=95)).isoformat(), 400.0, "general", "card"],  # past a 90-day deadline
              [3, (TODAY - dt.timedelta(days=30)).isoformat(), 60.0, "gala tickets", "card"],
              [4, (suspended_from + dt.timedelta(days=5)).isoformat(), 500.0, "general", "card"]]  # after the pause
    gifts.sort(key=lambda g: (g[1], g[0]))
    db.executemany("INSERT INTO gifts (donor_id, gift_date, amount, fund, method) VALUES (?,?,?,?,?)", [tuple(g) for g in gifts])
    prior = [(d[0], float(rng.choice([0, 100, 250, 500]))) for d in donors if d[2] and rng.random() < 0.3 and d[0] > 4 + len(EXCLUDABLE)]
    prior.append((2, float(programmes[first]["cap"] - 200)))
    db.executemany("INSERT INTO matched_this_year VALUES (?,?)", prior)

    for name, p in programmes.items():
        deadline = (f"Requests must reach us within {p['deadline'][1]} days of the date of the gift."
                    if p["deadline"][0] == "days" else
                    "Requests for a gift made in one calendar year must reach us by 30 June of the following year.")
        who = ("Retired employees remain eligible for the programme." if p["retirees"]
               else "The programme is open to current employees only; retirees are not eligible.")
        excluded = f" We do not match gifts to {p['excluded']} funds." if p["excluded"] else ""
        ctx.write(f"matching_programmes/{name.lower().replace(' ', '_')}_matching_guide.md",
            f"# {name} - employee matching gift programme\n\n"
            f"{name} matches the charitable gifts of its people {RATIO_WORDS[p['ratio']]}. Gifts of less than "
            f"${p['minimum']} are not matched.\n"
            f"Each person can receive up to ${p['cap']:,} in matching funds per calendar year, counting what has "
            "already been matched\nthat year; a gift that would go over the limit is matched only up to it.\n"
            f"{who}{excluded}\n{deadline}\n")
    ctx.write("development_office/matching_gifts_howto.txt",
        "How we handle matching gifts\n\n"
        "Gala tickets carry a benefit to the buyer (dinner, entertainment), so no company will match them; never\n"
        "claim them. Work through a donor's gifts in date order when applying a company's yearly limit; the\n"
        "amounts already matched in 2026 are in the donor records, and nothing given in 2025 has been matched yet.\n"
        "Do not put a gift on a claim when there is nothing left to match for it.\n")
    ctx.write("mail/2026-11-15_programme_paused.eml",
        f"From: giving@{suspended.split()[0].lower()}.example\nSubject: Matching programme paused\n\n"
        f"Due to a restructuring, {suspended} has paused its matching gift programme. Gifts made on or after\n"
        f"{suspended_from.strftime('%d %B %Y')} will not be matched; gifts made before that date can still be submitted\n"
        "under the usual rules.\n")
    for i in range(ctx.size("supporter_mail")):
        ctx.write(f"mail/2026-11-{i + 1:02d}_supporter_{i}.eml",
            f"From: donor{rng.randint(1, len(donors))}@mail.example\nSubject: "
            f"{rng.choice(['Change of address', 'Thank you letter', 'Newsletter preferences', 'Volunteering'])}\n\n"
            "Just a quick note for your records. Nothing about matching gifts.\n")
