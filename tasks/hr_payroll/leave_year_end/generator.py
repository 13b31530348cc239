"""State for hr_payroll/leave_year_end: staff with hire dates and FTE, leave records, the leave handbook."""
import datetime as dt
from dataclasses import dataclass

GIVEN = ["Abel", "Bea", "Cyrus", "Dina", "Ezra", "Fay", "Gil", "Hedda", "Ira", "Juno", "Kai", "Lotte", "Moss",
         "Nadia", "Orrin", "Pearl", "Reuben", "Selma", "Tomas", "Ulla", "Vik", "Willa"]
SURNAMES = ["Ashby", "Brooks", "Carver", "Drake", "Ellison", "Frost", "Gray", "Holm", "Ives", "Joyce", "Keane",
            "Lowe", "Marsh", "Noble", "Orme", "Pike", "Quill", "Reyes", "Stone", "Thorne", "Vance", "Wilde"]


@dataclass
class Person:
    id: int
    emp_no: str
    name: str
    hire_date: dt.date
    fte: float
    status: str
    opening_balance: float


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE employees (id INTEGER PRIMARY KEY, emp_no TEXT UNIQUE, name TEXT, hire_date TEXT, fte REAL,
            status TEXT, opening_balance REAL);
        CREATE TABLE leave_records (id INTEGER PRIMARY KEY, employee_id INTEGER, start_date TEXT, days REAL, kind TEXT);
        CREATE TABLE year_end_balances (id INTEGER PRIMARY KEY, employee_id INTEGER, year INTEGER, accrued REAL,
            taken REAL, carried_forward REAL, forfeited REAL);
        """
    )
    monthly = rng.choice([1.75, 2.0, 2.25])
    service_years, service_days = rng.choice([(5, 2), (5, 3), (10, 3), (10, 5)])
    cap = rng.choice([5, 8, 10])

    people = []
    for pid in range(1, ctx.size("employees") + 1):
        # Guaranteed cases: a mid-month 2026 hire, a first-of-month 2026 hire, a leaver, a service anniversary
        # falling on 31 December, and one falling on 1 January of the next year.
        if pid == 1:
            hired = dt.date(2026, rng.randint(2, 9), rng.randint(2, 27))
        elif pid == 2:
            hired = dt.date(2026, rng.randint(2, 9), 1)
        elif pid == 4:
            hired = dt.date(2026 - service_years, 12, 31)
        elif pid == 5:
            hired = dt.date(2027 - service_years, 1, 1)
        else:
            hired = dt.date(2026, 1, 1) - dt.timedelta(days=rng.randint(20, 365 * 14))
            if rng.random() < 0.12:
                hired = dt.date(2026, rng.randint(1, 11), rng.randint(1, 28))
        status = "left" if pid == 3 or (pid > 6 and rng.random() < 0.06) else "active"
        opening = 0.0 if hired.year == 2026 else rng.choice([0, 1, 2, 2.5, 3, 4, 5, 6.5, 8])
        fte = rng.choice([1.0, 1.0, 1.0, 0.8, 0.6, 0.5])
        if pid == 6:  # a full-time saver who took no annual leave: over any raised cap, so the raise matters
            hired, opening, fte = dt.date(2026 - 2 - rng.randint(0, 1), rng.randint(2, 12), 1), 8.0, 1.0
        people.append(Person(pid, f"P{4100 + pid * 3}", f"{rng.choice(GIVEN)} {rng.choice(SURNAMES)}", hired,
                             fte, status, opening))
    db.executemany("INSERT INTO employees VALUES (?,?,?,?,?,?,?)",
                   [(p.id, p.emp_no, p.name, p.hire_date.isoformat(), p.fte, p.status, p.opening_balance) for p in people])

    records = []
    for p in people:
        first_day = max(p.hire_date, dt.date(2025, 10, 1))
        for _ in range(rng.randint(2, 6)):
            start = first_day + dt.timedelta(days=rng.randint(0, max(1, (dt.date(2026, 12, 20) - first_day).days)))
            kind = rng.choice(["annual", "annual", "annual", "sick", "unpaid"]) if p.id != 6 else rng.choice(["sick", "unpaid"])
            records.append((p.id, start.isoformat(), rng.choice([0.5, 1, 1, 2, 3, 5]), kind))
    # The correction must always concern an annual-leave record in 2026 of an active member of staff.
    fix_person = next(p for p in people[6:] if p.status == "active")
    fixed = (fix_person.id, dt.date(2026, rng.randint(3, 10), rng.randint(1, 28)).isoformat(), 3.0, "annual")
    records = [r for r in records if (r[0], r[1]) != fixed[:2]] + [fixed]
    records.sort(key=lambda r: (r[1], r[0]))
    db.executemany("INSERT INTO leave_records (employee_id, start_date, days, kind) VALUES (?,?,?,?)", records)

    pretty = dt.date.fromisoformat(fixed[1])
    docs = {
        "handbook/annual_leave.md": (
            "# Annual leave handbook\n\n"
            "The leave year runs from 1 January to 31 December.\n\n"
            f"**Accrual.** Full-time staff earn {monthly} days of annual leave for every calendar month of the year in\n"
            "which they were employed on the first day of the month. Part-time staff earn the same in proportion to\n"
            "their FTE. The year's accrual is rounded to the nearest half day (halves round up).\n\n"
            f"**Long service.** Anyone who has completed {service_years} years of service by 31 December of the leave year\n"
            f"receives {service_days} extra days on top of that year's accrual, in full whatever their FTE.\n\n"
            "**Taken.** Only annual leave starting within the leave year counts against the balance. Sick leave and\n"
            "unpaid leave do not.\n\n"
            f"**Carry-over.** At year end at most {cap} days may be carried forward into the next year; anything above\n"
            "that is forfeited. The year's balance is the opening balance plus accrual (and any long-service days)\n"
            "minus leave taken. A negative balance is carried forward as it stands and nothing is forfeited.\n\n"
            "**Leavers.** People who have left are settled through their final pay and get no year-end balance.\n"
        ),
        "hr_notes/leave_record_correction.eml": (
            "From: occupational.health@company.example\nSubject: Correction to a leave record\n\n"
            f"{fix_person.name} ({fix_person.emp_no}) was booked on annual leave for three days from "
            f"{pretty.day} {pretty:%B %Y}, but a doctor's\nnote has since come in: those days were sick leave. Please "
            "treat them as sick leave for the year-end calculation;\nthe record in the system will be fixed later.\n"
        ),
    }
    notes = ["summer party", "bike-to-work scheme", "eye tests", "mentoring circles", "desk booking", "payslip portal",
             "fire wardens", "coffee machine"]
    for i in range(ctx.size("people_notes")):
        other = rng.choice(people)
        docs[f"hr_notes/note_{i:03d}_{notes[i % len(notes)].replace(' ', '_')}.txt"] = (
            f"People team update - {notes[i % len(notes)]}.\nAsk {other.name} for details. Leave entitlements are unchanged.\n"
            f"Ref {rng.randint(100, 999)}.\n")
    for rel, text in docs.items():
        ctx.write(rel, text)
    ctx.facts(long_service_hired_by=f"{2026 - service_years}-12-31")
