"""Tables over trajectories (polars), shared by `progagent run` and the notebooks."""
from __future__ import annotations

import json
from math import comb
from typing import Iterable

import polars as pl

from .trajectory import Trajectory

GROUP = ("task_id", "scale", "harness", "policy")
INFRA_END_REASONS = ("policy_error",)


def is_infra_error(trajectory: Trajectory) -> bool:
    """Whether an episode ended because the policy or its server failed (errored), not because of the task.

    Such an episode says nothing about the model: it is counted apart from pass rates, and retried on resume.
    """
    errored = getattr(trajectory, "errored", None)
    return bool(errored) if errored is not None else trajectory.end_reason in INFRA_END_REASONS


def trajectories_frame(trajectories: Iterable[Trajectory]) -> pl.DataFrame:
    """One row per episode with its verdict and metrics."""
    rows = [{
        "task_id": t.task_id, "scale": t.scale, "seed": t.seed, "harness": t.harness, "policy": t.policy,
        "sample": t.sample, "params": json.dumps(getattr(t, "params", None) or {}, sort_keys=True), "reward": t.reward, "score": t.score, "end_reason": t.end_reason,
        "errored": is_infra_error(t), "turns": t.turns,
        "tool_output_tokens": t.tool_output_tokens, "context_tokens": t.context_tokens, "tool_calls": t.tool_calls,
        "model_tool_calls": t.model_tool_calls, "runtime_errors": t.runtime_errors, "malformed_calls": t.malformed_calls,
        "programs": len(t.programs), "dtc_like_programs": t.dtc_like_programs, "seconds": t.seconds,
    } for t in trajectories]
    return pl.DataFrame(rows, schema_overrides={"reward": pl.Float64, "score": pl.Float64})


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples with c successes (Chen et al., 2021): 1 - C(n-c, k) / C(n, k)."""
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples, got {n}")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def with_errored(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame with its `errored` column (derived from `end_reason` for frames built elsewhere)."""
    if "errored" in frame.columns:
        return frame
    return frame.with_columns(pl.col("end_reason").is_in(list(INFRA_END_REASONS)).alias("errored"))


def summarize(trajectories: Iterable[Trajectory] | pl.DataFrame, k: int | None = None,
              by: tuple[str, ...] = GROUP) -> pl.DataFrame:
    """Per task, scale, harness and policy: pass rate, pass@k, mean R~ and the mean cost per episode.

    Errored episodes (the policy or its server failed) are counted in `errored` and left out of every other
    column: they say nothing about the model. A group with only errored episodes has nulls there.
    `k` defaults to the smallest number of scored samples any (group, seed) has; pass@k is averaged over seeds.
    """
    frame = trajectories if isinstance(trajectories, pl.DataFrame) else trajectories_frame(trajectories)
    if frame.is_empty():
        return frame
    frame = with_errored(frame)
    scored = frame.filter(~pl.col("errored"))
    counts = frame.group_by(list(by)).agg(pl.len().alias("episodes"), pl.col("errored").sum().cast(pl.Int64).alias("errored"))
    per_seed = scored.group_by([*by, "seed"]).agg(pl.len().alias("n"), (pl.col("reward") >= 1.0).sum().alias("c"))
    k = k or (int(per_seed["n"].min()) if not per_seed.is_empty() else 1)
    per_seed = per_seed.with_columns(
        pl.struct("n", "c").map_elements(lambda r: pass_at_k(r["n"], r["c"], min(k, r["n"])), return_dtype=pl.Float64)
        .alias("pass_at_k"))
    means = scored.group_by(list(by)).agg(
        (pl.col("reward") >= 1.0).mean().alias("pass_rate"),
        pl.col("score").mean().alias("mean_score"),
        pl.col("tool_output_tokens").mean().alias("tool_output_tokens"),
        pl.col("tool_calls").mean().alias("tool_calls"),
        pl.col("model_tool_calls").mean().alias("model_tool_calls"),
        pl.col("runtime_errors").mean().alias("runtime_errors"),
        pl.col("turns").mean().alias("turns"),
    )
    pass_k = per_seed.group_by(list(by)).agg(pl.col("pass_at_k").mean().alias(f"pass@{k}"))
    table = counts.join(means, on=list(by), how="left").join(pass_k, on=list(by), how="left").sort(list(by))
    order = [*by, "episodes", "errored", "pass_rate", f"pass@{k}", "mean_score", "tool_output_tokens", "tool_calls",
             "model_tool_calls", "runtime_errors", "turns"]
    return table.select(order)


def print_table(table: pl.DataFrame) -> None:
    """Print a whole table (no elided rows or columns), numbers rounded for reading."""
    floats = [c for c, dtype in table.schema.items() if dtype == pl.Float64]
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=250, fmt_str_lengths=60, tbl_hide_dataframe_shape=True):
        print(table.with_columns([pl.col(c).round(3) for c in floats]))


def cost_by_harness(trajectories: Iterable[Trajectory] | pl.DataFrame, metric: str = "tool_output_tokens") -> pl.DataFrame:
    """Mean `metric` per episode, one row per scale and one column per harness (all tasks pooled),
    plus the DTC/PTC and DTC/Hybrid ratios when those harnesses are present."""
    frame = trajectories if isinstance(trajectories, pl.DataFrame) else trajectories_frame(trajectories)
    table = frame.group_by("scale", "harness").agg(pl.col(metric).mean()).pivot(on="harness", index="scale", values=metric).sort("scale")
    harnesses = [h for h in ("dtc", "ptc", "hybrid") if h in table.columns]
    table = table.select("scale", *harnesses, *[c for c in table.columns if c not in ("scale", *harnesses)])
    for other in ("ptc", "hybrid"):
        if "dtc" in table.columns and other in table.columns:
            table = table.with_columns((pl.col("dtc") / pl.col(other)).alias(f"dtc/{other}"))
    return table


def programs_frame(trajectories: Iterable[Trajectory]) -> pl.DataFrame:
    """One row per program submitted to programmatic_tool_call, with its structure and outcome
    (for the behaviour analyses: which constructs programs use, how many are DTC-like)."""
    rows = []
    for t in trajectories:
        for call in t.calls:
            if call.program is None:
                continue
            p = call.program
            rows.append({
                "task_id": t.task_id, "scale": t.scale, "harness": t.harness, "policy": t.policy, "sample": t.sample,
                "turn": call.turn, "parsed": p.parsed, "lines": p.lines, "loops": p.loops, "conditionals": p.conditionals,
                "try_blocks": p.try_blocks, "comprehensions": p.comprehensions, "functions": p.functions,
                "tool_call_sites": p.tool_call_sites, "task_tool_calls": call.task_tool_calls, "dtc_like": p.dtc_like,
                "runtime_error": call.runtime_error, "timed_out": call.timed_out, "observation_tokens": call.observation_tokens,
            })
    return pl.DataFrame(rows)
