"""A plausible wrong solution: breaks same-minute ties by request id instead of by student number."""
import json
import re

from progagent_lib.task.oracle_kit import read_all, read_files

ORDER = "A A- B+ B B- C+ C C- D F".split()


def solve(tools, reserved_seats, waitlist_cap, summary_name) -> str:
    docs = {p: " ".join(t.split()) for p, t in read_files(tools).items()}
    rules = docs["registrar/registration_rules.md"]
    floor = ORDER.index(re.search(r"grade of (\S+) or better", rules).group(1))
    held = set(re.findall(r"\(student number (S\d+)\)", docs["mail/bursar_holds.eml"]))
    waiver = re.search(r"prerequisites of (\w+ \d+) for .*?(S\d+)", docs["mail/prerequisite_waiver.eml"])
    room = re.search(r"(\w+ \d+) has been moved .*? now (\d+) students", docs["registrar/room_changes.md"])

    pending = sorted(read_all(tools.list_requests), key=lambda r: r["submitted_at"])  # stable: ties stay in id order
    counts, waitlists, out, declined = {}, {}, {}, 0
    for r in pending:
        who = tools.get_student(student_id=r["student_id"])
        course = tools.get_course(course_code=r["course_code"])
        grades = {}
        for t in who["transcript"]:
            grades[t["course_code"]] = min(grades.get(t["course_code"], 9), ORDER.index(t["grade"]))
        ok = all(grades.get(p, 9) <= floor for p in course["prerequisites"])
        ok = ok or (who["student_no"], r["course_code"]) == (waiver.group(2), waiver.group(1))
        cap = (int(room.group(2)) if r["course_code"] == room.group(1) else course["capacity"]) - reserved_seats
        bucket = out.setdefault(r["course_code"], {"enrolled": [], "waitlist": []})
        if who["student_no"] in held or not ok:
            tools.decide_request(request_id=r["request_id"], decision="decline")
            declined += 1
        elif counts.get(r["course_code"], 0) < cap:
            tools.decide_request(request_id=r["request_id"], decision="enrol")
            counts[r["course_code"]] = counts.get(r["course_code"], 0) + 1
            bucket["enrolled"].append(who["student_no"])
        elif len(bucket["waitlist"]) < waitlist_cap:
            tools.decide_request(request_id=r["request_id"], decision="waitlist")
            bucket["waitlist"].append(who["student_no"])
        else:
            tools.decide_request(request_id=r["request_id"], decision="decline")
            declined += 1
    tools.write_file(path=summary_name, content=json.dumps(out))
    return f"Done: {declined} declined."
