"""A plausible wrong solution: looks only at the normal company thresholds and forgets the winter
minimum at the winter depot (it still prices winter tyres there)."""
import json
import re

from progagent_lib.task.oracle_kit import read_all


def solve(tools, excluded_depot, report_name) -> str:
    policy = " ".join(tools.read_file(path="policy/tyre_policy.md").split())
    budget_mail = tools.read_file(path="mail/2026-11-27_december_budget.eml")
    winter_mail = tools.read_file(path="mail/2026-11-24_winter_tyres.eml")
    limits = {k: float(v) for v, k in re.findall(r"([\d.]+) mm for (car|van|minibus|truck)", policy)}
    winter_depot = re.search(r"based at (\w[\w ]*?) depot", winter_mail).group(1)
    budget = float(re.search(r"GBP ([\d,]+)", budget_mail).group(1).replace(",", ""))
    tread = {}
    for r in read_all(tools.list_inspections):
        tread.setdefault(r["vehicle_id"], {})[r["position"]] = r["tread_mm"]
    musts, others = [], []
    for v in read_all(tools.list_vehicles):
        if v["depot"] == excluded_depot:
            continue
        t = tread.get(v["id"], {})
        bad = {p[0] for p, mm in t.items() if mm < limits[v["type"]]}
        if not bad:
            continue
        unit = tools.get_tyre_price(vehicle_type=v["type"], season="winter" if v["depot"] == winter_depot else "all-season")["unit_price"]
        pos = sorted(p for p in t if p[0] in bad)
        row = {"reg": v["reg"], "positions": pos, "cost": round(unit * len(pos), 2)}
        (musts if min(t.values()) < 1.6 else others).append((min(t.values()), v["reg"], row))
    plan = [m[2] for m in musts]
    left, deferred = budget - sum(p["cost"] for p in plan), []
    for _, reg, row in sorted(others, key=lambda x: (x[0], x[1])):
        if row["cost"] <= left:
            plan.append(row)
            left -= row["cost"]
        else:
            deferred.append(reg)
    total = round(sum(p["cost"] for p in plan), 2)
    tools.write_file(path=report_name, content=json.dumps({"vehicles": plan, "total_cost": total, "deferred": deferred}))
    return f"Plan total {total:.2f}; {len(deferred)} vehicles deferred."
