"""Benchmark of verification in a child process (the verify worker) against criteria() in a thread of the host.

    .venv/bin/python bench/verify.py [--repeats 20] [--scale v0] [--quick]

Both paths verify the oracle's answer on tasks/retail/restock_orders: the episode held still, its workspace copied,
criteria() run (in the child: forked from the verification server, limits set, the environment rebuilt on the
database read-only and the copy, a JSON reply read with bounds). Runs alternate between the two paths so that
load on the machine falls on both. Prints the medians, the child's added milliseconds and the ratio; the child's
round trip alone (a request it refuses at once) is shown too. `--quick`: 3 repeats, numbers too noisy to judge.
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from progagent_lib import load_task
from progagent_lib.task.verify_worker import Budget, run_in_child

TASK = Path(__file__).resolve().parents[1] / "tasks" / "retail" / "restock_orders"


def timed(call) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--scale", default="v0")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    repeats = 3 if args.quick else args.repeats

    task = load_task(TASK)
    env = task.instantiate(args.scale, 0)
    try:
        answer = task.oracle(env.tools)
        assert env.verify(answer).reward == 1.0  # starts the verification server: not measured
        in_child, in_thread = [], []
        for _ in range(repeats):
            env.verify_in_child = True
            in_child.append(timed(lambda: env.verify(answer)))
            env.verify_in_child = False
            in_thread.append(timed(lambda: env.verify(answer)))
        refused = {"task_root": "/nonexistent", "scale": args.scale, "seed": 0, "params": {}, "instruction": "",
                   "db_path": "", "workspace": "", "answer": ""}
        budget = Budget(10, 10, 1 << 30)
        round_trip = [timed(lambda: run_in_child(refused, budget, time.monotonic() + 10)) for _ in range(repeats)]
    finally:
        env.close()

    child_ms, thread_ms = statistics.median(in_child) * 1e3, statistics.median(in_thread) * 1e3
    print(f"verify {task.id} at {args.scale}, {repeats} runs each (medians)")
    print(f"  in a thread of the host      {thread_ms:7.2f} ms")
    print(f"  in a child of the server     {child_ms:7.2f} ms")
    print(f"  added by the child           {child_ms - thread_ms:7.2f} ms   ratio child/thread {child_ms / thread_ms:.2f}")
    print(f"  child round trip, no judging {statistics.median(round_trip) * 1e3:7.2f} ms")


if __name__ == "__main__":
    main()
