import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, skipped_region, parcel_kg, report_name, dedicated_alone=True) -> str:
    dedicated, held = set(), set()
    for text in read_files(tools).values():
        flat = " ".join(text.split())
        dedicated |= set(re.findall(r"From this week (.+?) pays for dedicated transport", flat))
        held |= set(re.findall(r"Subject: Credit hold\s+(.+?) is over its credit limit", flat))

    kinds = {t["temperature"]: t for t in read_all(tools.list_truck_types)}
    groups = {}
    for o in read_all(tools.list_orders):
        if o["customer"] in held or o["region"] == skipped_region or o["weight_kg"] < parcel_kg:
            continue
        alone = dedicated_alone and o["customer"] in dedicated
        key = (o["region"], o["temperature"], o["customer"] if alone else "")
        groups.setdefault(key, []).append(o)

    rows = []
    for (region, temperature, _), group in sorted(groups.items()):
        truck = kinds[temperature]
        open_loads = []  # [load_id, kg, pallets, refs]
        for o in sorted(group, key=lambda o: (-o["weight_kg"], o["ref"])):
            target = next((l for l in open_loads if l[1] + o["weight_kg"] <= truck["max_kg"]
                           and l[2] + o["pallets"] <= truck["max_pallets"]), None)
            if target is None:
                target = [tools.create_load(region=region, truck_type=truck["name"])["load_id"], 0, 0, []]
                open_loads.append(target)
            tools.add_order_to_load(load_id=target[0], order_id=o["id"])
            target[1] += o["weight_kg"]
            target[2] += o["pallets"]
            target[3].append(o["ref"])
        rows += [f"| {l[0]} | {region} | {truck['name']} | {', '.join(l[3])} | {l[1]} |" for l in open_loads]
    columns = "load_id | region | truck_type | orders | total_kg"  # as the request names them
    table = f"| {columns} |\n|---|---|---|---|---|\n" + "\n".join(rows) + "\n"
    tools.write_file(path=report_name, content=table)
    return f"The plan is ready: we need {len(rows)} trucks in total."
