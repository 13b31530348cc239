import datetime as dt
import re

from progagent_lib.task.oracle_kit import read_all, read_files


def solve(tools, baseline, report_name, skip_invalid_readings=True) -> str:
    texts = read_files(tools)
    trial, bad = None, None
    for text in texts.values():
        if "# SPC procedure" in text:
            a2 = float(re.search(r"\| A2 \| ([\d.]+) \|", text).group(1))
            d4 = float(re.search(r"\| D4 \| ([\d.]+) \|", text).group(1))
            run_len = int(re.search(r"subgroup is the (\d+)th or later", text).group(1))
        m = re.search(r"Gauge (\S+) was found out of calibration\. Every reading it took on (\d+ \w+ \d{4}) from (\d\d):00 until (\d\d):00", text)
        if m:
            day = dt.datetime.strptime(m.group(2), "%d %B %Y").date().isoformat()
            bad = (m.group(1), day, int(m.group(3)), int(m.group(4)))
        m = re.search(r"^(CH-\d+) \(.*?\) is running an approved process trial", text, flags=re.M)
        if m:
            trial = m.group(1)

    rows, held, per_char = [], set(), {}
    for ch in read_all(tools.list_characteristics):
        if ch["code"] == trial:
            continue
        groups = read_all(tools.list_subgroups, characteristic_id=ch["id"])
        base = groups[:baseline]
        center = sum(sum(g["readings"]) / len(g["readings"]) for g in base) / len(base)
        rbar = sum(max(g["readings"]) - min(g["readings"]) for g in base) / len(base)
        ucl, lcl, ucl_r = center + a2 * rbar, center - a2 * rbar, d4 * rbar
        side, run = 0, 0
        for g in groups[baseline:]:
            invalid = bad and g["gauge"] == bad[0] and g["measured_at"][:10] == bad[1] \
                and bad[2] <= int(g["measured_at"][11:13]) < bad[3]
            if skip_invalid_readings and invalid:
                continue
            xbar = sum(g["readings"]) / len(g["readings"])
            s = (xbar > center) - (xbar < center)
            run = run + 1 if s == side and s else (1 if s else 0)
            side = s
            rule = ("beyond_limits" if not lcl <= xbar <= ucl else "range" if max(g["readings"]) - min(g["readings"]) > ucl_r
                    else "run" if run >= run_len else None)
            if rule is None:
                continue
            ncr = tools.raise_ncr(characteristic_id=ch["id"], subgroup_seq=g["seq"], rule=rule)
            if g["batch_no"] not in held:
                tools.hold_batch(ncr_id=ncr["ncr_id"], batch_no=g["batch_no"])
                held.add(g["batch_no"])
            per_char[ch["code"]] = per_char.get(ch["code"], 0) + 1
            rows.append(f"{ch['code']},{g['seq']},{rule}")
    tools.write_file(path=report_name, content="characteristic,subgroup,rule\n" + "\n".join(rows) + "\n")
    top = min(per_char.items(), key=lambda kv: (-kv[1], kv[0]))
    return f"I found {len(rows)} out-of-control subgroups; {top[0]} had the most ({top[1]}). {len(held)} batches are on hold."
