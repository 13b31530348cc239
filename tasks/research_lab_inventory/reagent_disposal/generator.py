"""State for research_lab_inventory/reagent_disposal: a chemical inventory and the safety office's rules."""
from datetime import date, timedelta

CHEMICALS = [  # name, hazard class recorded in the inventory
    ("acetone", "flammable"), ("ethanol absolute", "flammable"), ("methanol", "flammable"), ("hexane", "flammable"),
    ("toluene", "flammable"), ("ethyl acetate", "flammable"), ("hydrogen peroxide 30%", "oxidizer"),
    ("potassium permanganate", "oxidizer"), ("sodium hypochlorite", "oxidizer"), ("nitric acid 65%", "corrosive"),
    ("hydrochloric acid 37%", "corrosive"), ("sodium hydroxide pellets", "corrosive"), ("sulfuric acid 96%", "corrosive"),
    ("acrylamide", "toxic"), ("sodium azide", "toxic"), ("phenol", "toxic"), ("chloroform", "toxic"),
    ("sodium chloride", "non-hazardous"), ("tris base", "non-hazardous"), ("agarose", "non-hazardous"),
    ("glycerol", "non-hazardous"), ("sucrose", "non-hazardous")]
PEROXIDE_FORMERS = [("diethyl ether", "flammable"), ("tetrahydrofuran", "flammable"), ("1,4-dioxane", "flammable"),
                    ("diisopropyl ether", "flammable")]
