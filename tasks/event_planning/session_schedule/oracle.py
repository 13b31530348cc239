import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, closed_room, sponsor_slot, timetable_name, read_mail=True) -> str:
    texts = read_files(tools)
    speakers = read_all(tools.list_speakers)
    sessions = read_all(tools.list_sessions)
    rooms = [r for r in read_all(tools.list_rooms) if r["name"] != closed_room]
    sponsor_day, sponsor_start = re.fullmatch(r"day (\d) at (\d\d:\d\d)", sponsor_slot).groups()
    every_slot = tools.list_slots()
    first_of_day = {d: min(s["start"] for s in every_slot if s["day"] == d) for d in {s["day"] for s in every_slot}}
    slots = [s for s in every_slot if (s["day"], s["start"]) != (int(sponsor_day), sponsor_start)]

    withdrawn, rules = set(), {}
    for text in texts.values() if read_mail else ():
        if "withdrawn" in text.lower() and "Subject: Withdrawn" in text:
            withdrawn |= set(re.findall(r"\b(S-\d+)\b", text))
        speaker = next((sp for sp in speakers if sp["name"] in text), None)
        if speaker is None:
            continue
        if "put my sessions on day 2" in text:
            rules[speaker["id"]] = lambda slot: slot["day"] == 2
        leave = re.search(r"leave the venue at (\d\d:\d\d) on day 1", text)
        if leave:
            rules[speaker["id"]] = lambda slot, t=leave.group(1): slot["day"] == 1 and slot["end_time"] <= t
        if "cannot do the first slot of either day" in text:
            rules[speaker["id"]] = lambda slot: slot["start"] != first_of_day[slot["day"]]

    opening = min(slots, key=lambda s: (s["day"], s["start"]))
    main_hall = next(r for r in rooms if r["name"] == "Main Hall")
    keynote = next(s for s in sessions if s["code"] == "KN-1")
    todo = [s for s in sessions if s["code"] not in withdrawn and s is not keynote]

    busy = {}   # slot id -> {"rooms", "speakers", "tracks"}
    placed = {}

    def book(session, room, slot):
        b = busy.setdefault(slot["id"], {"rooms": set(), "speakers": set(), "tracks": set()})
        b["rooms"].add(room["id"])
        b["speakers"] |= set(session["speaker_ids"])
        b["tracks"].add(session["track"])
        placed[session["id"]] = (room, slot)

    book(keynote, main_hall, opening)
    busy[opening["id"]]["rooms"] = {r["id"] for r in rooms}  # the keynote slot is exclusive

    def tightness(s):
        # Fewest possible slots first, then workshops (few labs), then the biggest and most-staffed sessions.
        options = sum(1 for slot in slots if slot is not opening and all(rules[sp](slot) for sp in s["speaker_ids"] if sp in rules))
        return (options, s["format"] != "workshop", -len(s["speaker_ids"]), -s["expected_attendance"], s["id"])

    for s in sorted(todo, key=tightness):
        for slot in slots:
            if any(not rules[sp](slot) for sp in s["speaker_ids"] if sp in rules):
                continue
            b = busy.get(slot["id"], {"rooms": set(), "speakers": set(), "tracks": set()})
            if s["track"] in b["tracks"] or b["speakers"] & set(s["speaker_ids"]):
                continue
            fitting = [r for r in rooms if r["id"] not in b["rooms"] and r["capacity"] >= s["expected_attendance"]
                       and (s["format"] != "workshop" or r["lab_equipped"])]
            if fitting:
                book(s, min(fitting, key=lambda r: (r["capacity"], r["id"])), slot)
                break
        else:
            raise RuntimeError(f"no room and slot left for {s['code']}")

    lines = ["session_code,day,start,room"]
    by_id = {s["id"]: s for s in sessions}
    for sid, (room, slot) in placed.items():
        tools.schedule_session(session_id=sid, room_id=room["id"], slot_id=slot["id"])
        lines.append(f"{by_id[sid]['code']},{slot['day']},{slot['start']},{room['name']}")
    tools.write_file(path=timetable_name, content="\n".join(lines) + "\n")
    return f"The timetable is done: {len(placed)} sessions are on the final programme."
