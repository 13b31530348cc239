"""A plausible wrong solution: fills freezers up to their full capacity, ignoring the fill limit (headroom) asked for."""
from progagent_lib.task.oracle_kit import read_all


def solve(tools, headroom, report_name) -> str:
    mails = {f["path"]: tools.read_file(path=f["path"]) for f in read_all(tools.list_files, pattern="mail/2026-11-[23]*")}
    names = {}
    for body in mails.values():
        first = body.split("\n\n", 1)[1].split()
        if "compressor" in body:
            names["failing"] = body.split("The compressor on ")[1].split()[0]
        elif "reserved" in body or "defrost" in body:
            names["blocked_" + str(len(names))] = first[0]
    freezers = read_all(tools.list_freezers)
    fid = {f["name"]: f["id"] for f in freezers}
    source = fid[names.pop("failing")]
    skip = {source} | {fid[n] for n in names.values() if n in fid}
    boxes = read_all(tools.list_boxes)
    used = {f["id"]: sum(1 for b in boxes if b["freezer_id"] == f["id"]) for f in freezers}
    transfers, left = {}, []
    for box in sorted((b for b in boxes if b["freezer_id"] == source), key=lambda b: b["label"]):
        fits = [(-(f["capacity_boxes"] - used[f["id"]]), f["name"], f["id"]) for f in freezers
                if f["id"] not in skip and f["temperature"] == box["storage_temperature"]
                and f["biosafety_level"] == box["biosafety_level"] and f["capacity_boxes"] > used[f["id"]]]
        if not fits:
            left.append(box["label"])
            continue
        dest = min(fits)[2]
        if dest not in transfers:
            transfers[dest] = tools.create_transfer(source_freezer_id=source, destination_freezer_id=dest)["transfer_id"]
        tools.move_box(box_id=box["id"], transfer_id=transfers[dest])
        used[dest] += 1
    tools.write_file(path=report_name, content="label\n" + "\n".join(left) + "\n")
    return f"{len(left)} boxes could not be placed."
