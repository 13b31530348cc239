import json
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, excluded_depot, report_name, winter_minimum=True) -> str:
    words = " ".join("\n".join(read_files(tools).values()).split())
    legal = float(re.search(r"legal minimum tread depth is ([\d.]+) mm", words).group(1))
    thresholds = {kind: float(mm) for mm, kind in
                  re.findall(r"([\d.]+) mm for (car|van|minibus|truck)e?s", words)}
    winter = re.search(r"vehicles based at (.+?) depot run winter tyres", words).group(1)
    winter_min = float(re.search(r"lose their grip below ([\d.]+) mm", words).group(1))
    budget = float(re.search(r"budget for December is GBP ([\d,]+)", words).group(1).replace(",", ""))

    latest: dict[int, dict[str, float]] = {}
    for r in read_all(tools.list_inspections):  # oldest first, so later readings overwrite earlier ones
        latest.setdefault(r["vehicle_id"], {})[r["position"]] = r["tread_mm"]
    prices = {}
    mandatory, optional = [], []
    for v in read_all(tools.list_vehicles):
        if v["depot"] == excluded_depot:
            continue
        season = "winter" if v["depot"] == winter else "all-season"
        limit = thresholds[v["type"]]
        if season == "winter" and winter_minimum:
            limit = max(limit, winter_min)
        tread = latest.get(v["id"], {})
        axles = {pos[0] for pos, mm in tread.items() if mm < limit}
        if not axles:
            continue
        if (v["type"], season) not in prices:
            prices[(v["type"], season)] = tools.get_tyre_price(vehicle_type=v["type"], season=season)["unit_price"]
        positions = sorted(p for p in tread if p[0] in axles)
        item = {"reg": v["reg"], "positions": positions, "cost": round(len(positions) * prices[(v["type"], season)], 2)}
        (mandatory if min(tread.values()) < legal else optional).append((min(tread.values()), v["reg"], item))
    chosen = [m[2] for m in mandatory]
    left = budget - sum(i["cost"] for i in chosen)
    deferred = []
    for _, reg, item in sorted(optional, key=lambda t: (t[0], t[1])):
        if item["cost"] <= left + 1e-9:
            chosen.append(item)
            left -= item["cost"]
        else:
            deferred.append(reg)
    total = round(sum(i["cost"] for i in chosen), 2)
    tools.write_file(path=report_name, content=json.dumps(
        {"vehicles": chosen, "total_cost": total, "deferred": deferred}, indent=2))
    return f"The December tyre plan costs {total:.2f} in total, and {len(deferred)} vehicles were deferred."
