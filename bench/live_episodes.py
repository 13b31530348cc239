"""Memory per live kernel, and how many live episodes this machine sustains (here, or with the kernels on a server).

    .venv/bin/python bench/live_episodes.py [--hold 64] [--remote 16] [--quick]

Opens `--hold` PTC episodes (tasks of every domain at v0), plays the oracle teacher's first turn in each (a real
program: the kernel starts, the tool bridge is used) and holds them all alive and idle. With every episode alive it
reads, against the same readings before the first:
- the PSS of the sandboxes' processes (waiter, init, kernel): memory per live kernel, shared pages split fairly;
- this process's RSS growth: the host side of an episode (its environment copy, bridge, session);
- /proc/meminfo's Shmem (the sandboxes' tmpfs and the episodes' workspace quota tmpfs live there, in no process's
  RSS) and MemAvailable: what the machine really gives up per live episode.
From the MemAvailable drop per episode it extrapolates the live episodes this machine sustains, keeping a reserve
(the larger of 10% of MemTotal and 2 GiB) for everything else, and prints the arithmetic. Then everything is closed
and nothing may be left behind (processes in the sandboxes' cgroups, mounts, episode folders: bench/load.py's count).

`--remote N`: the same with N episodes hosted by a `progagent openenv serve` subprocess on this machine (the kernels
live in the server's process tree): the trainer's own RSS growth per remote episode is what a GPU node pays when its
episodes live on CPU nodes. The machine is shared with other work, so MemAvailable moves with it: the PSS and RSS
figures are this bench's own and steadier. Exits 1 if an episode fails to start or anything is left behind.
"""
from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import polars as pl

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# bench/load.py's probes (this file's folder is on the path)
from load import leftovers, pss_mib, rss_mib, sandbox_pids

from progagent_lib import load_pool
from progagent_lib.harness.episode import Episode, Limits, start_agent
from progagent_lib.harness.http_guard import new_token
from progagent_lib.policy import OracleTeacher

START_WORKERS = 4        # episodes started at once (kernel starts are CPU-bound; the machine has 2 cores)
SETTLE_S = 2.0           # after the last start, before reading: kernels finish their imports


def meminfo_mib() -> dict[str, float]:
    values = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        name, _, rest = line.partition(":")
        values[name] = int(rest.split()[0]) / 1024
    return values


def anonymous_pss_mib(pid: int) -> float:
    """The part of a process's PSS that no reclaim can give back (anonymous and shmem pages); the rest is file pages
    (the interpreter's libraries and modules), which the page cache holds once for every kernel."""
    total = 0.0
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith(("Pss_Anon:", "Pss_Shmem:")):
                total += int(line.split()[1]) / 1024
    except OSError:
        pass
    return total


def readings(server_pid: int | None = None) -> dict[str, float]:
    """PSS of the sandboxes (this process's, or the server's), this process's RSS, Shmem, MemAvailable."""
    pids = sandbox_pids(server_pid)
    memory = meminfo_mib()
    return {"sandbox processes": len(pids), "sandbox PSS": sum(pss_mib(pid) for pid in pids),
            "sandbox anonymous PSS": sum(anonymous_pss_mib(pid) for pid in pids), "host RSS": rss_mib(),
            "Shmem": memory["Shmem"], "MemAvailable": memory["MemAvailable"], "MemTotal": memory["MemTotal"]}


