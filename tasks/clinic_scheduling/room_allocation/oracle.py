import datetime as dt
import json
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, last_day, report_name, follow_equipment_moves=True) -> str:
    texts = read_files(tools)
    needs, closures, moves, step_free = {}, [], [], set()
    for text in texts.values():
        if "# Room allocation guide" in text:
            for kind, kit in re.findall(r"^- ([\w ]+?) (?:clinics |reviews )?needs? an? ([\w ]+?);", text, flags=re.M):
                needs[kind.strip()] = kit.strip()
            staff = int(re.search(r"expected attendees plus (\d+) staff", text).group(1))
        m = re.search(r"Subject: (\S+) out of service\n\n.*? on \w+ (\d+ \w+) and \w+ (\d+ \w+)\.", text, flags=re.S)
        if m:
            closures.append((m.group(1), {dt.datetime.strptime(f"{d} 2026", "%d %B %Y").date().isoformat() for d in m.groups()[1:]}))
        m = re.search(r"ultrasound normally kept in (\S+) will be in (\S+) \(", text)
        if m and follow_equipment_moves:
            moves.append(m.groups())
        step_free |= {int(x) for x in re.findall(r"Session (\d+) \([^)]*\): several attendees use wheelchairs", text)}
    # The guide names the clinic types loosely ("antenatal clinics", "cardiac reviews"): map by first word.
    kit_for = {k.split()[0]: v for k, v in needs.items()}

    rooms = {}
    for site in ("Northgate", "Riverside"):
        for r in read_all(tools.list_rooms, site=site):
            r["kit"] = set(filter(None, r["equipment"].split(", ")))
            rooms[r["id"]] = r
    by_name = {r["name"]: r for r in rooms.values()}
    for src, dst in moves:
        by_name[src]["kit"].discard("ultrasound")
        by_name[dst]["kit"].add("ultrasound")
    sessions = sorted(read_all(tools.list_sessions), key=lambda s: (s["day"], s["start"], s["id"]))
    # Next week runs Monday to Friday: keep the days up to the requested last day.
    monday = dt.date.fromisoformat(sessions[0]["day"]) - dt.timedelta(days=dt.date.fromisoformat(sessions[0]["day"]).weekday())
    last = (monday + dt.timedelta(days=["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"].index(last_day))).isoformat()
    sessions = [s for s in sessions if s["day"] <= last]
    busy = {}
    for day in sorted({s["day"] for s in sessions}):
        busy[day] = [(b["room_id"], b["start"], b["end"]) for b in read_all(tools.list_bookings, day=day)]

    plan, uses = [], {}
    for s in sessions:
        want = kit_for.get(s["clinic_type"].split()[0])
        fits = [r for r in rooms.values() if r["site"] == s["site"] and (not want or want in r["kit"])
                and r["capacity"] >= s["expected_attendees"] + staff and (r["step_free"] or s["id"] not in step_free)
                and not any(r["name"] == name and s["day"] in days for name, days in closures)
                and not any(rid == r["id"] and a < s["end"] and s["start"] < b for rid, a, b in busy[s["day"]])]
        if not fits:
            tools.flag_session(session_id=s["id"], note="cannot be given a suitable room")
            plan.append({"session_id": s["id"], "room": None, "status": "flagged"})
            continue
        room = min(fits, key=lambda r: (r["capacity"], r["id"]))
        booking = tools.book_room(session_id=s["id"], room_id=room["id"])
        tools.confirm_booking(booking_id=booking["booking_id"])
        busy[s["day"]].append((room["id"], s["start"], s["end"]))
        uses[room["name"]] = uses.get(room["name"], 0) + 1
        plan.append({"session_id": s["id"], "room": room["name"], "status": "allocated"})
    tools.write_file(path=report_name, content=json.dumps(plan, indent=2))
    flagged = sum(1 for p in plan if p["status"] == "flagged")
    top = min(uses.items(), key=lambda kv: (-kv[1], kv[0]))
    return f"{flagged} sessions had to be flagged for manual handling. The most used room is {top[0]} ({top[1]} sessions)."
