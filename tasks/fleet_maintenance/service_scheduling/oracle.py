import json
import re
from datetime import date

from progagent_lib.task.oracle_kit import read_all, read_files


def months_later(day, months):
    years, month = divmod(day.month - 1 + months, 12)
    return date(day.year + years, month + 1, min(day.day, 28))


def solve(tools, plan_date, lookahead_km, report_name, recalls_at_handback=True) -> str:
    today = date.fromisoformat(plan_date)
    texts = read_files(tools)
    schedule = next(t for t in texts.values() if "maintenance schedule" in t)
    intervals = {code: (int(dist.replace(",", "")), int(months))
                 for code, dist, months in re.findall(r"\(job code (\w+)\): every ([\d,]+) km or every (\d+) months", schedule)}
    handback = None
    recalls = []
    for text in texts.values():
        back = re.search(r"every vehicle based at (\w+) goes back", text)
        if back:
            handback = back.group(1)
        ref = re.search(r"reference (RC-\d\d-\d{3})", text)
        scope = re.search(r"(\S+) has \w+ .*? on (.+?) vehicles of model years (\d{4}) to (\d{4})", text, re.S)
        if ref and scope:
            recalls.append((ref.group(1), scope.group(1), scope.group(2), int(scope.group(3)), int(scope.group(4))))

    latest, done = {}, set()
    for h in read_all(tools.list_service_history):
        key = (h["vehicle_id"], h["job_code"])
        done.add(key)
        if key not in latest or h["service_date"] > latest[key]["service_date"]:
            latest[key] = h
    open_orders = {o["vehicle_id"]: o["id"] for o in read_all(tools.list_work_orders, status="open")}

    plan, recall_jobs = [], 0
    for v in read_all(tools.list_vehicles):
        if v["status"] != "active" or (v["depot"] == handback and not recalls_at_handback):
            continue
        jobs = []
        if v["depot"] != handback:
            for code, (dist, months) in intervals.items():
                last = latest.get((v["id"], code))
                if (last is None or v["odometer_km"] - last["odometer_km"] >= dist - lookahead_km
                        or today >= months_later(date.fromisoformat(last["service_date"]), months)):
                    jobs.append(code)
        for code, make, model, first, last_year in recalls:
            if v["make"] == make and v["model"] == model and first <= v["model_year"] <= last_year and (v["id"], code) not in done:
                jobs.append(code)
                recall_jobs += 1
        if not jobs:
            continue
        order_id = open_orders.get(v["id"]) or tools.create_work_order(vehicle_id=v["id"])["work_order_id"]
        for code in jobs:
            tools.add_work_order_job(work_order_id=order_id, job_code=code)
        plan.append({"unit": v["unit_number"], "jobs": jobs})
    tools.write_file(path=report_name, content=json.dumps(plan, indent=2))
    return f"{len(plan)} vehicles need work; I added {recall_jobs} recall jobs."
