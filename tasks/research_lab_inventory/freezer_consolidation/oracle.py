import math
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, headroom, report_name, fill_limit=True) -> str:
    text = " ".join("\n".join(read_files(tools).values()).split())
    failing_name = re.search(r"The compressor on (\S+) ", text).group(1)
    reserved_name = re.search(r"(\S+) is reserved for the incoming clinical trial samples", text).group(1)
    defrost_name = re.search(r"(\S+) is switched off for its annual defrost", text).group(1)

    freezers = {f["id"]: f for f in read_all(tools.list_freezers)}
    by_name = {f["name"]: f for f in freezers.values()}
    failing = by_name[failing_name]["id"]
    blocked = {failing, by_name[reserved_name]["id"], by_name[defrost_name]["id"]}
    boxes = read_all(tools.list_boxes)
    count = {fid: 0 for fid in freezers}
    for b in boxes:
        count[b["freezer_id"]] += 1
    transfer_for = {}
    unplaced = []
    for box in sorted((b for b in boxes if b["freezer_id"] == failing), key=lambda b: b["label"]):
        best = None
        for fid, f in freezers.items():
            if fid in blocked or f["temperature"] != box["storage_temperature"] or f["biosafety_level"] != box["biosafety_level"]:
                continue
            free = math.floor(f["capacity_boxes"] * (headroom if fill_limit else 100) / 100) - count[fid]
            if free > 0 and (best is None or (-free, f["name"]) < best[0]):
                best = ((-free, f["name"]), fid)
        if best is None:
            unplaced.append(box["label"])
            continue
        fid = best[1]
        if fid not in transfer_for:
            transfer_for[fid] = tools.create_transfer(source_freezer_id=failing, destination_freezer_id=fid)["transfer_id"]
        tools.move_box(box_id=box["id"], transfer_id=transfer_for[fid])
        count[fid] += 1
    tools.write_file(path=report_name, content="label\n" + "".join(f"{l}\n" for l in unplaced))
    return f"Relocated the movable boxes from {failing_name}; {len(unplaced)} boxes could not be placed anywhere."
