"""Batches of episodes: tasks x scales x seeds x harnesses x samples, in parallel, resumable.

Each finished trajectory is appended to a JSON-lines file at once, so a killed batch resumes where it
stopped. `progagent run`, the notebooks and the difficulty filter all run episodes through here.
"""
from __future__ import annotations

import sys
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from .episode import Limits, run_episode
from .spec import HARNESSES
from .trajectory import Trajectory, episode_key, iter_jsonl, write_jsonl


@dataclass(frozen=True)
class EpisodeSpec:
    task: Any
    scale: str
    seed: int
    harness: str
    sample: int


@dataclass
class BatchResult:
    trajectories: list[Trajectory]          # every wanted episode found in the file (old and new)
    ran: int                                 # episodes run by this call
    skipped: int                             # episodes already in the file
    failures: list[str] = field(default_factory=list)


def run_batch(tasks: Sequence[Any], scales: Sequence[str], harnesses: Sequence[str], policy: str | Callable[[str], Any],
              out: str | Path, *, seeds: Sequence[int] = (0,), samples: int = 1, workers: int = 1,
              limits: Callable[[Any, Any], Limits | None] | Limits | None = None, error_mode: str = "is_error",
              progress: bool = True) -> BatchResult:
    """Run every (task, scale, seed, harness, sample) not yet in `out`; return all of them.

    `policy` is a spec for `make_policy` ("oracle", "hf:PATH", "openai:URL#model") or a function
    harness -> policy. The teacher gets one policy per harness (it plays that harness); a model spec is
    loaded once and shared by all harnesses.
    """
    from tqdm.auto import tqdm

    from ..policy.factory import make_policy

    unknown = [h for h in harnesses if h not in HARNESSES]
    if unknown:
        raise ValueError(f"unknown harness(es) {unknown}; expected {', '.join(HARNESSES)}")
    policies: dict[str, Any] = {}
    if callable(policy):
        policies = {h: policy(h) for h in harnesses}
    else:
        shared = None
        for h in harnesses:
            if policy.startswith("oracle"):
                policies[h] = make_policy(policy, h)
            else:
                shared = shared or make_policy(policy, h)
                policies[h] = shared
    name_of = {h: getattr(p, "name", str(policy)) for h, p in policies.items()}

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = {t.key for t in iter_jsonl(out)} if out.exists() else set()
    wanted = [EpisodeSpec(t, s, seed, h, k) for t in tasks for s in scales for seed in seeds for h in harnesses
              for k in range(samples)]
    key = lambda e: episode_key(e.task.id, e.scale, e.seed, e.harness, name_of[e.harness], e.sample)  # noqa: E731
    todo = [e for e in wanted if key(e) not in done]

    write_lock = threading.Lock()
    failures: list[str] = []

    def run_one(e: EpisodeSpec) -> None:
        policy_for = policies[e.harness]
        episode_limits = limits(policy_for, e.task) if callable(limits) else limits
        trajectory = run_episode(e.task, e.scale, e.seed, e.harness, policy_for, episode_limits,
                                 sample=e.sample, error_mode=error_mode)
        with write_lock:
            write_jsonl(trajectory, out)

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool, \
            tqdm(total=len(todo), unit="episode", desc="episodes", disable=not progress) as bar:
        futures = {pool.submit(run_one, e): e for e in todo}
        for future in as_completed(futures):
            try:
                future.result()
            except Exception as exc:  # one broken episode must not lose the others; it is retried on resume
                failures.append(f"{key(futures[future])}: {type(exc).__name__}: {exc}")
                tqdm.write(f"episode failed: {failures[-1]}", file=sys.stderr)
            bar.update(1)

    wanted_keys = {key(e) for e in wanted}
    trajectories = [t for t in iter_jsonl(out) if t.key in wanted_keys] if out.exists() else []
    return BatchResult(trajectories, len(todo), len(wanted) - len(todo), failures)
