import math
import re
from datetime import datetime

from progagent_lib.task.oracle_kit import read_all, read_files


def p_value(conv_a, n_a, conv_b, n_b):
    pooled = (conv_a + conv_b) / (n_a + n_b)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n_a + 1 / n_b))
    z = (conv_b / n_b - conv_a / n_a) / se
    return math.erfc(abs(z) / math.sqrt(2))


def solve(tools, held_out, report_name, relative_lift=True) -> str:
    texts = read_files(tools)
    plan = next(t for t in texts.values() if "analysis plan" in t.lower() and "z-test" in t)
    alpha = float(re.search(r"p-value is below (0\.\d+)", plan).group(1))
    guardrail = float(re.search(r"more than (\d+)% below", plan).group(1)) / 100
    log = next(t for t in texts.values() if t.startswith("# Analytics incident log"))
    bad_days = {(key, datetime.strptime(day, "%d %B %Y").date().isoformat())
                for day, key in re.findall(r"- (\d{1,2} \w+ \d{4}): tracking for (EXP-\d+)", log)}

    rows, ships = [], 0
    for e in read_all(tools.list_experiments, status="completed"):
        if not e["end_date"].startswith("2026-11") or e["key"] == held_out:
            continue
        arms = {v["id"]: v for v in tools.list_variants(experiment_id=e["id"])}
        totals = {vid: [0, 0, 0.0] for vid in arms}
        for r in read_all(tools.list_daily_results, experiment_id=e["id"]):
            if (e["key"], r["day"]) not in bad_days:
                t = totals[r["variant_id"]]
                t[0], t[1], t[2] = t[0] + r["visitors"], t[1] + r["conversions"], t[2] + r["revenue"]
        control = next(v for v in arms.values() if v["is_control"])["id"]
        cn, cc, crev = totals[control]
        treatments = [v for v in arms if v != control]
        results = []
        for v in treatments:
            n, c, rev = totals[v]
            lift = (c / n - cc / cn) / (cc / cn if relative_lift else 1) * 100
            p = p_value(cc, cn, c, n)
            eligible = p < alpha / len(treatments) and lift > 0 and rev / n >= crev / cn * (1 - guardrail)
            results.append((eligible, lift, p, v))
        winners = [r for r in results if r[0]]
        _, lift, p, v = max(winners or results, key=lambda r: r[1])
        if winners:
            tools.record_decision(experiment_id=e["id"], decision="ship", variant_id=v)
            ships += 1
            rows.append(f"| {e['key']} | ship | {arms[v]['name']} | {lift:.1f} | {p:.3f} |")
        else:
            tools.record_decision(experiment_id=e["id"], decision="keep_control")
            rows.append(f"| {e['key']} | keep_control |  | {lift:.1f} | {p:.3f} |")
    columns = "experiment | decision | variant | lift_pct | p_value".split(" | ")  # the columns the request names
    report = "| " + " | ".join(columns) + " |\n" + "|---" * len(columns) + "|\n" + "\n".join(rows) + "\n"
    tools.write_file(path=report_name, content=report)
    return f"{ships} of the {len(rows)} November tests have a variant to ship."
