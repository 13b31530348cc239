"""State for nonprofit_donors/tax_receipts: supporters, gifts, Gift Aid declarations and supporter mail.
The request (task.toml [params]) leaves out a campaign receipted separately (the hand-built donors 1-6 give to the
General fund, and donors 7-10 each give 300 pounds to one excludable campaign) and sets the receipt threshold (the
policy leaves it to the request; donor 2 sits exactly on it and donor 3 just below it)."""
import itertools
from datetime import date, timedelta

FIRST = ["Alice", "Bilal", "Carys", "Declan", "Esme", "Farah", "Gareth", "Hannah", "Imran", "Jess", "Kwame", "Lucy",
         "Mohammed", "Niamh", "Owen", "Poppy", "Rhys", "Sana", "Toby", "Una", "Victor", "Wendy", "Yusuf", "Zara"]
LAST = ["Adams", "Begum", "Clarke", "Davies", "Evans", "Fraser", "Griffiths", "Hughes", "Iqbal", "Jenkins", "Khan",
        "Lewis", "Morgan", "Nash", "Owusu", "Patel", "Quinn", "Roberts", "Shaw", "Turner"]
METHODS = ["card", "direct debit", "cheque", "cash", "raffle ticket", "auction purchase"]
CAMPAIGNS = ["Winter appeal", "Spring fun run", "General fund", "Emergency appeal", "Legacy circle"]


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE donors (id INTEGER PRIMARY KEY, donor_no TEXT UNIQUE, first_name TEXT, last_name TEXT,
            email TEXT, country TEXT);
        CREATE TABLE gifts (id INTEGER PRIMARY KEY, donor_id INTEGER, gift_date TEXT, amount REAL, method TEXT,
            campaign TEXT, status TEXT);
        CREATE TABLE declarations (id INTEGER PRIMARY KEY, donor_id INTEGER, signed_on TEXT, covers TEXT);
        CREATE TABLE receipts (id INTEGER PRIMARY KEY, receipt_no TEXT UNIQUE, donor_id INTEGER, tax_year TEXT,
            qualifying_total REAL, gift_aid REAL);
        """
    )
    year = rng.choice([2024, 2025])
    ystart, yend = date(year, 4, 6), date(year + 1, 4, 5)
    threshold = ctx.params["threshold"]

    donors = []
    for did in range(1, ctx.size("donors") + 1):
        first, last = rng.choice(FIRST), rng.choice(LAST)
        donors.append([did, f"D{4000 + did * 3}", first, last, f"{first.lower()}.{last.lower()}{did}@mail.example",
                       "United Kingdom" if rng.random() < 0.88 else rng.choice(["Ireland", "France", "Spain"])])

    def day_in(a, b):
        return a + timedelta(days=rng.randint(0, (b - a).days))

    gifts = []

    def gift(donor, when, amount, method="card", status="received", campaign=None):
        gifts.append((len(gifts) + 1, donor, when.isoformat(), float(amount), method, campaign or rng.choice(CAMPAIGNS), status))

    for _ in range(ctx.size("gifts")):
        when = day_in(ystart - timedelta(days=120), yend + timedelta(days=60))
        method = rng.choice(METHODS) if rng.random() < 0.3 else rng.choice(METHODS[:4])
        gift(rng.randint(1, len(donors)), when, rng.choice([5, 10, 10, 15, 20, 25, 30, 50, 75, 100, 250]),
             method, "refunded" if rng.random() < 0.05 else "received")

    declarations = []
    for d in donors:
        if rng.random() < 0.6:
            declarations.append((len(declarations) + 1, d[0], day_in(ystart - timedelta(days=900), yend).isoformat(),
                                 rng.choice(["future gifts only", "past four years and future gifts"])))

    # Guaranteed cases: numbered donors 1..6 are rebuilt by hand so every seed and scale has them.
    special = {1, 2, 3, 4, 5, 6}
    gifts = [g for g in gifts if g[1] not in special]
    declarations = [dc for dc in declarations if dc[1] not in special]
    donors[2][5] = donors[3][5] = donors[4][5] = "United Kingdom"
    donors[5][5] = "France"
    mid = ystart + timedelta(days=150)
    gift(1, mid - timedelta(days=40), 40)                       # before a future-only declaration: no Gift Aid
    gift(1, mid + timedelta(days=10), 60)
    declarations.append((len(declarations) + 1, 1, mid.isoformat(), "future gifts only"))
    gift(2, mid, threshold)                                     # exactly at the threshold
    gift(2, mid + timedelta(days=3), 30, "raffle ticket")
    gift(3, mid - timedelta(days=30), threshold - 5)            # only gets there with a refunded gift: no receipt
    gift(3, mid, 20, status="refunded")
    gift(4, mid - timedelta(days=60), 120)                      # declaration cancelled by e-mail part-way through
    gift(4, mid + timedelta(days=60), 80)
    declarations.append((len(declarations) + 1, 4, (ystart - timedelta(days=500)).isoformat(), "past four years and future gifts"))
    gift(5, mid, 150, "direct debit")                           # anonymous, with a backdated declaration
    declarations.append((len(declarations) + 1, 5, (yend - timedelta(days=10)).isoformat(), "past four years and future gifts"))
    gift(6, mid, 200, "cheque")                                 # overseas: receipt but no Gift Aid
    declarations.append((len(declarations) + 1, 6, (ystart - timedelta(days=100)).isoformat(), "future gifts only"))
    gifts = [g[:5] + ("General fund",) + g[6:] if g[1] in special else g for g in gifts]
    # Donors 7-10: one sizeable gift to each campaign that may be left out.
    for k, campaign in enumerate(ctx.choices("excluded_campaign")):
        gift(7 + k, mid + timedelta(days=5 + k), 300, campaign=campaign)
    gifts.sort(key=lambda g: (g[2], g[0]))
    gifts = [(i,) + g[1:] for i, g in enumerate(gifts, start=1)]
    rng.shuffle(declarations)
    declarations = [(i,) + dc[1:] for i, dc in enumerate(declarations, start=1)]
    db.executemany("INSERT INTO donors VALUES (?,?,?,?,?,?)", [tuple(d) for d in donors])
    db.executemany("INSERT INTO gifts VALUES (?,?,?,?,?,?,?)", gifts)
    db.executemany("INSERT INTO declarations VALUES (?,?,?,?)", declarations)

    cancel_day = mid + timedelta(days=20)
    anonymous = [donors[4], donors[rng.randint(6, len(donors) - 1)]]
    ctx.write("finance/receipting_policy.md",
        f"# Annual receipting policy\n\nReceipts cover the tax year from 6 April {year} to 5 April {year + 1}, both days included.\n\n"
        "Only genuine donations count towards a receipt. Raffle tickets and auction purchases are payments for\n"
        "something in return, so they never count, and a refunded gift does not count either. A donor receives\n"
        "a receipt when their qualifying gifts in the year reach the threshold set for that year's receipting run.\n\n"
        "Gift Aid is 25 percent of the qualifying gifts covered by a valid declaration, worked out on the total\n"
        "and rounded to the penny. A declaration for future gifts only covers gifts made on or after the day it\n"
        "was signed; one that also covers the past four years covers every gift of this year. Gift Aid can only\n"
        "be claimed for donors who live in the United Kingdom. When a donor cancels a declaration, gifts made on\n"
        "or after the cancellation date are no longer covered.\n"
    )
    ctx.write(f"supporter_care/{donors[3][1]}_cancellation.eml",
        f"From: {donors[3][4]}\nSubject: Gift Aid\nDate: {cancel_day.isoformat()}\n\nHello, I have retired and no longer\n"
        f"pay enough income tax, so please cancel my Gift Aid declaration from today ({cancel_day.day} {cancel_day:%B %Y}).\n"
        f"My supporter number is {donors[3][1]}.\n\nBest wishes, {donors[3][2]} {donors[3][3]}\n"
    )
    for d in anonymous:
        ctx.write(f"supporter_care/{d[1]}_privacy.eml",
            f"From: {d[4]}\nSubject: Privacy request\n\nDear supporter care, I'm happy to keep giving but I would\n"
            f"like to remain anonymous in anything you share with trustees or publish. Supporter number {d[1]}.\n"
        )
    other = rng.choice([d for d in donors[6:] if d not in anonymous])
    ctx.write(f"supporter_care/{other[1]}_newsletter.eml",
        f"From: {other[4]}\nSubject: Newsletter\n\nPlease stop the printed newsletter; e-mail is fine. Being named in\n"
        f"the annual review is no problem at all. Supporter number {other[1]}.\n"
    )
    subjects = itertools.cycle(["volunteer rota", "charity shop rota", "fun run route", "trustee meeting", "printer contract",
                                "legacy event", "website update", "data protection training"])
    for number, subject in enumerate(itertools.islice(subjects, ctx.size("distractors"))):
        helper = rng.choice(donors)
        where = "finance" if number % 2 else "supporter_care"
        note = f"{subject.capitalize()}\n\nNotes on the {subject}. {helper[2]} {helper[3]} offered to help.\n"
        ctx.write(f"{where}/misc_{number:03d}_{subject.replace(' ', '_')}.txt",
                  note + "Nothing here changes receipting or Gift Aid.\n")
