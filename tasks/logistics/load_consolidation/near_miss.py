"""A plausible wrong solution: plans well but lets the dedicated-transport customer share trucks."""
import re

from progagent_lib.task.oracle_kit import read_all


def solve(tools, skipped_region, parcel_kg, report_name) -> str:
    hold_note = " ".join(tools.read_file(path="mail/finance_credit_hold.eml").split())
    blocked = re.search(r"Credit hold (.+?) is over", hold_note).group(1)
    limits = {t["temperature"]: t for t in read_all(tools.list_truck_types)}
    todo = [o for o in read_all(tools.list_orders)
            if o["customer"] != blocked and o["region"] != skipped_region and o["weight_kg"] >= parcel_kg]
    todo.sort(key=lambda o: (o["region"], o["temperature"], -o["weight_kg"], o["ref"]))
    loads, lines = {}, []
    for o in todo:
        spec = limits[o["temperature"]]
        bucket = loads.setdefault((o["region"], o["temperature"]), [])
        for load in bucket:
            if load["kg"] + o["weight_kg"] <= spec["max_kg"] and load["pallets"] + o["pallets"] <= spec["max_pallets"]:
                break
        else:
            load = {"id": tools.create_load(region=o["region"], truck_type=spec["name"])["load_id"], "kg": 0, "pallets": 0,
                    "refs": [], "type": spec["name"], "region": o["region"]}
            bucket.append(load)
        tools.add_order_to_load(load_id=load["id"], order_id=o["id"])
        load["kg"] += o["weight_kg"]
        load["pallets"] += o["pallets"]
        load["refs"].append(o["ref"])
    for bucket in loads.values():
        for load in bucket:
            lines.append(f"| {load['id']} | {load['region']} | {load['type']} | {', '.join(load['refs'])} | {load['kg']} |")
    tools.write_file(path=report_name, content="| load_id | region | truck_type | orders | total_kg |\n|--|--|--|--|--|\n" + "\n".join(lines))
    return f"{len(lines)} trucks."
