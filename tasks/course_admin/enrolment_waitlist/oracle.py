import json
import re

from progagent_lib.task.oracle_kit import read_all, read_files

SCALE = ["A", "A-", "B+", "B", "B-", "C+", "C", "C-", "D", "F"]


def solve(tools, reserved_seats, waitlist_cap, summary_name, ties_by_student_number=True) -> str:
    min_grade, holds, waivers, limits = None, set(), set(), {}
    for text in read_files(tools).values():
        flat = " ".join(text.split())
        m = re.search(r"with a grade of ([A-F][+-]?) or better", flat)
        if m:
            min_grade = m.group(1)
        if "registration hold" in flat:
            holds |= set(re.findall(r"student number (S\d+)", flat))
        m = re.search(r"waiving the prerequisites of ([A-Z]+ \d+) for .*?student number (S\d+)", flat)
        if m:
            waivers.add((m.group(2), m.group(1)))
        for code, seats in re.findall(r"([A-Z]+ \d+) has been moved to a smaller seminar room\. Its class limit is now (\d+)", flat):
            limits[code] = int(seats)

    courses = {}
    for c in read_all(tools.list_courses):
        courses[c["code"]] = tools.get_course(course_code=c["code"])
    students = {}
    requests = read_all(tools.list_requests)
    for r in requests:
        if r["student_id"] not in students:
            students[r["student_id"]] = tools.get_student(student_id=r["student_id"])

    def passed(student, course):
        cutoff = SCALE.index(min_grade)
        good = {t["course_code"] for t in student["transcript"] if SCALE.index(t["grade"]) <= cutoff}
        return all(p in good for p in course["prerequisites"])

    summary = {code: {"enrolled": [], "waitlist": []} for code in courses}
    declined = 0
    def turn(r):
        """Submission order; a same-minute tie goes to the lower student number."""
        return r["submitted_at"], students[r["student_id"]]["student_no"] if ties_by_student_number else r["request_id"]

    for r in sorted(requests, key=turn):
        student, course = students[r["student_id"]], courses[r["course_code"]]
        number = student["student_no"]
        seats = limits.get(r["course_code"], course["capacity"]) - reserved_seats
        entry = summary[r["course_code"]]
        if number in holds or not ((number, r["course_code"]) in waivers or passed(student, course)):
            tools.decide_request(request_id=r["request_id"], decision="decline")
            declined += 1
        elif len(entry["enrolled"]) < seats:
            tools.decide_request(request_id=r["request_id"], decision="enrol")
            entry["enrolled"].append(number)
        elif len(entry["waitlist"]) < waitlist_cap:
            tools.decide_request(request_id=r["request_id"], decision="waitlist")
            entry["waitlist"].append(number)
        else:
            tools.decide_request(request_id=r["request_id"], decision="decline")
            declined += 1
    tools.write_file(path=summary_name, content=json.dumps(summary, indent=2))
    return f"All {len(requests)} requests are decided; {declined} requests were declined in total."