STREAMS = {"flammable": "SOLV", "oxidizer": "OXID", "corrosive": "CORR", "toxic": "TOXW", "non-hazardous": "GENL"}
ROOMS = ["B-101", "B-104", "B-210", "C-002", "C-115", "D-330"]
PIS = ["Dr Okafor", "Dr Lindqvist", "Prof Haddad", "Dr Moreau", "Prof Tanaka", "Dr Alvarez"]


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE reagents (id INTEGER PRIMARY KEY, barcode TEXT UNIQUE, name TEXT, room TEXT, hazard_class TEXT,
            container_ml INTEGER, expiry_date TEXT, opened_on TEXT, lot TEXT, supplier TEXT, status TEXT);
        CREATE TABLE manifests (id INTEGER PRIMARY KEY, stream TEXT, status TEXT);
        CREATE TABLE manifest_items (id INTEGER PRIMARY KEY, manifest_id INTEGER, reagent_id INTEGER);
        """
    )
    audit = date(2026, 12, 1) + timedelta(days=rng.randint(0, 20))
    perox_months = ctx.params["perox_months"]
    perox_stream = "PERX"

    def months_back(months):  # a day comfortably `months` months before the audit
        return audit - timedelta(days=int(months * 30.5))

    reagents = []
    for rid in range(1, ctx.size("reagents") + 1):
        name, hazard = rng.choice(PEROXIDE_FORMERS) if rng.random() < 0.15 else rng.choice(CHEMICALS)
        expiry = audit + timedelta(days=rng.randint(-300, 700))
        opened = None if rng.random() < 0.3 else (audit - timedelta(days=rng.randint(5, 700))).isoformat()
        status = "disposed" if rng.random() < 0.08 else "in stock"
        if opened and abs((audit - date.fromisoformat(opened)).days - perox_months * 30.4) < 8:
            opened = (date.fromisoformat(opened) - timedelta(days=16)).isoformat()  # no near-boundary ambiguity
        reagents.append([rid, f"RG{rid * 37 + 10000:06d}", name, rng.choice(ROOMS), hazard,
                         rng.choice([100, 250, 500, 1000, 2500]), expiry.isoformat(), opened,
                         f"L{rng.randint(10000, 99999)}", rng.choice(["Sigma", "Fisher", "VWR", "Merck"]), status])

    def force(idx, **kw):
        row = reagents[idx]
        for key, value in kw.items():
            row[["id", "barcode", "name", "room", "hazard_class", "container_ml", "expiry_date", "opened_on", "lot",
                 "supplier", "status"].index(key)] = value
        row[10] = "in stock"
        return row

    # Guaranteed cases at every scale and seed.
    aged_ether = force(3, name=PEROXIDE_FORMERS[0][0], hazard_class="flammable",
                       expiry_date=(audit + timedelta(days=400)).isoformat(),
                       opened_on=(months_back(perox_months) - timedelta(days=20)).isoformat())
    fresh_thf = force(6, name=PEROXIDE_FORMERS[1][0], hazard_class="flammable",
                      expiry_date=(audit + timedelta(days=300)).isoformat(),
                      opened_on=(months_back(perox_months) + timedelta(days=20)).isoformat())
    force(9, name="toluene", hazard_class="flammable", expiry_date=audit.isoformat())
    extended = force(12, name="sodium azide", hazard_class="toxic", expiry_date=(audit - timedelta(days=40)).isoformat())
    refused = force(15, name="nitric acid 65%", hazard_class="corrosive", expiry_date=(audit - timedelta(days=25)).isoformat())
    unopened_ether = force(18, name=PEROXIDE_FORMERS[2][0], hazard_class="flammable",
                           expiry_date=(audit + timedelta(days=200)).isoformat(), opened_on=None)
    # Opened peroxide formers between every two possible limits (4.5, 7.5 and 10.5 months open).
    for idx, months in ((24, 4.5), (27, 7.5), (30, 10.5)):
        force(idx, name=PEROXIDE_FORMERS[3][0], hazard_class="flammable", expiry_date=(audit + timedelta(days=500)).isoformat(),
              opened_on=months_back(months).isoformat())
    gone = reagents[21]
    gone[6], gone[10] = (audit - timedelta(days=90)).isoformat(), "disposed"
    db.executemany("INSERT INTO reagents VALUES (?,?,?,?,?,?,?,?,?,?,?)", [tuple(r) for r in reagents])

    formers = ", ".join(n for n, _ in PEROXIDE_FORMERS)
    ctx.write("ehs/chemical_store_audit_rules.md",
        f"# Chemical store audit - {audit.day} {audit:%B %Y}\n\n"
        "## What must go\n"
        "Any container still in stock whose expiry date falls on or before the audit date is disposed of.\n"
        f"Peroxide-forming solvents ({formers}) are also disposed of once, on the audit date, they\n"
        "have been open for longer than the limit set for that audit, whatever their printed expiry; an unopened\n"
        "container of these follows the normal expiry rule. Containers already recorded as disposed are not\n"
        "touched again.\n\n"
        "## Waste streams\n"
        f"Flammable solvents go to the solvent stream, code {STREAMS['flammable']}. Oxidisers are collected on\n"
        f"their own under {STREAMS['oxidizer']}. Corrosives go to {STREAMS['corrosive']} and toxic materials to\n"
        f"{STREAMS['toxic']}. Anything non-hazardous can go to general lab waste, {STREAMS['non-hazardous']}.\n"
        f"All peroxide formers, whatever hazard class the inventory gives them, go to the stabilised stream\n"
        f"{perox_stream} so they are not bulked with other solvents.\n"
    )
    ctx.write("mail/extension_granted.eml",
        f"From: ehs.office@university.example\nSubject: Re: extension request {extended[1]}\n\n"
        f"Dear {rng.choice(PIS)},\n\nWe have reviewed the stability data you sent. The extension for container\n"
        f"{extended[1]} ({extended[2]}) is approved until {(audit + timedelta(days=120)).isoformat()}, so it stays\n"
        "in the store for this audit.\n\nEHS office\n"
    )
    ctx.write("mail/extension_refused.eml",
        f"From: ehs.office@university.example\nSubject: Re: extension request {refused[1]}\n\n"
        f"Dear {rng.choice(PIS)},\n\nWe cannot approve an extension for container {refused[1]} ({refused[2]}); there\n"
        "is no stability data for opened acid. It goes out with the normal collection.\n\nEHS office\n"
    )
    topics = ["fume hood certification", "eyewash checks", "glove box maintenance", "liquid nitrogen delivery",
              "freezer alarm", "induction training", "spill kit restock", "gas cylinder inventory"]
    for i in range(ctx.size("distractors")):
        r = rng.choice(reagents)
        topic = topics[i % len(topics)]
        folder = "ehs" if i % 2 else "mail"
        ctx.write(f"{folder}/memo_{i:03d}_{topic.replace(' ', '_')}.txt",
            f"Subject: {topic}\n\nA reminder from {rng.choice(PIS)}'s group about the {topic} in room {r[3]}.\n"
            f"Container {r[1]} was moved to the second shelf; this has no effect on its disposal date.\n"
        )
    ctx.facts(extended=[extended[1]], guaranteed={"aged": aged_ether[1], "fresh": fresh_thf[1], "refused": refused[1],
                                                  "unopened": unopened_ether[1]})
