"""The cross-harness table on external suites: several policies (the suite's reference, the memorization baseline,
the base model, each trained model) played under each harness on the same tasks, in one table; its figure is the
analysis layer's (`analysis.benchmark_figures.comparison_chart`).

    rows = {"ground-truth": GroundTruthPolicy, "fixed-reference": lambda h: FixedReferencePolicy(h, bench),
            "base": lambda h: model}
    trajectories = compare_policies({"bfcl": (bench, tasks)}, rows, [BASELINE_HARNESS, DEFAULT_HARNESS], out_dir)
    table = comparison_table(trajectories)        # per suite, policy, harness: pass rate with its 95% interval
    chart = analysis.benchmark_figures.comparison_chart(table)   # its figure (the analysis layer draws)

Each (suite, policy) goes to its own JSON-lines file under `out_dir` (resumable: a rerun skips finished episodes).
The pass rate is the suite's own verdict over every episode that did not error (a policy failure, kept out and
counted), each with its Wilson interval over tasks; one sample per (task, harness), so the interval is over tasks.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import polars as pl

from ..harness.episode import Limits
from ..harness.trajectory import Trajectory
from ..stats import wilson_interval
from .base import Benchmark, ExternalTask
from .run import bench_frame, run_benchmark


def compare_policies(
    suites: Mapping[str, tuple[Benchmark, Sequence[ExternalTask]]],
    rows: Mapping[str, Callable[[str], Any] | Mapping[str, Any]],
    harnesses: Sequence[str],
    out_dir: str | Path,
    *,
    limits: Limits | None = None,
    limits_for: Mapping[str, Limits] | None = None,
    progress: bool = True,
    workers: int = 1,
) -> list[Trajectory]:
    """Every row's policy on every suite's tasks under every harness. `rows`: label -> (harness -> policy) or a
    dict harness -> policy; the label becomes the trajectories' `policy`. `limits_for` gives a row its own budgets
    (e.g. a model's turn and context bounds), else `limits`, else our defaults. A suite task whose episode raises is
    reported on stderr by `run_benchmark` and left out (never written, retried on a rerun). `workers`: episodes
    played at once (run_benchmark)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    trajectories: list[Trajectory] = []
    for suite, (bench, tasks) in suites.items():
        for label, make in rows.items():
            policies = dict(make) if isinstance(make, Mapping) else {h: make(h) for h in harnesses}
            for policy in policies.values():
                policy.name = label  # the row's label names its episodes (and their resume keys)
            out = out_dir / f"{suite}__{_slug(label)}.jsonl"
            result = run_benchmark(
                bench,
                tasks,
                harnesses,
                policies,
                out,
                progress=progress,
                limits=(limits_for or {}).get(label, limits),
                desc=f"{suite} {label}",
                workers=workers,
            )
            trajectories += result.trajectories
    return trajectories


def _slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", label).strip("_") or "policy"


def comparison_table(trajectories: Sequence[Trajectory], order: Sequence[str] | None = None) -> pl.DataFrame:
    """Per suite, policy and harness: tasks, errored episodes (kept out), passed, the pass rate by the suite's own
    checker with its 95% Wilson interval, the share ending with claim_done, the share cut by a budget (the model's
    context included), the share of attached injections followed (AgentDojo with injections; the column is left
    out when no episode had one), task-tool calls and tool-output tokens per episode. `order` sorts the policies."""
    frame = bench_frame(trajectories)
    if frame.is_empty():
        return frame
    frame = frame.with_columns(pl.Series("suite", [suite_of(t.task_id) for t in trajectories]))
    scored = frame.filter(~pl.col("errored"))
    table = (
        frame.group_by(["suite", "policy", "harness"])
        .agg(pl.len().alias("tasks"), pl.col("errored").sum().alias("errored"))
        .join(
            scored.group_by(["suite", "policy", "harness"]).agg(
                pl.col("utility").sum().alias("passed"),
                (pl.col("end_reason") == "claim_done").mean().alias("claim_done_rate"),
                pl.col("truncated").mean().alias("truncated_rate"),
                pl.col("injection_followed").mean().alias("injection_followed"),
                pl.col("tool_calls").mean().alias("tool_calls"),
                pl.col("tool_output_tokens").mean().alias("tool_output_tokens"),
            ),
            on=["suite", "policy", "harness"],
            how="left",
        )
        .with_columns(pl.col("passed").fill_null(0))
    )
    scored_n = (table["tasks"] - table["errored"]).to_list()
    intervals = [
        wilson_interval(int(p), int(n)) if n else (None, None) for p, n in zip(table["passed"].to_list(), scored_n)
    ]
    table = table.with_columns(
        pl.Series(
            "pass_rate", [p / n if n else None for p, n in zip(table["passed"].to_list(), scored_n)], dtype=pl.Float64
        ),
        pl.Series("pass_low", [lo for lo, _ in intervals], dtype=pl.Float64),
        pl.Series("pass_high", [hi for _, hi in intervals], dtype=pl.Float64),
    )
    rank = {name: i for i, name in enumerate(order or [])}
    table = table.with_columns(pl.col("policy").replace_strict(rank, default=len(rank)).alias("_rank"))
    columns = [
        "suite",
        "policy",
        "harness",
        "tasks",
        "errored",
        "passed",
        "pass_rate",
        "pass_low",
        "pass_high",
        "claim_done_rate",
        "truncated_rate",
        "injection_followed",
        "tool_calls",
        "tool_output_tokens",
    ]
    table = table.sort(["suite", "_rank", "policy", "harness"]).select(columns)
    if table["injection_followed"].null_count() == table.height:
        table = table.drop("injection_followed")
    return table


def suite_of(task_id: str) -> str:
    """The table's suite of a task id: its first part, `+injections` for an AgentDojo task with an injection task
    attached (`agentdojo/<suite>/<user task>/<injection task>`)."""
    parts = task_id.split("/")
    return parts[0] + ("+injections" if parts[0] == "agentdojo" and len(parts) >= 4 else "")


__all__ = ["compare_policies", "comparison_table", "suite_of"]
