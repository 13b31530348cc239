"""A plausible wrong solution: trusts the room list for equipment, missing that the portable ultrasound moved."""
import json
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, last_day, report_name) -> str:
    guide = tools.read_file(path="guides/room_allocation_guide.md")
    extra = int(re.search(r"plus (\d+) staff", guide).group(1))
    kit = {"antenatal": "ultrasound", "minor": "sterile trolley", "cardiac": "ECG"}
    shut, wheel = {}, set()
    for t in read_files(tools, "estates/*").values():
        m = re.search(r"Subject: (\S+) out of service", t)
        if m:
            shut[m.group(1)] = re.findall(r"\w+day (\d+) December", t)
    for t in read_files(tools, "session_notes/*").values():
        wheel |= {int(x) for x in re.findall(r"Session (\d+) [^\n]*wheelchairs", t)}
    rooms = [r for site in ("Northgate", "Riverside") for r in read_all(tools.list_rooms, site=site)]
    todo = sorted(read_all(tools.list_sessions), key=lambda s: (s["day"], s["start"], s["id"]))
    cutoff = 7 + ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"].index(last_day)  # next week starts Monday 7 December
    todo = [s for s in todo if int(s["day"][8:]) <= cutoff]
    booked = {d: [(b["room_id"], b["start"], b["end"]) for b in read_all(tools.list_bookings, day=d)] for d in {s["day"] for s in todo}}
    out, count = [], {}
    for s in todo:
        need = kit.get(s["clinic_type"].split()[0])
        ok = [r for r in rooms if r["site"] == s["site"] and (need is None or need in r["equipment"])
              and r["capacity"] >= s["expected_attendees"] + extra and (r["step_free"] or s["id"] not in wheel)
              and str(int(s["day"][8:])) not in shut.get(r["name"], [])
              and all(not (rid == r["id"] and a < s["end"] and s["start"] < b) for rid, a, b in booked[s["day"]])]
        if ok:
            r = min(ok, key=lambda r: (r["capacity"], r["id"]))
            bid = tools.book_room(session_id=s["id"], room_id=r["id"])["booking_id"]
            tools.confirm_booking(booking_id=bid)
            booked[s["day"]].append((r["id"], s["start"], s["end"]))
            count[r["name"]] = count.get(r["name"], 0) + 1
            out.append({"session_id": s["id"], "room": r["name"], "status": "allocated"})
        else:
            tools.flag_session(session_id=s["id"], note="nothing suitable")
            out.append({"session_id": s["id"], "room": None, "status": "flagged"})
    tools.write_file(path=report_name, content=json.dumps(out))
    return f"{sum(o['room'] is None for o in out)} flagged; busiest room {max(count, key=count.get)}."
