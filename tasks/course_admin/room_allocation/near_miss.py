"""A plausible wrong solution: follows the procedure and estates notices but overlooks the ground-floor request."""
import re

from progagent_lib.task.oracle_kit import read_all


def solve(tools, spare_seats, closed_building, timetable_name) -> str:
    notice = " ".join(tools.read_file(path="estates/building_notice.md").split())
    shut = re.search(r"Room (\w+) is closed", notice).group(1)
    reduced_room, reduced_to = re.search(r"room (\w+) may hold at most (\d+)", notice).groups()
    rooms = []
    for r in read_all(tools.list_rooms):
        if r["code"] == shut or r["building"] == closed_building:
            continue
        if r["code"] == reduced_room:
            r["capacity"] = int(reduced_to)
        rooms.append(r)
    queue = sorted(read_all(tools.list_sections), key=lambda s: (-s["enrolment"], s["code"]))
    used, table, missing = set(), ["section,slot,room"], 0
    for s in queue:
        wanted = set(filter(None, s["needs"].split(",")))
        fit = sorted((r for r in rooms if r["capacity"] >= s["enrolment"] + spare_seats and wanted <= set(r["features"].split(","))
                      and (s["slot"], r["code"]) not in used), key=lambda r: (r["capacity"], r["code"]))
        if fit:
            tools.assign_room(section_code=s["code"], room_code=fit[0]["code"])
            used.add((s["slot"], fit[0]["code"]))
            table.append(f"{s['code']},{s['slot']},{fit[0]['code']}")
        else:
            tools.mark_unplaced(section_code=s["code"])
            table.append(f"{s['code']},{s['slot']},UNPLACED")
            missing += 1
    tools.publish_timetable()
    tools.write_file(path=timetable_name, content="\n".join(table))
    return f"{missing} unplaced."
