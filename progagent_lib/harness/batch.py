"""Many episodes at once: tasks x scales x seeds x harnesses x samples, in threads, resumable through JSON lines.

`run_batch` is what `progagent run`, the difficulty filter and the notebooks share. Threads are enough:
the kernels are separate processes, and tools are mostly SQLite and file reads.
"""

from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import polars as pl

from ..task import Task, load_task
from .episode import Limits, run_episode
from .spec import get_harness
from .summary import is_infra_error, summarize
from .trajectory import Trajectory, episode_key, iter_jsonl, write_jsonl


@dataclass(frozen=True)
class EpisodeSpec:
    task: Task
    scale: str
    seed: int
    harness: str
    sample: int


@dataclass
class BatchResult:
    trajectories: list[Trajectory]  # every requested episode that is done (this run's and earlier ones)
    ran: int = 0  # episodes run now
    skipped: int = 0  # episodes found already done in `out`
    failures: list[str] = field(default_factory=list)  # episodes that raised (not written; retried on resume)

    @property
    def errored(self) -> int:
        """Episodes ended by an infrastructure error: written, kept out of pass rates, run again on resume."""
        return sum(is_infra_error(t) for t in self.trajectories)

    def summary(self, k: int | None = None) -> pl.DataFrame:
        return summarize(self.trajectories, k=k)


def _policies_by_harness(policy: Any, harnesses: Sequence[str]) -> dict[str, Any]:
    if isinstance(policy, str):  # spec strings are read a floor up, where the policies live
        raise TypeError(
            f"run_batch takes policy objects, not the spec {policy!r}: pass "
            f"progagent_lib.policy.policies_for({policy!r}, harnesses) (one policy per harness)"
        )
    if callable(policy) and not hasattr(policy, "act"):  # a factory: harness -> policy
        return {h: policy(h) for h in harnesses}
    if isinstance(policy, dict):
        missing = [h for h in harnesses if h not in policy]
        if missing:
            raise ValueError(f"no policy given for harness(es) {missing}")
        return policy
    played = getattr(policy, "harness", None)
    if played is not None and any(h != played for h in harnesses):
        raise ValueError(
            f"{type(policy).__name__} plays the {played!r} harness only; pass "
            f"policies_for(spec, harnesses) or a dict harness -> policy to run {list(harnesses)}"
        )
    return {h: policy for h in harnesses}


def limits_with_overrides(policy: Any, task: Task, overrides: dict[str, int | None] | None) -> Limits | None:
    """run_episode's default limits with some fields replaced; 0 means no limit. None when nothing is overridden."""
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    if not given:
        return None
    base = getattr(policy, "default_limits", None) or Limits.for_task(task)
    return Limits(**{**base.__dict__, **{k: (None if v == 0 else v) for k, v in given.items()}})


def run_batch(
    tasks: Sequence[Task | str | Path],
    scales: Sequence[str],
    harnesses: Sequence[str],
    policy: Any,
    out: str | Path | None = None,
    *,
    seeds: Sequence[int] = (0,),
    samples: int = 1,
    workers: int = 1,
    progress: bool = True,
    limits: Limits | Callable[[Any, Task], Limits | None] | None = None,
    limit_overrides: dict[str, int | None] | None = None,
    error_mode: str = "is_error",
    system_prompt: str | Path | None = None,
    tokenizer: Any = None,
    session_kwargs: dict | None = None,
) -> BatchResult:
    """Run every (task, scale, seed, harness, sample) episode not already in `out`, appending each as it ends.

    `policy` is a policy object, a dict harness -> policy or a function harness -> policy (a spec string such
    as "oracle" or "hf:smollm2" becomes one with `progagent_lib.policy.policies_for(spec, harnesses)`). `limits` is fixed Limits or a function
    (policy, task) -> Limits; `limit_overrides` replaces some fields of the defaults instead (0 = no
    limit). `system_prompt` is a file that replaces the harness's prompt;
    `tokenizer` counts tokens instead of the policies' own; `session_kwargs` go to every episode's `Session` (e.g.
    `unsafe_no_sandbox=True`). A failing episode is reported in `failures`
    and not written, so a rerun retries it; an episode ended by an infrastructure error is written (errored)
    and also retried by a rerun.
    """
    loaded = [t if isinstance(t, Task) else load_task(t) for t in tasks]
    harnesses = [get_harness(h).name for h in harnesses]
    policies = _policies_by_harness(policy, harnesses)
    names = {h: getattr(p, "name", type(p).__name__) for h, p in policies.items()}

    def key(e: EpisodeSpec) -> str:
        return episode_key(e.task.id, e.scale, e.seed, e.harness, names[e.harness], e.sample)

    wanted = [
        EpisodeSpec(t, s, seed, h, k)
        for t in loaded
        for s in scales
        for seed in seeds
        for h in harnesses
        for k in range(samples)
    ]
    wanted_keys = {key(e) for e in wanted}
    out = Path(out) if out is not None else None
    # An episode that ended by an infrastructure error (policy or server failed) is not done: it is run again.
    earlier = (
        [t for t in iter_jsonl(out) if t.key in wanted_keys and not is_infra_error(t)]
        if out is not None and out.exists()
        else []
    )
    done = {t.key for t in earlier}
    todo = [e for e in wanted if key(e) not in done]
    result = BatchResult(trajectories=list(earlier), skipped=len(wanted) - len(todo))
    lock = threading.Lock()

    def run_one(e: EpisodeSpec, on_turn: Callable[[Any], None]) -> Trajectory:
        p = policies[e.harness]
        episode_limits = limits(p, e.task) if callable(limits) else limits
        episode_limits = episode_limits or limits_with_overrides(p, e.task, limit_overrides)
        trajectory = run_episode(
            e.task,
            e.scale,
            e.seed,
            e.harness,
            p,
            episode_limits,
            sample=e.sample,
            error_mode=error_mode,
            system_prompt=system_prompt,
            tokenizer=tokenizer,
            session_kwargs=session_kwargs,
            on_turn=on_turn,
        )
        with lock:
            if out is not None:
                write_jsonl(trajectory, out)
            result.trajectories.append(trajectory)
            result.ran += 1
        return trajectory

    result.failures += play_in_threads(todo, run_one, key, workers=workers, progress=progress)
    return result


