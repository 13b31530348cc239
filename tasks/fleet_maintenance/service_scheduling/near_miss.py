"""A plausible wrong solution: applies the depot hand-back to recalls as well, so recalls for
vehicles at that depot are never raised."""
import json
import re
from datetime import date

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, plan_date, lookahead_km, report_name) -> str:
    texts = read_files(tools)
    sched = next(t for t in texts.values() if "job code" in t)
    rules = re.findall(r"job code (\w+)\): every ([\d,]+) km or every (\d+) months", sched)
    skip_depot = next((m.group(1) for t in texts.values() for m in [re.search(r"based at (\w+) goes back", t)] if m), None)
    recalls = []
    for t in texts.values():
        m = re.search(r"reference (RC-\S+)\s+(\S+) has \w+ .*? on (.+?) vehicles of model years (\d{4}) to (\d{4})", t, re.S)
        if m:
            recalls.append(m.groups())
    history = {}
    for h in read_all(tools.list_service_history):
        key = (h["vehicle_id"], h["job_code"])
        if key not in history or h["service_date"] > history[key]["service_date"]:
            history[key] = h
    orders = {o["vehicle_id"]: o["id"] for o in read_all(tools.list_work_orders, status="open")}
    plan, n_recall = [], 0
    for v in read_all(tools.list_vehicles):
        if v["status"] != "active" or v["depot"] == skip_depot:
            continue
        jobs = []
        for code, km, months in rules:
            h = history.get((v["id"], code))
            if h is None or v["odometer_km"] - h["odometer_km"] >= int(km.replace(",", "")) - lookahead_km:
                jobs.append(code)
                continue
            d = date.fromisoformat(h["service_date"])
            y, m = divmod(d.month - 1 + int(months), 12)
            if date(d.year + y, m + 1, min(d.day, 28)) <= date.fromisoformat(plan_date):
                jobs.append(code)
        for code, make, model, a, b in recalls:
            if (v["make"], v["model"]) == (make, model) and int(a) <= v["model_year"] <= int(b) and (v["id"], code) not in history:
                jobs.append(code)
                n_recall += 1
        if jobs:
            wo = orders.get(v["id"]) or tools.create_work_order(vehicle_id=v["id"])["work_order_id"]
            for code in jobs:
                tools.add_work_order_job(work_order_id=wo, job_code=code)
            plan.append({"unit": v["unit_number"], "jobs": jobs})
    tools.write_file(path=report_name, content=json.dumps(plan))
    return f"Work orders cover {len(plan)} vehicles, including {n_recall} recall jobs."
