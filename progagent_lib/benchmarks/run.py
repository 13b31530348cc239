"""Run a policy on an external suite's tasks under several harnesses, and the table of the outcome.

Every episode is `harness.run_episode` on the suite's task adapter, so trajectories are ours (`write_jsonl`,
`read_jsonl`, `harness.summary` work on them unchanged). A suite checker that raises fails its episode's one
criterion (`Environment.verify` keeps the exception as the detail); the run records the message in the
trajectory's `error` and goes on. Such an episode is still scored 0, not left out: AgentDojo's checkers raise
mostly on states a wrong run left (a user that was never created, an event that does not exist), so leaving those
episodes out would reward breaking the state. The table counts them in `checker_errors`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import polars as pl

from ..harness import run_episode
from ..harness.episode import Limits
from ..harness.spec import get_harness
from ..harness.summary import is_infra_error, trajectories_frame
from ..harness.trajectory import Trajectory, episode_key, iter_jsonl, write_jsonl
from ..task.verification import VERIFIER_FAILED
from .base import Benchmark, ExternalTask

CHECKER_RAISED = "the suite's checker raised: "


@dataclass
class BenchResult:
    trajectories: list[Trajectory]
    ran: int = 0
    skipped: int = 0  # episodes already in `out`
    failures: list[str] = field(default_factory=list)  # episodes that raised (not written; retried on resume)

    def table(self, by: Sequence[str] = ("harness",)) -> pl.DataFrame:
        return bench_table(self.trajectories, by)


def run_benchmark(
    bench: Benchmark,
    tasks: Sequence[ExternalTask],
    harnesses: Sequence[str],
    policies: dict[str, Any] | Callable[[str], Any],
    out: str | Path | None = None,
    *,
    progress: bool = True,
    session_kwargs: dict | None = None,
    limits: Limits | None = None,
    desc: str | None = None,
    workers: int = 1,
) -> BenchResult:
    """Every (task, harness) episode not already in `out` (one sample, scale v0, seed 0), appended to `out` as it ends.

    `policies` is a dict harness -> policy or a function harness -> policy. `limits`: the episodes' budgets (default
    our `Limits`). `workers`: episodes played at once, in threads (each has its own environment, kernel and
    per-episode player; a model served by the engine answers their turns in one batch, a model in this process one
    turn at a time). An episode that raises is reported in `failures` and the run goes on."""
    from threading import Lock

    from ..harness.batch import play_in_threads

    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise ValueError(f"workers={workers!r}: episodes played at once, an integer >= 1")

    harnesses = [get_harness(h).name for h in harnesses]
    policies = policies if isinstance(policies, dict) else {h: policies(h) for h in harnesses}
    names = {h: getattr(p, "name", type(p).__name__) for h, p in policies.items()}
    wanted = [(task, h) for task in tasks for h in harnesses]  # task-major: one attacked environment serves both
    keys = {episode_key(t.id, "v0", 0, h, names[h], 0) for t, h in wanted}
    out = Path(out) if out is not None else None
    earlier = (
        [t for t in iter_jsonl(out) if t.key in keys and not is_infra_error(t)]
        if out is not None and out.exists()
        else []
    )
    done = {t.key for t in earlier}
    todo = [(t, h) for t, h in wanted if episode_key(t.id, "v0", 0, h, names[h], 0) not in done]
    result = BenchResult(list(earlier), skipped=len(wanted) - len(todo))
    lock = Lock()

    def play(item: tuple[ExternalTask, str], on_turn: Callable[[Any], None]) -> None:
        task, harness = item
        trajectory = run_episode(
            task,
            "v0",
            0,
            harness,
            policies[harness],
            limits=limits,
            on_turn=on_turn,
            system_prompt=bench.system_prompts.get(harness),
            session_kwargs=session_kwargs,
        )
        raised = [c for c in trajectory.criteria if c.get("name") == VERIFIER_FAILED]
        if raised and not trajectory.error:
            trajectory.error = CHECKER_RAISED + raised[0].get("detail", "")
        with lock:
            if out is not None:
                write_jsonl(trajectory, out)
            result.trajectories.append(trajectory)
            result.ran += 1

    result.failures += play_in_threads(
        todo, play, lambda item: f"{item[0].id} [{item[1]}]", workers=workers, progress=progress, desc=desc
    )
    # the order of `wanted`, whatever order the episodes ended in
    order = {episode_key(t.id, "v0", 0, h, names[h], 0): i for i, (t, h) in enumerate(wanted)}
    result.trajectories.sort(key=lambda t: order.get(t.key, len(order)))
    return result


def _criterion(trajectory: Trajectory, suffix: str) -> bool | None:
    for criterion in trajectory.criteria:
        if criterion.get("name", "").endswith(suffix):
            return bool(criterion.get("passed"))
    return None


def bench_frame(trajectories: Sequence[Trajectory]) -> pl.DataFrame:
    """`harness.summary.trajectories_frame` plus the suite part (`group`), the suite's utility verdict, whether an
    attached injection was followed (null without one) and whether the checker raised."""
    trajectories = list(trajectories)
    frame = trajectories_frame(trajectories)
    if frame.is_empty():
        return frame
    resisted = [_criterion(t, "_injection_not_followed") for t in trajectories]
    utility = [_criterion(t, "_utility") for t in trajectories]
    return frame.with_columns(
        pl.Series("group", [t.task_id.split("/")[1] if t.task_id.count("/") >= 2 else "" for t in trajectories]),
        pl.Series("utility", [bool(u) if u is not None else t.reward >= 1.0 for u, t in zip(utility, trajectories)]),
        pl.Series("injection_followed", [None if r is None else not r for r in resisted], dtype=pl.Boolean),
        pl.Series("checker_error", [t.error.startswith(CHECKER_RAISED) for t in trajectories]),
    )


def bench_table(trajectories: Sequence[Trajectory], by: Sequence[str] = ("harness",)) -> pl.DataFrame:
    """Per group of `by` (harness; also `group`, `policy`): episodes, errored (policy failures, left out of the
    means), the pass rate (the suite's utility verdict), the share of attached injections followed, mean task-tool
    calls and tool-output tokens per episode, and how many checkers raised."""
    frame = bench_frame(trajectories)
    if frame.is_empty():
        return frame
    scored = frame.filter(~pl.col("errored"))
    counts = frame.group_by(list(by)).agg(pl.len().alias("episodes"), pl.col("errored").sum().alias("errored"))
    means = scored.group_by(list(by)).agg(
        pl.col("utility").mean().alias("pass_rate"),
        pl.col("injection_followed").mean().alias("injection_followed"),
        pl.col("tool_calls").mean().alias("tool_calls"),
        pl.col("model_tool_calls").mean().alias("model_tool_calls"),
        pl.col("tool_output_tokens").mean().alias("tool_output_tokens"),
        pl.col("checker_error").sum().alias("checker_errors"),
    )
    table = counts.join(means, on=list(by), how="left").sort(list(by))
    if table["injection_followed"].null_count() == table.height:
        table = table.drop("injection_followed")
    return table


def failing(trajectories: Sequence[Trajectory]) -> list[str]:
    """One line per episode that did not pass: task, harness, end reason and the checker's detail or error."""
    lines = []
    for t in trajectories:
        if t.reward >= 1.0:
            continue
        failed = [f"{c.get('name')}: {c.get('detail', '')}" for c in t.criteria if not c.get("passed")]
        lines.append(f"{t.task_id} [{t.harness}] end={t.end_reason} " + ("; ".join(failed) or t.error or "no verdict"))
    return lines


__all__ = ["BenchResult", "bench_frame", "bench_table", "failing", "run_benchmark"]
