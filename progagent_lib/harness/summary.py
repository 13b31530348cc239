"""Tables over trajectories (polars), shared by `progagent run` and the notebooks, the one report of an episode and
the one summary of a batch.

`metrics.episode_report` is what every adapter (TRL, OpenEnv, verifiers) reports of one episode: its verdict and the
counters of `metrics.EPISODE_METRICS`. Every mean over episodes is defined once, in `SCORED_MEANS`: `summarize` takes them per
group (the table `progagent run` prints), `episode_summary` over a whole batch (the numbers a training step logs, and
TRL's logs). Errored episodes (`end_reasons.is_errored`) are counted apart and left out of every mean.
"""

from __future__ import annotations

import json
from math import comb
from typing import Any, Iterable, cast

import polars as pl

from .end_reasons import INFRASTRUCTURE_END_REASONS, is_errored
from .metrics import EPISODE_METRICS, episode_report
from .spec import BASELINE_HARNESS, HARNESSES
from .trajectory import Trajectory

GROUP = ("task_id", "scale", "harness", "policy")

# The means over the scored (not errored) episodes of a group or a batch: one definition each.
SCORED_MEANS: dict[str, pl.Expr] = {
    "pass_rate": (pl.col("reward") >= 1.0).mean(),  # R = 1
    "mean_reward": pl.col("reward").mean(),
    "mean_score": pl.col("score").mean(),  # R~
    **{name: pl.col(name).mean() for name in EPISODE_METRICS},
    "truncation_rate": pl.col("truncated").mean(),
    "claim_done_rate": (pl.col("end_reason") == "claim_done").mean(),
}
# The columns of `summarize`'s table, beside the counts and pass@k.
TABLE_MEANS = (
    "pass_rate",
    "mean_score",
    "tool_output_tokens",
    "tool_calls",
    "model_tool_calls",
    "runtime_errors",
    "turns",
)


def is_infra_error(trajectory: Any) -> bool:
    """Whether an episode ended because the policy or its server failed (errored), not because of the task.

    Such an episode says nothing about the model: it is counted apart from pass rates, and retried on resume.
    `end_reasons.is_errored` decides; this reads a trajectory's (or an `EpisodeTokens`') end reason.
    """
    return is_errored(trajectory.end_reason)


def trajectories_frame(trajectories: Iterable[Trajectory]) -> pl.DataFrame:
    """One row per episode with its verdict and metrics."""
    rows = [
        {
            "task_id": t.task_id,
            "scale": t.scale,
            "seed": t.seed,
            "harness": t.harness,
            "policy": t.policy,
            "sample": t.sample,
            "params": json.dumps(t.params, sort_keys=True),
            "end_reason": t.end_reason,
            "errored": t.errored,
            "truncated": t.truncated,
            **episode_report(t),
            "programs": len(t.programs),
            "dtc_like_programs": t.dtc_like_programs,
            "seconds": t.seconds,
        }
        for t in trajectories
    ]
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
    return frame.with_columns(pl.col("end_reason").is_in(sorted(INFRASTRUCTURE_END_REASONS)).alias("errored"))


def summarize(
    trajectories: Iterable[Trajectory] | pl.DataFrame, k: int | None = None, by: tuple[str, ...] = GROUP
) -> pl.DataFrame:
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
    counts = frame.group_by(list(by)).agg(
        pl.len().alias("episodes"), pl.col("errored").sum().cast(pl.Int64).alias("errored")
    )
    per_seed = scored.group_by([*by, "seed"]).agg(pl.len().alias("n"), (pl.col("reward") >= 1.0).sum().alias("c"))
    k = k or (cast(int, per_seed["n"].min()) if not per_seed.is_empty() else 1)  # a count: polars types it any literal
    per_seed = per_seed.with_columns(
        pl.struct("n", "c")
        .map_elements(lambda r: pass_at_k(r["n"], r["c"], min(k, r["n"])), return_dtype=pl.Float64)
        .alias("pass_at_k")
    )
    means = scored.group_by(list(by)).agg(SCORED_MEANS[name].alias(name) for name in TABLE_MEANS)
    pass_k = per_seed.group_by(list(by)).agg(pl.col("pass_at_k").mean().alias(f"pass@{k}"))
    table = counts.join(means, on=list(by), how="left").join(pass_k, on=list(by), how="left").sort(list(by))
    order = [*by, "episodes", "errored", "pass_rate", f"pass@{k}", *TABLE_MEANS[1:]]
    return table.select(order)


