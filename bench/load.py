"""Many confined episodes at once: nothing errors, nothing is left behind, the host's memory stays bounded.

    .venv/bin/python bench/load.py [--episodes 64] [--pool 64] [--quick]

Plays `--episodes` PTC episodes of the oracle teacher at the same time (one thread each, `run_batch`),
their kernels taken from a `KernelPool`, over tasks of every domain at v0. While they run, a sampler
records the host process's RSS and the number of live sandbox processes, with the PSS of all of them
(memory per live kernel). Before and after it counts what a sandbox leaves on the machine: processes
in the sandboxes' pids cgroups, mounts under the runtime folder, uid leases, sandbox folders, episode
folders and kernel keys (/proc/key-users). It exits 1 if an episode errored or failed, if anything is
left behind, or if the host's peak RSS grew by more than `--rss-bound-mib`.
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

import polars as pl

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from progagent_lib import load_pool  # noqa: E402 - after the path set-up, so a checkout runs without install
from progagent_lib.harness.batch import run_batch  # noqa: E402
from progagent_lib.policy import policies_for  # noqa: E402
from progagent_lib.runtime import KernelPool  # noqa: E402
from progagent_lib.runtime import sandbox as sandbox_module  # noqa: E402
from progagent_lib.task.task import episodes_root  # noqa: E402


def proc_mib(path: str, field: str) -> float:
    """A `field:  N kB` line of a /proc file, in MiB (0 where the process is gone)."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def rss_mib(pid: int | str = "self") -> float:
    return proc_mib(f"/proc/{pid}/status", "VmRSS:")


def pss_mib(pid: int) -> float:
    return proc_mib(f"/proc/{pid}/smaps_rollup", "Pss:")


def sandbox_pids(host_pid: int | None = None) -> list[int]:
    """Processes in the pids cgroups of the sandboxes that host `host_pid` (default: this process) started."""
    groups = sandbox_module.CGROUP_PIDS_ROOT / "progagent"
    pids = []
    for group in (groups.glob(f"{host_pid or os.getpid()}-*") if groups.is_dir() else []):
        try:
            pids += [int(p) for p in (group / "cgroup.procs").read_text().split()]
        except OSError:
            pass
    return pids


def leftovers() -> dict[str, int]:
    """What sandboxes of this process leave on the machine, counted from the outside."""
    runtime = sandbox_module.RUNTIME_ROOT
    mine = f"sb-{os.getpid()}-"
    mounts = sum(mine in line or f"-p{os.getpid()}-" in line for line in Path("/proc/self/mountinfo").read_text().splitlines())
    leases = [p for p in (runtime / "ids").iterdir()] if (runtime / "ids").is_dir() else []
    episodes = episodes_root()
    return {
        "processes": len(sandbox_pids()),
        "pids cgroups": len(list((sandbox_module.CGROUP_PIDS_ROOT / "progagent").glob(f"{os.getpid()}-*"))),
        "mounts": mounts,
        "uid leases": sum(p.read_text() == str(os.getpid()) for p in leases),
        "sandbox folders": len(list(runtime.glob(mine + "*"))) if runtime.is_dir() else 0,
        "episode folders": len(list(episodes.glob(f"*-p{os.getpid()}-*"))) if episodes.is_dir() else 0,
        "kernel key users": len(Path("/proc/key-users").read_text().splitlines()),
    }


class Sampler(threading.Thread):
    def __init__(self, period: float = 0.5):
        super().__init__(daemon=True)
        self.period, self.stop = period, threading.Event()
        self.peak_rss = rss_mib()
        self.peak_processes = 0
        self.peak_pss = 0.0

    def run(self) -> None:
        while not self.stop.wait(self.period):
            self.peak_rss = max(self.peak_rss, rss_mib())
            pids = sandbox_pids()
            if len(pids) >= self.peak_processes:
                self.peak_processes = len(pids)
                self.peak_pss = sum(pss_mib(pid) for pid in pids)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--pool", type=int, default=64, help="kernels started ahead of the burst")
    parser.add_argument("--rss-bound-mib", type=float, default=1024.0,
                        help="largest growth of the host's RSS allowed (the host holds 64 environments and bridges)")
    parser.add_argument("--quick", action="store_true", help="8 episodes, a pool of 4 (the test suite runs this)")
    args = parser.parse_args()
    if args.quick:
        args.episodes, args.pool = 8, 4
    tasks = sorted(load_pool(REPO / "tasks"), key=lambda t: t.id)
    # Spread over domains: every k-th task, seeds 0, 1, ... until there are enough episodes.
    step = max(1, len(tasks) // args.episodes)
    chosen = tasks[::step][:args.episodes]
    seeds = range(-(-args.episodes // len(chosen)))
    before = leftovers()
    started = time.monotonic()
    with KernelPool(size=args.pool) as pool:
        deadline = time.monotonic() + 300
        while pool.ready < args.pool and time.monotonic() < deadline:
            time.sleep(0.2)
        pool_seconds = time.monotonic() - started
        base_rss = rss_mib()
        sampler = Sampler()
        sampler.start()
        burst = time.monotonic()
        result = run_batch(chosen, ["v0"], ["ptc"], policies_for("oracle", ["ptc"]), seeds=list(seeds),
                           workers=args.episodes, progress=True, session_kwargs={"pool": pool})
        burst_seconds = time.monotonic() - burst
        sampler.stop.set()
        sampler.join()
    time.sleep(0.5)
    after = leftovers()
    played = result.trajectories[:args.episodes] if len(result.trajectories) > args.episodes else result.trajectories
    passed = sum(t.reward == 1 for t in played)
    growth = sampler.peak_rss - base_rss
    table = pl.DataFrame({"measure": ["episodes", "passed (R = 1)", "errored", "failed", "pool start (s)",
                                      "burst wall time (s)", "host RSS before the burst (MiB)",
                                      "host RSS peak (MiB)", "host RSS growth (MiB)",
                                      "live sandbox processes at peak", "their PSS (MiB)",
                                      "PSS per live episode (MiB)"],
                          "value": [str(v) for v in [len(played), passed, result.errored, len(result.failures), round(pool_seconds, 1),
                                    round(burst_seconds, 1), round(base_rss), round(sampler.peak_rss), round(growth),
                                    sampler.peak_processes, round(sampler.peak_pss),
                                    round(sampler.peak_pss / max(1, min(args.episodes, sampler.peak_processes // 3)), 1)]]})
    left = pl.DataFrame({"left behind": list(before), "before": list(before.values()),
                         "after": [after[k] for k in before]})
    with pl.Config(tbl_rows=-1, fmt_str_lengths=50):
        print(table)
        print(left)
    problems = []
    if result.errored or result.failures:
        problems.append(f"{result.errored} errored, {len(result.failures)} failed: {result.failures[:3]}")
    problems += [f"{k}: {before[k]} before, {after[k]} after" for k in before if after[k] > before[k]]
    if growth > args.rss_bound_mib:
        problems.append(f"host RSS grew {growth:.0f} MiB > {args.rss_bound_mib:.0f}")
    for problem in problems:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
