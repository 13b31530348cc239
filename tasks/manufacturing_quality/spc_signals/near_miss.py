"""A plausible wrong solution: ignores the calibration notice, so the invalid readings raise a false signal."""
import re

from progagent_lib.task.oracle_kit import read_all


def solve(tools, baseline, report_name) -> str:
    proc = tools.read_file(path="quality/spc_procedure.md")
    trial_note = tools.read_file(path="logs/engineering_trial.txt")
    n_base = baseline
    a2, d4 = (float(re.search(rf"\| {k} \| ([\d.]+)", proc).group(1)) for k in ("A2", "D4"))
    need = int(re.search(r"is the (\d+)th", proc).group(1))
    skip = re.search(r"(CH-\d+)", trial_note).group(1)
    out, holds, tally = [], set(), {}
    for c in read_all(tools.list_characteristics):
        if c["code"] == skip:
            continue
        sg = read_all(tools.list_subgroups, characteristic_id=c["id"])
        means = [sum(g["readings"]) / 5 for g in sg]
        ranges = [max(g["readings"]) - min(g["readings"]) for g in sg]
        cl, rb = sum(means[:n_base]) / n_base, sum(ranges[:n_base]) / n_base
        streak, last = 0, 0
        for g, m, r in list(zip(sg, means, ranges))[n_base:]:
            side = 1 if m > cl else -1 if m < cl else 0
            streak = streak + 1 if side and side == last else int(bool(side))
            last = side
            why = "beyond_limits" if abs(m - cl) > a2 * rb else "range" if r > d4 * rb else "run" if streak >= need else ""
            if why:
                nid = tools.raise_ncr(characteristic_id=c["id"], subgroup_seq=g["seq"], rule=why)["ncr_id"]
                if g["batch_no"] not in holds:
                    tools.hold_batch(ncr_id=nid, batch_no=g["batch_no"])
                    holds.add(g["batch_no"])
                tally[c["code"]] = tally.get(c["code"], 0) + 1
                out.append(f"{c['code']},{g['seq']},{why}")
    tools.write_file(path=report_name, content="characteristic,subgroup,rule\n" + "\n".join(out) + "\n")
    return f"{len(out)} signals; most on {max(tally, key=tally.get)}."
