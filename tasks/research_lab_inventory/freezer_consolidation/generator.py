"""State for research_lab_inventory/freezer_consolidation: freezers, the boxes in them, a storage SOP
(temperature, biosafety, headroom, placement order) and e-mails naming the failing, reserved and
defrosting freezers."""
import math

SAMPLE_TYPES = ["plasmid DNA", "RNA extracts", "serum aliquots", "cell pellets", "protein lysates",
                "bacterial glycerol stocks", "tissue sections", "primary antibodies"]
LABS = ["Okafor lab", "Lindgren lab", "Rossi lab", "Tanaka lab", "Mehta lab"]
ROOMS = ["B1.04", "B1.07", "B2.11", "C0.02"]


def generate(ctx):
    rng, db = ctx.rng, ctx.db
    db.executescript(
        """
        CREATE TABLE freezers (id INTEGER PRIMARY KEY, name TEXT UNIQUE, room TEXT, temperature TEXT,
            biosafety_level INTEGER, capacity_boxes INTEGER, model TEXT);
        CREATE TABLE boxes (id INTEGER PRIMARY KEY, label TEXT UNIQUE, freezer_id INTEGER, storage_temperature TEXT,
            biosafety_level INTEGER, sample_type TEXT, owner TEXT, created_on TEXT);
        CREATE TABLE transfers (id INTEGER PRIMARY KEY, source_freezer_id INTEGER, destination_freezer_id INTEGER);
        CREATE TABLE box_moves (id INTEGER PRIMARY KEY, transfer_id INTEGER, box_id INTEGER);
        """
    )
    headroom = ctx.params["headroom"]
    n = ctx.size("freezers")
    names = [f"FZ-{i:02d}" for i in range(1, n + 1)]
    rng.shuffle(names)
    # Roles of the first six freezers; the rest are ordinary -80/-20 BSL-1 freezers.
    specs = [("-80", 2, 60), ("-80", 2, 60), ("-80", 2, 60), ("-80", 2, 40), ("-80", 2, 40), ("-80", 1, 60)]
    freezers = []
    for i in range(n):
        temp, bsl, cap = specs[i] if i < len(specs) else (rng.choice(["-80", "-20"]), 1, rng.choice([40, 50, 60]))
        freezers.append((i + 1, names[i], rng.choice(ROOMS), temp, bsl, cap, rng.choice(["Thermo TSX", "Eppendorf CryoCube", "PHC VIP"])))
    failing, reserved, defrost, small_a, small_b = freezers[:5]
    db.executemany("INSERT INTO freezers VALUES (?,?,?,?,?,?,?)", freezers)

    fill = {}
    for f in freezers:
        limit = math.floor(f[5] * headroom / 100)
        fill[f[0]] = rng.randint(limit // 2, limit - 1)
    fill[failing[0]] = 48
    fill[reserved[0]] = 5                                   # plenty of room, but reserved
    fill[defrost[0]] = 10                                   # plenty of room, but being defrosted
    for f in (small_a, small_b):                            # almost full: BSL-2 space runs out
        fill[f[0]] = math.floor(f[5] * headroom / 100) - rng.randint(1, 3)
    boxes, box_id = [], 0
    order = list(range(1, 10 * len(freezers) * 60))
    rng.shuffle(order)
    for f in freezers:
        for _ in range(fill[f[0]]):
            box_id += 1
            bsl = rng.choice([1, 2]) if f[4] == 2 else 1
            if f[0] == failing[0]:
                bsl = 2 if box_id % 3 else 1                 # mostly BSL-2 in the failing freezer
            boxes.append((box_id, f"BX-{order[box_id]:05d}", f[0], f[3], bsl, rng.choice(SAMPLE_TYPES),
                          rng.choice(LABS), f"20{rng.randint(19, 26)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"))
    db.executemany("INSERT INTO boxes VALUES (?,?,?,?,?,?,?,?)", boxes)

    ctx.write("sop/SOP-STO-007_sample_storage.md",
        "# SOP-STO-007 Sample storage and emergency relocation\n\n"
        "1. A box may only be stored in a freezer that runs at the box's storage temperature.\n"
        "2. Biosafety level 2 material may only be stored in freezers rated for BSL-2. Conversely, do not put\n"
        "   BSL-1 boxes into a BSL-2 rated freezer: containment space is scarce and is kept for BSL-2 material.\n"
        "3. Never load a freezer beyond the fill limit the lab managers set for the relocation, a percentage of its\n"
        "   box capacity (rounded down to whole boxes); the rest is headroom for airflow and emergencies. Count the\n"
        "   boxes already in it.\n"
        "4. In an emergency relocation, move boxes in order of their label. Each box goes to the eligible freezer\n"
        "   that has the most free places left at that moment (after the headroom rule); if two are level, use\n"
        "   the one whose name comes first alphabetically.\n"
        "5. A box with no eligible freezer stays put and is reported to the lab manager.\n"
    )
    ctx.write("mail/2026-11-30_alarm.eml",
        "From: facilities@institute.example\nSubject: URGENT compressor failure\n\n"
        f"The compressor on {failing[1]} (room {failing[2]}) is failing and the unit is warming up. Everything in\n"
        "it must be relocated today under the emergency relocation procedure.\n")
    ctx.write("mail/2026-11-20_reserved_freezer.eml",
        "From: lab.manager@institute.example\nSubject: Freezer set aside for the trial samples\n\n"
        f"{reserved[1]} is reserved for the incoming clinical trial samples from next week. Please do not put\n"
        "anything else in it, even if it looks empty.\n")
    ctx.write("mail/2026-11-28_defrost.eml",
        "From: facilities@institute.example\nSubject: Planned defrost\n\n"
        f"{defrost[1]} is switched off for its annual defrost and clean until Friday. It cannot receive boxes.\n")
    for i in range(ctx.size("lab_mail")):
        f = rng.choice(freezers[5:] or freezers)
        ctx.write(f"mail/2026-11-{i + 1:02d}_lab_{i}.eml",
            f"From: {rng.choice(LABS).split()[0].lower()}@institute.example\nSubject: Inventory tidy-up\n\n"
            f"We cleared a few old boxes out of {f[1]} last week. Nothing else to report.\n")
    for i in range(ctx.size("equipment_logs")):
        f = rng.choice(freezers)
        ctx.write(f"equipment_logs/{f[1]}_log_{i}.txt",
            f"Temperature log {f[1]}: readings within range all week ({f[3]} C setpoint). Door seal checked.\n")
