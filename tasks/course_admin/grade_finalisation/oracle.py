import datetime as dt
import json
import math
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, exam_uplift, max_late_penalty, report_name, started_periods=True) -> str:
    regs, extensions, excused = {}, {}, set()
    for text in read_files(tools).values():
        flat = " ".join(text.split())
        m = re.search(r"loses (\d+) marks \(out of 100\) for every started period of 24 hours", flat)
        if m:
            regs["penalty"] = int(m.group(1))
            regs["cutoff"] = int(re.search(r"more than (\d+) full days late", flat).group(1))
            regs["bounds"] = [(l, int(v)) for l, v in re.findall(r"\b([ABCD]) from (\d+)", flat)]
        m = re.search(r"\((\w+)\) an extension on the (.+?) for (\w+): the new deadline\s+is (\d+ \w+ \d{4} at \d+:\d+)", flat)
        if m:
            extensions[(m.group(1), m.group(3), m.group(2))] = dt.datetime.strptime(m.group(4), "%d %B %Y at %H:%M")
        m = re.search(r"\((\w+)\)\. The (.+?) in (\w+) is\s+excused", flat)
        if m:
            excused.add((m.group(1), m.group(3), m.group(2)))

    distribution, fails = {}, 0
    for course in read_all(tools.list_courses):
        code = course["code"]
        scheme = tools.get_assessment_scheme(course_code=code)
        subs = {(s["student_id"], s["component"]): s for s in read_all(tools.list_submissions, course_code=code)}
        counts = distribution.setdefault(code, {})
        for student in read_all(tools.list_roster, course_code=code):
            total = weights = 0.0
            for part in scheme:
                key = (student["student_no"], code, part["name"])
                if key in excused:
                    continue
                weights += part["weight"]
                sub = subs.get((student["student_id"], part["name"]))
                if sub is None:
                    continue
                deadline = extensions.get(key, dt.datetime.fromisoformat(part["due_at"]))
                handed_in = dt.datetime.fromisoformat(sub["submitted_at"])
                late_hours = (handed_in - deadline).total_seconds() / 3600
                # Started 24-hour periods after the deadline (not calendar days: 25 hours late from 14:00 is two).
                periods = math.ceil(late_hours / 24) if started_periods else (handed_in.date() - deadline.date()).days
                mark = sub["raw_score"]
                if part["name"] == "Final exam":
                    mark = min(100.0, mark + exam_uplift)
                if late_hours > regs["cutoff"] * 24:
                    mark = 0.0
                elif late_hours > 0:
                    mark = max(0.0, mark - min(max_late_penalty, regs["penalty"] * periods))
                total += part["weight"] * mark
            final = round(total / weights + 1e-9, 1)  # one decimal place, halves up
            letter = next((l for l, bound in regs["bounds"] if final >= bound), "F")
            tools.record_final_grade(course_code=code, student_id=student["student_id"], final_mark=final, letter=letter)
            counts[letter] = counts.get(letter, 0) + 1
            fails += letter == "F"
    tools.write_file(path=report_name, content=json.dumps(distribution, indent=2, sort_keys=True))
    return f"All final grades are recorded. There are {fails} fails across all courses."