def play_in_threads(
    items: Sequence[Any],
    play: Callable[[Any, Callable[[Any], None]], Any],
    label: Callable[[Any], str],
    *,
    workers: int = 1,
    progress: bool = True,
    desc: str | None = None,
) -> list[str]:
    """`play(item, on_turn)` for every item, `workers` at a time in threads, with a progress bar over the items and,
    beside it, the turns of the episodes playing (`play` hands `on_turn` to `run_episode`). An item that raises is
    reported (`label(item): error`, on stderr and in the returned list) and the others go on."""
    from tqdm.auto import tqdm

    failures: list[str] = []
    with (
        ThreadPoolExecutor(max_workers=max(1, workers)) as pool,
        tqdm(total=len(items), unit="episode", disable=not progress, file=sys.stderr, desc=desc) as bar,
    ):
        turns = TurnCounter(bar)
        futures = {pool.submit(play, item, turns.counter(label(item))): item for item in items}
        for future in as_completed(futures):
            try:
                future.result()
            except Exception as exc:  # noqa: BLE001 - one broken episode must not lose the others
                failures.append(f"{label(futures[future])}: {type(exc).__name__}: {exc}")
                tqdm.write(f"episode failed: {failures[-1]}", file=sys.stderr)
            turns.forget(label(futures[future]))
            bar.update(1)
    return failures


class TurnCounter:
    """The turns of the episodes still playing, shown beside a bar that counts whole episodes (which would sit at
    0/1 for the minutes one small-model episode takes): `turn 7/30` for one, `3 playing, turns 2-9` for several."""

    def __init__(self, bar: Any):
        self.bar, self.lock = bar, threading.Lock()
        self.turns: dict[str, tuple[int, int | None]] = {}  # episode -> (turns played, its max_turns)
        self.drawn = 0.0  # when the postfix was last drawn: at most once per the bar's mininterval (an oracle's
        # turns take milliseconds; a notebook widget redrawn per turn floods the kernel's channel)

    def counter(self, key: str) -> Callable[[Any], None]:
        """The `on_turn` of one episode: records its turns (of its max_turns) and redraws the bar's postfix."""

        def count(episode: Any) -> None:
            with self.lock:
                self.turns[key] = (episode.trajectory.turns, episode.limits.max_turns)
                now = time.monotonic()
                due = now - self.drawn >= getattr(self.bar, "mininterval", 0.1)  # a disabled bar has none
                self.bar.set_postfix_str(self.text(), refresh=due)
                self.drawn = now if due else self.drawn

        return count

    def forget(self, key: str) -> None:
        with self.lock:
            if self.turns.pop(key, None) is not None:
                self.bar.set_postfix_str(self.text(), refresh=False)

    def text(self) -> str:
        if len(self.turns) == 1:
            turns, most = next(iter(self.turns.values()))
            return f"turn {turns}" + (f"/{most}" if most else "")
        counts = [turns for turns, _ in self.turns.values()]
        return f"{len(counts)} playing, turns {min(counts)}-{max(counts)}" if counts else ""
