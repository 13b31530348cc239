"""A plausible wrong solution: schedules everything without reading the speakers' mail, so withdrawn
sessions stay on the programme and availability requests are ignored; clashes and rooms are handled."""
from progagent_lib.task.oracle_kit import read_all


def solve(tools, closed_room, sponsor_slot, timetable_name) -> str:
    sessions = read_all(tools.list_sessions)
    rooms = sorted((r for r in read_all(tools.list_rooms) if r["name"] != closed_room), key=lambda r: r["capacity"])
    slots = [s for s in tools.list_slots() if f"day {s['day']} at {s['start']}" != sponsor_slot]
    used = {}
    keynote = next(s for s in sessions if s["code"] == "KN-1")
    hall = next(r for r in rooms if r["name"] == "Main Hall")
    tools.schedule_session(session_id=keynote["id"], room_id=hall["id"], slot_id=slots[0]["id"])
    lines = [f"KN-1,{slots[0]['day']},{slots[0]['start']},Main Hall"]
    for s in sorted((s for s in sessions if s is not keynote), key=lambda s: -s["expected_attendance"]):
        for slot in slots[1:]:
            here = used.setdefault(slot["id"], [])
            if any(o["track"] == s["track"] or set(o["speaker_ids"]) & set(s["speaker_ids"]) for o, _ in here):
                continue
            free = [r for r in rooms if all(r["id"] != rr for _, rr in here) and r["capacity"] >= s["expected_attendance"]
                    and (s["format"] != "workshop" or r["lab_equipped"])]
            if free:
                tools.schedule_session(session_id=s["id"], room_id=free[0]["id"], slot_id=slot["id"])
                here.append((s, free[0]["id"]))
                lines.append(f"{s['code']},{slot['day']},{slot['start']},{free[0]['name']}")
                break
    tools.write_file(path=timetable_name, content="session_code,day,start,room\n" + "\n".join(lines))
    return f"{len(lines)} sessions scheduled."