# episode_summary's key for the batch mean of each entry of `episode_report` (the training-dynamics logs' names)
SUMMARY_KEYS: dict[str, str] = {
    "reward": "mean_reward",
    "score": "mean_score",
    **{name: f"{name}_per_episode" for name in EPISODE_METRICS},
}


def episode_summary(trajectories: Iterable[Trajectory]) -> dict[str, Any]:
    """One batch of episodes in numbers: the quantities of the paper's training-dynamics figures and more.

    `episodes`, `errored_episodes`, `end_reasons` (counts over all episodes), then over the scored ones:
    every mean of `SCORED_MEANS` (the counters named `<metric>_per_episode`: `SUMMARY_KEYS`) and the share of
    DTC-like programs. With no scored episode the means are 0.0 (a training log wants numbers).
    """
    trajectories = list(trajectories)
    frame = trajectories_frame(trajectories)
    summary: dict[str, Any] = {"episodes": len(trajectories), "errored_episodes": 0}
    end_reasons: dict[str, int] = {}
    for t in trajectories:
        end_reasons[t.end_reason] = end_reasons.get(t.end_reason, 0) + 1
    scored = frame.filter(~pl.col("errored")) if not frame.is_empty() else frame
    summary["errored_episodes"] = len(trajectories) - scored.height
    means = (
        scored.select(expr.alias(name) for name, expr in SCORED_MEANS.items()).row(0, named=True)
        if scored.height
        else dict.fromkeys(SCORED_MEANS, 0.0)
    )
    for name, value in means.items():
        summary[SUMMARY_KEYS.get(name, name)] = float(value or 0.0)
    programs = int(scored["programs"].sum()) if scored.height else 0
    summary["dtc_like_program_share"] = int(scored["dtc_like_programs"].sum()) / programs if programs else 0.0
    summary["end_reasons"] = end_reasons
    return summary


def print_table(table: pl.DataFrame) -> None:
    """Print a whole table (no elided rows or columns), numbers rounded for reading."""
    floats = [c for c, dtype in table.schema.items() if dtype == pl.Float64]
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=250, fmt_str_lengths=60, tbl_hide_dataframe_shape=True):
        print(table.with_columns([pl.col(c).round(3) for c in floats]))


def cost_by_harness(
    trajectories: Iterable[Trajectory] | pl.DataFrame, metric: str = "tool_output_tokens"
) -> pl.DataFrame:
    """Mean `metric` per episode, one row per scale and one column per harness (all tasks pooled),
    plus the ratios of the baseline (DTC) to each other harness present (DTC/PTC, DTC/Hybrid)."""
    frame = trajectories if isinstance(trajectories, pl.DataFrame) else trajectories_frame(trajectories)
    table = (
        frame.group_by("scale", "harness")
        .agg(pl.col(metric).mean())
        .pivot(on="harness", index="scale", values=metric)
        .sort("scale")
    )
    harnesses = [h for h in HARNESSES if h in table.columns]
    table = table.select("scale", *harnesses, *[c for c in table.columns if c not in ("scale", *harnesses)])
    for other in [h for h in harnesses if h != BASELINE_HARNESS]:
        if BASELINE_HARNESS in table.columns:
            table = table.with_columns((pl.col(BASELINE_HARNESS) / pl.col(other)).alias(f"{BASELINE_HARNESS}/{other}"))
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
            rows.append(
                {
                    "task_id": t.task_id,
                    "scale": t.scale,
                    "harness": t.harness,
                    "policy": t.policy,
                    "sample": t.sample,
                    "turn": call.turn,
                    "parsed": p.parsed,
                    "lines": p.lines,
                    "loops": p.loops,
                    "conditionals": p.conditionals,
                    "try_blocks": p.try_blocks,
                    "comprehensions": p.comprehensions,
                    "functions": p.functions,
                    "tool_call_sites": p.tool_call_sites,
                    "task_tool_calls": call.task_tool_calls,
                    "dtc_like": p.dtc_like,
                    "runtime_error": call.runtime_error,
                    "timed_out": call.timed_out,
                    "observation_tokens": call.observation_tokens,
                }
            )
    return pl.DataFrame(rows)