def chosen_instances(count: int) -> list[tuple]:
    """`count` (task, seed) pairs spread over the pool's domains (every k-th task, then the next seed)."""
    tasks = sorted(load_pool(REPO / "tasks"), key=lambda t: t.id)
    step = max(1, len(tasks) // count)
    spread = tasks[::step]
    return [(spread[i % len(spread)], i // len(spread)) for i in range(count)]


def open_live(task, seed: int, env_host=None) -> Episode:
    """An episode whose kernel is alive: the teacher's first turn (a program calling the task's tools) is played."""
    episode = Episode(task, "v0", seed, "ptc", limits=Limits(max_turns=None, max_tool_calls=None,
                                                             max_context_tokens=None), env_host=env_host)
    try:
        agent = start_agent(OracleTeacher("ptc"), task, episode.env.params)
        episode.add_turn(agent.act(episode.messages, episode.tools))
        if not episode.trajectory.calls or episode.trajectory.calls[0].kind != "program":
            raise RuntimeError(f"{task.id}: the teacher's first turn ran no program")
        return episode
    except BaseException:
        episode.close()
        raise


def hold(instances: list[tuple], env_host=None, server_pid: int | None = None) -> tuple[dict, dict, list[str]]:
    """Readings before and with every episode alive, and the failures."""
    before = readings(server_pid)
    episodes, failures = [], []
    with ThreadPoolExecutor(START_WORKERS) as pool:
        futures = [pool.submit(open_live, task, seed, env_host) for task, seed in instances]
        for (task, seed), future in zip(instances, futures):
            try:
                episodes.append(future.result())
            except Exception as exc:  # noqa: BLE001 - counted and reported; the others are measured
                failures.append(f"{task.id} seed {seed}: {type(exc).__name__}: {str(exc)[:200]}")
    time.sleep(SETTLE_S)
    alive = readings(server_pid)
    for episode in episodes:
        episode.close()
    return before, alive, failures


def settle(timeout: float = 60.0) -> None:
    """Wait until this process's sandboxes are gone (a closed kernel's memory is freed as it exits), then a moment more,
    so that the next 'before' reading does not count memory still being given back."""
    deadline = time.monotonic() + timeout
    while sandbox_pids() and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(SETTLE_S)


def per_episode(before: dict, alive: dict, count: int) -> dict[str, float]:
    return {name: (alive[name] - before[name]) / max(count, 1)
            for name in ("sandbox PSS", "sandbox anonymous PSS", "host RSS", "Shmem")} | {
        "MemAvailable drop": (before["MemAvailable"] - alive["MemAvailable"]) / max(count, 1)}


def sustainable(before: dict, cost_mib: float) -> tuple[int, str]:
    reserve = max(0.10 * before["MemTotal"], 2048.0)
    usable = before["MemAvailable"] - reserve
    count = int(usable // cost_mib) if cost_mib > 0 else 0
    return count, (f"({before['MemAvailable']:,.0f} MiB available - {reserve:,.0f} MiB reserve) / "
                   f"{cost_mib:.1f} MiB per live episode = {count:,} live episodes")


def table(title: str, count: int, before: dict, alive: dict, costs: dict, failures: list[str]) -> pl.DataFrame:
    rows = [("live episodes held", count), ("failed to start", len(failures)),
            ("sandbox processes (before, alive)", f"{before['sandbox processes']}, {alive['sandbox processes']}"),
            ("sandbox PSS per live episode (MiB)", round(costs["sandbox PSS"], 1)),
            ("  of it anonymous + shmem (MiB)", round(costs["sandbox anonymous PSS"], 1)),
            ("host RSS per live episode (MiB)", round(costs["host RSS"], 1)),
            ("Shmem per live episode (MiB)", round(costs["Shmem"], 1)),
            ("MemAvailable drop per live episode (MiB)", round(costs["MemAvailable drop"], 1)),
            ("MemTotal / MemAvailable before (MiB)", f"{before['MemTotal']:,.0f} / {before['MemAvailable']:,.0f}")]
    return pl.DataFrame({title: [r[0] for r in rows], "value": [str(r[1]) for r in rows]})


# --- the remote side -------------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(token_file: Path, capacity: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "progagent_lib.integrations.openenv_cli", "serve", "--tasks-dir",
                                str(REPO / "tasks"), "--port", str(port), "--token-file", str(token_file),
                                "--max-concurrent-envs", str(capacity)], cwd=REPO, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    url, token = f"http://127.0.0.1:{port}", token_file.read_text().strip()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        try:
            request = urllib.request.Request(f"{url}/health", headers={"Authorization": f"Bearer {token}"})
            with urllib.request.urlopen(request, timeout=2):
                return process, url
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError("the OpenEnv server did not start")


def remote(count: int) -> tuple[pl.DataFrame, list[str], int]:
    from progagent_lib.integrations.openenv_remote import EnvServers

    with tempfile.TemporaryDirectory() as folder:
        token_file = Path(folder) / "token"
        token_file.write_text(new_token())
        process, url = start_server(token_file, count)
        try:
            host = EnvServers([url], token_file.read_text().strip())
            settle()
            before, alive, failures = hold(chosen_instances(count), host, process.pid)
        finally:
            process.terminate()
            process.wait(timeout=60)
    costs = per_episode(before, alive, count - len(failures))
    result = table(f"remote: {count} episodes on a server", count - len(failures), before, alive, costs, failures)
    return result, failures, round(costs["host RSS"], 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hold", type=int, default=64, help="local live episodes held at once (default 64: gpu-paper's "
                        "episodes per rank)")
    parser.add_argument("--remote", type=int, default=16, help="episodes held on a local OpenEnv server (0: skip)")
    parser.add_argument("--quick", action="store_true", help="4 local and 2 remote episodes (the test suite runs this)")
    args = parser.parse_args()
    if args.quick:
        args.hold, args.remote = 4, 2
    left_before = leftovers()
    before, alive, failures = hold(chosen_instances(args.hold))
    held = args.hold - len(failures)
    costs = per_episode(before, alive, held)
    with pl.Config(tbl_rows=-1, fmt_str_lengths=80):
        print(table(f"local: {args.hold} episodes here", held, before, alive, costs, failures))
        # What a live episode costs the machine: the sandboxes' unreclaimable pages, the host's growth and the tmpfs
        # pages, or the MemAvailable drop if that is larger (it also sees what the kernel allocates for them).
        own = costs["sandbox anonymous PSS"] + costs["host RSS"] + costs["Shmem"]
        cost = max(own, costs["MemAvailable drop"])
        _, arithmetic = sustainable(before, cost)
        print(f"cost of a live local episode: max(anonymous PSS + host RSS + Shmem = {own:.1f}, MemAvailable drop = "
              f"{costs['MemAvailable drop']:.1f}) = {cost:.1f} MiB")
        print(f"live local episodes this machine sustains: {arithmetic}")
        if args.remote:
            remote_table, remote_failures, trainer_rss = remote(args.remote)
            failures += remote_failures
            print(remote_table)
            print(f"a trainer whose episodes live on servers pays {trainer_rss:.1f} MiB of its own RSS per live episode "
                  f"and starts no kernel, against {cost:.1f} MiB per local episode")
    time.sleep(1.0)
    left_after = leftovers()
    problems = [f"failed to start: {f}" for f in failures]
    problems += [f"{k}: {left_before[k]} before, {left_after[k]} after" for k in left_before
                 if left_after[k] > left_before[k]]
    for problem in problems:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
