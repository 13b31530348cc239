"""Empirical difficulty filter: K rollouts per task and scale; keep a task iff its pass rate lies in
(low, high) at every scale (the paper: K=8 under PTC, bounds (0, 0.8), which removed 35 of 250)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import polars as pl

from ..task import SCALES


@dataclass
class FilterResult:
    pass_rates: pl.DataFrame    # task_id, scale, episodes, pass_rate
    decisions: pl.DataFrame     # task_id, keep, reason
    kept: list[str]


def difficulty_filter(tasks: Sequence[Any], policy: str | Any, out: str | Path, *, k: int = 8, scales: Sequence[str] = SCALES,
                      harness: str = "ptc", low: float = 0.0, high: float = 0.8, seed: int = 0, workers: int = 1,
                      progress: bool = True) -> FilterResult:
    """Run K episodes of `policy` per task and scale (resumable through `out`), then decide per task."""
    from ..harness.batch import run_batch
    from ..harness.summary import trajectories_frame

    result = run_batch(tasks, scales, [harness], policy, out, seeds=(seed,), samples=k, workers=workers, progress=progress)
    frame = trajectories_frame(result.trajectories)
    rates = frame.group_by(["task_id", "scale"]).agg(pl.len().alias("episodes"), (pl.col("reward") >= 1.0).mean().alias("pass_rate")).sort(["task_id", "scale"])
    decisions = []
    for task in tasks:
        rows = rates.filter(pl.col("task_id") == task.id)
        outside = [f"{r['scale']}={r['pass_rate']:.2f}" for r in rows.iter_rows(named=True) if not (low < r["pass_rate"] < high)]
        missing = [s for s in scales if s not in set(rows["scale"].to_list())]
        keep = not outside and not missing
        reason = "in range at every scale" if keep else (f"no episodes at {missing}" if missing else f"outside ({low}, {high}): {', '.join(outside)}")
        decisions.append({"task_id": task.id, "keep": keep, "reason": reason})
    decisions_frame = pl.DataFrame(decisions, schema={"task_id": pl.String, "keep": pl.Boolean, "reason": pl.String})
    return FilterResult(rates, decisions_frame, [d["task_id"] for d in decisions if d["keep"]])
