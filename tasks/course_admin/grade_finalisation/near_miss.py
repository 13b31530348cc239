"""A plausible wrong solution: counts days late by calendar date instead of started 24-hour periods."""
import datetime as dt
import json
import re

from progagent_lib.task.oracle_kit import read_all


def solve(tools, exam_uplift, max_late_penalty, report_name) -> str:
    regs = " ".join(tools.read_file(path="regulations/assessment_regulations.md").split())
    per_day = int(re.search(r"loses (\d+) marks", regs).group(1))
    max_days = int(re.search(r"more than (\d+) full days", regs).group(1))
    grade_floor = [(l, int(v)) for l, v in re.findall(r"\b([ABCD]) from (\d+)", regs)]
    ext = " ".join(tools.read_file(path="office_mail/extension_granted.eml").split())
    e_no, e_piece, e_course, e_when = re.search(r"\((\w+)\) an extension on the (.+?) for (\w+): the new deadline is (.+?)\. ", ext).groups()
    e_when = dt.datetime.strptime(e_when, "%d %B %Y at %H:%M")
    exc = " ".join(tools.read_file(path="office_mail/special_consideration.eml").split())
    x_no, x_piece, x_course = re.search(r"\((\w+)\)\. The (.+?) in (\w+) is excused", exc).groups()

    out, fails = {}, 0
    for course in read_all(tools.list_courses):
        code = course["code"]
        parts = tools.get_assessment_scheme(course_code=code)
        marks = {}
        for s in read_all(tools.list_submissions, course_code=code):
            marks[(s["student_id"], s["component"])] = s
        for st in read_all(tools.list_roster, course_code=code):
            num = den = 0.0
            for p in parts:
                if (st["student_no"], p["name"], code) == (x_no, x_piece, x_course):
                    continue
                den += p["weight"]
                s = marks.get((st["student_id"], p["name"]))
                if not s:
                    continue
                due = dt.datetime.fromisoformat(p["due_at"])
                if (st["student_no"], p["name"], code) == (e_no, e_piece, e_course):
                    due = e_when
                handed = dt.datetime.fromisoformat(s["submitted_at"])
                days = (handed.date() - due.date()).days if handed > due else 0
                raw = min(100.0, s["raw_score"] + exam_uplift) if p["name"] == "Final exam" else s["raw_score"]
                score = 0.0 if days > max_days else max(0.0, raw - min(max_late_penalty, per_day * days))
                num += p["weight"] * score
            final = int(num / den * 10 + 0.5) / 10
            letter = next((l for l, b in grade_floor if final >= b), "F")
            tools.record_final_grade(course_code=code, student_id=st["student_id"], final_mark=final, letter=letter)
            out.setdefault(code, {}).setdefault(letter, 0)
            out[code][letter] += 1
            fails += letter == "F"
    tools.write_file(path=report_name, content=json.dumps(out))
    return f"{fails} fails."
