"""Empirical difficulty filter: K rollouts per task and scale; keep a task iff its pass rate lies in
(low, high) at every scale (the paper: K=8 under PTC, bounds (0, 0.8), which removed 35 of 250).

An episode ended by an infrastructure error (the policy or its server failed) is no evidence about the task:
it is left out of the pass rate, counted in `errored`, and a task with any is left undecided (not kept),
so that a rerun, which retries those episodes, decides it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import polars as pl

from ..harness.spec import DEFAULT_HARNESS
from ..task import SCALES


@dataclass
class FilterResult:
    pass_rates: (
        pl.DataFrame
    )  # task_id, scale, params (the instance's, JSON), episodes, errored, pass_rate (scored episodes)
    decisions: pl.DataFrame  # task_id, keep, reason
    kept: list[str]

    @property
    def errored(self) -> int:
        """Episodes ended by an infrastructure error (retried by a rerun)."""
        return int(self.pass_rates["errored"].sum()) if not self.pass_rates.is_empty() else 0


def difficulty_filter(
    tasks: Sequence[Any],
    policy: str | Any,
    out: str | Path,
    *,
    k: int = 8,
    scales: Sequence[str] = SCALES,
    harness: str = DEFAULT_HARNESS,
    low: float = 0.0,
    high: float = 0.8,
    seed: int = 0,
    workers: int = 1,
    progress: bool = True,
) -> FilterResult:
    """Run K episodes of `policy` per task and scale (resumable through `out`), then decide per task."""
    from ..harness.batch import run_batch
    from ..harness.summary import trajectories_frame, with_errored

    if isinstance(policy, str):
        from ..policy.factory import policies_for

        policy = policies_for(policy, [harness])
    result = run_batch(
        tasks, scales, [harness], policy, out, seeds=(seed,), samples=k, workers=workers, progress=progress
    )
    frame = trajectories_frame(result.trajectories)
    rates_schema = {
        "task_id": pl.String,
        "scale": pl.String,
        "params": pl.String,
        "episodes": pl.UInt32,
        "errored": pl.Int64,
        "pass_rate": pl.Float64,
    }
    rates = (
        pl.DataFrame(schema=rates_schema)
        if frame.is_empty()
        else with_errored(frame)
        .group_by(["task_id", "scale"])
        .agg(
            pl.col("params").first(),
            pl.len().alias("episodes"),
            pl.col("errored").sum().cast(pl.Int64).alias("errored"),
            (pl.col("reward") >= 1.0).filter(~pl.col("errored")).mean().alias("pass_rate"),
        )
        .sort(["task_id", "scale"])
    )
    decisions = []
    for task in tasks:
        rows = rates.filter(pl.col("task_id") == task.id)
        errored = [f"{r['scale']}: {r['errored']}" for r in rows.iter_rows(named=True) if r["errored"]]
        outside = [
            f"{r['scale']}={r['pass_rate']:.2f}"
            for r in rows.iter_rows(named=True)
            if not r["errored"] and not (low < r["pass_rate"] < high)
        ]
        missing = [s for s in scales if s not in set(rows["scale"].to_list())]
        keep = not outside and not missing and not errored
        if keep:
            reason = "in range at every scale"
        elif errored:
            reason = f"undecided: errored episodes ({', '.join(errored)}); run again to retry them"
        elif missing:
            reason = f"no episodes at {missing}"
        else:
            reason = f"outside ({low}, {high}): {', '.join(outside)}"
        decisions.append({"task_id": task.id, "keep": keep, "reason": reason})
    decisions_frame = pl.DataFrame(decisions, schema={"task_id": pl.String, "keep": pl.Boolean, "reason": pl.String})
    return FilterResult(rates, decisions_frame, [d["task_id"] for d in decisions if d["keep"]])
