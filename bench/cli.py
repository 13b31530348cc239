"""`progagent --help` time: the lazy command table against importing every command module up front (the old CLI).

    .venv/bin/python bench/cli.py [--runs 7] [--quick]

Both sides are fresh processes, timed from start to exit, median of --runs, in the same run:
- lazy: the real console script, `progagent --help` (only progagent_lib.cli and the task package load);
- eager (the baseline, what `progagent --help` did before): a process that imports every module of the command
  table and calls its `register`, then prints the same help;
- one command: `progagent run --help` (run's module alone), for scale.
Printed: each median and the ratio eager / lazy. The target is `progagent --help` under 1 s. The ratio is what to
compare across machines (this one is shared: other processes add noise to both sides alike). `--quick` (one run
per side; the test suite runs it) checks the machinery, not the figures.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROGAGENT = Path(sys.executable).parent / "progagent"
EAGER = """
import argparse, importlib
from progagent_lib import cli
for module in dict.fromkeys(c.module for c in cli.COMMANDS):
    # each module in its own parser: two modules define `export` (harbor|authors and trajectories)
    importlib.import_module(module).register(cli.Parser(prog="progagent").add_subparsers())
cli.listing_parser().print_help()
"""


def median_seconds(command: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
        times.append(time.perf_counter() - started)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="processes per side (median; default 7)")
    parser.add_argument("--quick", action="store_true", help="one process per side")
    args = parser.parse_args()
    if args.quick:
        args.runs = 1
    subprocess.run([str(PROGAGENT), "--help"], capture_output=True)   # warm the file cache for both sides
    subprocess.run([sys.executable, "-c", EAGER], cwd=REPO, capture_output=True)
    lazy = median_seconds([str(PROGAGENT), "--help"], args.runs)
    eager = median_seconds([sys.executable, "-c", EAGER], args.runs)
    one = median_seconds([str(PROGAGENT), "run", "--help"], args.runs)
    print(f"progagent --help (lazy command table):      {lazy:6.3f} s  (median of {args.runs})")
    print(f"every command module imported (old --help): {eager:6.3f} s")
    print(f"progagent run --help (one module):          {one:6.3f} s")
    print(f"ratio eager / lazy: {eager / lazy:.1f}x; target --help < 1 s: {'met' if lazy < 1 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
