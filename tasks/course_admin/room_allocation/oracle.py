import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, spare_seats, closed_building, timetable_name, honour_access_request=True) -> str:
    closed, capacity_fix, ground_only = set(), {}, set()
    for path, text in read_files(tools).items():
        flat = " ".join(text.split())
        closed |= set(re.findall(r"Room (\w+) is closed all next term", flat))
        capacity_fix.update({room: int(n) for room, n in re.findall(r"room (\w+) may hold at most (\d+) people", flat)})
        if "cannot manage stairs" in flat and honour_access_request:
            sender = re.search(r"From: ([\w.]+)@", flat).group(1)
            ground_only.add(sender)

    rooms = [r for r in read_all(tools.list_rooms) if r["code"] not in closed and r["building"] != closed_building]
    for r in rooms:
        r["capacity"] = capacity_fix.get(r["code"], r["capacity"])
    sections = read_all(tools.list_sections)
    booked, rows, unplaced = set(), [], 0
    for s in sorted(sections, key=lambda s: (-s["enrolment"], s["code"])):
        needs = [f for f in s["needs"].split(",") if f]
        ground = s["lecturer"].lower().replace(" ", ".") in ground_only
        options = [r for r in rooms if r["capacity"] >= s["enrolment"] + spare_seats and (s["slot"], r["code"]) not in booked
                   and all(f in r["features"].split(",") for f in needs) and (not ground or r["floor"] == 0)]
        if options:
            room = min(options, key=lambda r: (r["capacity"], r["code"]))["code"]
            tools.assign_room(section_code=s["code"], room_code=room)
            booked.add((s["slot"], room))
        else:
            room = "UNPLACED"
            tools.mark_unplaced(section_code=s["code"])
            unplaced += 1
        rows.append(f"{s['code']},{s['slot']},{room}")
    tools.publish_timetable()
    tools.write_file(path=timetable_name, content="section,slot,room\n" + "\n".join(rows) + "\n")
    return f"The timetable is published. {unplaced} sections could not be placed and need manual attention."
