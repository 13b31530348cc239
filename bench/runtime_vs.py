"""The runtime's costs before and after a change, in one run: `bench/runtime.py` against two library trees.

    .venv/bin/python bench/runtime_vs.py --before REF [--rounds 2] [--repeats 7]
    .venv/bin/python bench/runtime_vs.py --quick      # HEAD against this tree, one round of runtime.py --quick

REF (a commit) is checked out in a temporary git worktree; the same benchmark script (this tree's
`bench/runtime.py`) then runs alternately against REF's `progagent_lib` and this tree's (PYTHONPATH),
`--rounds` times each, so that the machine's load weighs on both alike. Printed: the median of each
row per side and the ratio after / before (cold kernel start, pool acquire, a cell, the bridged tool
call and its overhead over an in-process call, an idle kernel's memory).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import polars as pl

REPO = Path(__file__).resolve().parents[1]


def run_side(tree: Path, args: argparse.Namespace, out: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, str(REPO / "bench" / "runtime.py"), "--repeats", str(args.repeats), "--cells",
               str(args.cells), "--calls", str(args.calls), "--json", str(out), *(["--quick"] if args.quick else [])]
    subprocess.run(command, env=env, cwd=tree, check=False, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def measures(report: dict) -> dict[str, float]:
    rows = {r["comparison"]: r for r in report["rows"]}
    start = rows["cold kernel vs pool acquire"]
    tool = rows["in-process vs bridged call, 1 KB result"]
    return {
        "cold kernel start (ms)": start["baseline_ms"],
        "pool acquire (ms)": start["ptc_ms"],
        "execute: x = 1 + 1 (ms)": rows["raw jupyter_client vs execute: x = 1 + 1"]["ptc_ms"],
        "bridged tool call, 1 KB (us)": tool["ptc_ms"] * 1000,
        "bridge overhead over in-process, 1 KB (us)": (tool["ptc_ms"] - tool["baseline_ms"]) * 1000,
        "bridged tool call, 100 KB (us)": rows["in-process vs bridged call, 100 KB result"]["ptc_ms"] * 1000,
        "idle kernel RSS (MiB)": report["rss_mib"],
        "idle kernel PSS (MiB)": report["pss_mib"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="the commit to compare with (e.g. the parent of a change)")
    parser.add_argument("--quick", action="store_true", help="one round of runtime.py --quick (the test suite runs this)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--cells", type=int, default=100)
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.before = 1, args.before or "HEAD"
    if not args.before:
        parser.error("--before REF is required (a commit to compare this tree with)")
    with tempfile.TemporaryDirectory(prefix="runtime-vs-") as tmp:
        before_tree = Path(tmp) / "before"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(before_tree), args.before],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            sides: dict[str, list[dict]] = {"before": [], "after": []}
            for round_ in range(args.rounds):
                for side, tree in (("before", before_tree), ("after", REPO)):
                    print(f"round {round_ + 1}/{args.rounds}: {side}", file=sys.stderr, flush=True)
                    sides[side].append(measures(run_side(tree, args, Path(tmp) / f"{side}-{round_}.json")))
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(before_tree)], check=False)
    names = list(sides["before"][0])
    before = [statistics.median(m[n] for m in sides["before"]) for n in names]
    after = [statistics.median(m[n] for m in sides["after"]) for n in names]
    table = pl.DataFrame({"measure": names, "before": [round(v, 2) for v in before],
                          "after": [round(v, 2) for v in after],
                          "ratio": [round(a / b, 3) if b else None for a, b in zip(after, before)],
                          "delta": [round(a - b, 2) for a, b in zip(after, before)]})
    print(f"before = {args.before}, after = this tree; medians over {args.rounds} alternating rounds")
    with pl.Config(tbl_rows=-1, tbl_cols=-1, fmt_str_lengths=60, tbl_width_chars=160):
        print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
