"""State for marketing_campaigns/ab_test_writeup: experiments, variants, daily results, the analysis plan and incidents.
The request (task.toml [params]) holds one November test out of the write-up (EXP-301..EXP-304 always finish in
November)."""
from datetime import date, timedelta

PAGES = ["checkout", "pricing page", "signup form", "product page", "cart drawer", "onboarding email", "search results",
         "homepage hero"]
CHANGES = ["one-step layout", "social proof badge", "annual plan default", "shorter form", "sticky CTA", "free shipping banner"]


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE experiments (id INTEGER PRIMARY KEY, key TEXT UNIQUE, name TEXT, status TEXT, start_date TEXT,
            end_date TEXT, decision TEXT, winning_variant_id INTEGER);
        CREATE TABLE variants (id INTEGER PRIMARY KEY, experiment_id INTEGER, name TEXT, is_control INTEGER);
        CREATE TABLE daily_results (id INTEGER PRIMARY KEY, experiment_id INTEGER, variant_id INTEGER, day TEXT,
            device TEXT, visitors INTEGER, conversions INTEGER, revenue REAL);
        """
    )
    alpha = rng.choice([0.05, 0.01])
    guardrail = rng.choice([2, 3, 5])
    experiments, variants, rows, incidents = [], [], [], []
    # The first four experiments of every scale play fixed roles; the rest get random effects.
    roles = ["winner", "guardrail", "flat", "incident"]
    n = ctx.size("experiments")
    for eid in range(1, n + 1):
        role = roles[eid - 1] if eid <= len(roles) else rng.choice(["winner", "flat", "three_way", "running", "october"])
        role = {5: "three_way", 6: "running"}.get(eid, role)
        start = date(2026, 10, rng.randint(20, 31))
        end = start + timedelta(days=rng.randint(14, 24))
        status = "completed"
        if role == "running":
            status, end = "running", date(2026, 12, 15)
        elif role == "october":
            start, end = date(2026, 9, rng.randint(10, 20)), date(2026, 10, rng.randint(20, 30))
        elif end.month != 11:
            end = date(2026, 11, 28)
        key = f"EXP-{300 + eid}"
        experiments.append((eid, key, f"{rng.choice(PAGES).capitalize()}: {rng.choice(CHANGES)}", status, start.isoformat(),
                            end.isoformat(), None, None))
        arms = ["control", "treatment_b"] + (["treatment_c"] if role in ("three_way", "incident") else [])
        base_rate, base_value = rng.uniform(0.03, 0.08), rng.uniform(40, 90)
        effects = {"winner": (1.25, 1.0), "guardrail": (1.3, 0.7), "flat": (1.0, 1.0), "incident": (1.02, 1.0),
                   "three_way": (rng.choice([1.07, 1.12]), 1.0), "running": (1.1, 1.0), "october": (1.2, 1.0)}[role]
        bad_day = None
        if role == "incident" or (role in ("winner", "flat") and rng.random() < 0.4):
            bad_day = start + timedelta(days=rng.randint(2, (min(end, date(2026, 11, 30)) - start).days - 2))
            incidents.append((key, bad_day))
        for arm in arms:
            vid = len(variants) + 1
            variants.append((vid, eid, arm, int(arm == "control")))
            rate_mult, value_mult = (1.0, 1.0) if arm == "control" else effects
            if arm == "treatment_c":
                rate_mult = 1.0 + (effects[0] - 1.0) * 0.5
            day = start
            while day <= min(end, date(2026, 11, 30)):
                for device in ("desktop", "mobile"):
                    visitors = rng.randint(300, 700)
                    conversions = max(0, round(visitors * base_rate * rate_mult * rng.uniform(0.9, 1.1)))
                    if day == bad_day and arm != "control":
                        conversions *= 3  # the double-counting incident inflates treatment conversions
                    revenue = round(conversions * base_value * value_mult * rng.uniform(0.95, 1.05), 2)
                    rows.append((eid, vid, day.isoformat(), device, visitors, conversions, revenue))
                day += timedelta(days=1)
    rng.shuffle(rows)
    db.executemany("INSERT INTO experiments VALUES (?,?,?,?,?,?,?,?)", experiments)
    db.executemany("INSERT INTO variants VALUES (?,?,?,?)", variants)
    db.executemany("INSERT INTO daily_results (experiment_id, variant_id, day, device, visitors, conversions, revenue) "
                   "VALUES (?,?,?,?,?,?,?)", rows)

    ctx.write("analytics/analysis_plan.md",
        "# Pre-registered A/B analysis plan\n\n"
        "Primary metric: conversion rate, i.e. conversions divided by visitors, summed over the test's days. "
        "Compare each treatment with the control using a two-sided two-proportion z-test with the pooled "
        "proportion. Lift is the treatment's conversion rate minus the control's, divided by the control's.\n\n"
        f"A treatment is significant when its p-value is below {alpha}. When a test has more than one treatment, "
        "divide that threshold by the number of treatments (Bonferroni) before comparing.\n\n"
        f"Guardrail: a treatment whose revenue per visitor is more than {guardrail}% below the control's cannot be "
        "shipped, however well it converts.\n\n"
        "Decision: ship the significant, positive, guardrail-passing treatment with the highest lift; if there is "
        "none, keep the control.\n\n"
        "Days named in the incident log are removed from the analysis for every variant of the affected test.\n"
    )
    lines = "\n".join(f"- {d.strftime('%d %B %Y').lstrip('0')}: tracking for {k} double-counted conversions in the treatment "
                      "arms after a tag deployment; the day is unusable." for k, d in incidents)
    ctx.write("analytics/incident_log.md", "# Analytics incident log\n\n" + (lines or "No incidents.") + "\n")
    topics = ["dashboard refresh", "experiment backlog", "naming conventions", "QA checklist", "holiday code freeze",
              "data retention", "stakeholder update"]
    for i in range(ctx.size("growth_notes")):
        exp = rng.choice(experiments)
        ctx.write(f"notes/note_{i:02d}_{topics[i % len(topics)].replace(' ', '_')}.md",
            f"# {topics[i % len(topics)].capitalize()}\n\nNotes from the growth sync. {exp[1]} came up briefly; the "
            f"owners are happy with the setup. Nothing here changes how tests are analysed. Action owner: team "
            f"{rng.choice(['red', 'blue', 'green'])}.\n"
        )
