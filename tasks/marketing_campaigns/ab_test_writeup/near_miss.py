"""A plausible wrong solution: follows the plan (incident days, Bonferroni, guardrail) but reports the lift
in percentage points (treatment rate minus control rate) instead of relative to the control."""
import math
import re
from datetime import datetime

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, held_out, report_name) -> str:
    docs = read_files(tools, "analytics/*")
    plan = next(t for t in docs.values() if "z-test" in t)
    alpha = float(re.search(r"below (0\.\d+)", plan).group(1))
    guard = float(re.search(r"(\d+)% below", plan).group(1)) / 100
    incidents = next(t for t in docs.values() if t.startswith("# Analytics incident log"))
    skip = {(k, datetime.strptime(d, "%d %B %Y").strftime("%Y-%m-%d")) for d, k in re.findall(r"- (.+?): tracking for (EXP-\d+)", incidents)}
    lines, shipped = [], 0
    for e in read_all(tools.list_experiments, status="completed"):
        if e["end_date"][:7] != "2026-11" or e["key"] == held_out:
            continue
        arms = tools.list_variants(experiment_id=e["id"])
        agg = {a["id"]: [0, 0, 0.0] for a in arms}
        for r in read_all(tools.list_daily_results, experiment_id=e["id"]):
            if (e["key"], r["day"]) in skip:
                continue
            agg[r["variant_id"]][0] += r["visitors"]
            agg[r["variant_id"]][1] += r["conversions"]
            agg[r["variant_id"]][2] += r["revenue"]
        ctl = [a["id"] for a in arms if a["is_control"]][0]
        n0, c0, r0 = agg[ctl]
        k = len(arms) - 1
        best = None
        for a in arms:
            if a["is_control"]:
                continue
            n1, c1, r1 = agg[a["id"]]
            pool = (c0 + c1) / (n0 + n1)
            z = (c1 / n1 - c0 / n0) / math.sqrt(pool * (1 - pool) * (1 / n0 + 1 / n1))
            p = math.erfc(abs(z) / math.sqrt(2))
            points = (c1 / n1 - c0 / n0) * 100
            ok = p < alpha / k and points > 0 and r1 / n1 >= r0 / n0 * (1 - guard)
            if best is None or (ok, points) > (best[0], best[1]):
                best = (ok, points, p, a)
        ok, points, p, a = best
        tools.record_decision(experiment_id=e["id"], decision="ship" if ok else "keep_control", variant_id=a["id"] if ok else 0)
        shipped += ok
        lines.append(f"| {e['key']} | {'ship' if ok else 'keep_control'} | {a['name'] if ok else ''} | {points:.1f} | {p:.3f} |")
    tools.write_file(path=report_name, content="| experiment | decision | variant | lift_pct | p_value |\n|---|---|---|---|---|\n" + "\n".join(lines))
    return f"{shipped} tests have a winner."
