"""The workbench's figures, each a function from a polars table to an altair chart.

Notebooks build the tables with the library and draw them through `style.save_figure` (PNG + SVG + the rows drawn).
A table without rows is refused (`style.NoFigureData`): a figure is never drawn from no data.
"""

from __future__ import annotations

from typing import cast

import altair as alt
import polars as pl

from .style import (
    SCALE_ORDER,
    NoFigureData,
    require_updates,
    harness_color,
    harness_order,
    harness_shape,
    require_rows,
    step_axis,
    y_scale,
)

WIDTH, HEIGHT = 320, 220
SCALE_AXIS = alt.X("scale:N", sort=SCALE_ORDER, title="Environment scale", axis=alt.Axis(labelAngle=0))


def pool_domains(tasks_per_domain: pl.DataFrame) -> alt.Chart:
    """Bar chart: tasks per domain (columns: domain, tasks)."""
    require_rows(tasks_per_domain, "pool_domains", ["domain", "tasks"])
    return (
        alt.Chart(tasks_per_domain)
        .mark_bar(color="#4c78a8")
        .encode(
            x=alt.X("tasks:Q", title="Tasks"),
            y=alt.Y("domain:N", sort="-x", title="Domain"),
            tooltip=["domain", "tasks"],
        )
        .properties(title="Task pool: tasks per domain", width=WIDTH, height=max(HEIGHT, 16 * tasks_per_domain.height))
    )


def pool_tools_per_task(tools_per_task: pl.DataFrame) -> alt.Chart:
    """Histogram of tools per task (column: tools)."""
    require_rows(tools_per_task, "pool_tools_per_task", ["tools"])
    return (
        alt.Chart(tools_per_task)
        .mark_bar(color="#72b7b2")
        .encode(
            x=alt.X("tools:O", title="Tools per task (count)", axis=alt.Axis(labelAngle=0)),
            y=alt.Y("count():Q", title="Tasks"),
        )
        .properties(title="Task pool: tools per task", width=WIDTH, height=HEIGHT)
    )


def _growth(per_scale: pl.DataFrame, column: str) -> str:
    """'grows ~x8': the last scale's mean over the first's, as measured (not a number written into a title)."""
    values = per_scale.sort(pl.col("scale").replace_strict({s: i for i, s in enumerate(SCALE_ORDER)}, default=99))[
        column
    ]
    first, last = cast(float, values.first()), cast(float, values.last())  # means: numbers, not any polars literal
    return f"grows ~x{last / first:.0f}" if first else "per scale"


def environment_size(per_scale: pl.DataFrame) -> alt.HConcatChart:
    """Mean database size (KB) and workspace files per scale (columns: scale, mean_db_kb, mean_files)."""
    require_rows(per_scale, "environment_size", ["scale", "mean_db_kb", "mean_files"])
    base = alt.Chart(per_scale).encode(x=SCALE_AXIS)
    db = (
        base.mark_bar(color="#4c78a8")
        .encode(y=alt.Y("mean_db_kb:Q", title="Mean database size (KB)"))
        .properties(title=f"Database {_growth(per_scale, 'mean_db_kb')}", width=WIDTH // 1.5, height=HEIGHT)
    )
    files = (
        base.mark_bar(color="#f58518")
        .encode(y=alt.Y("mean_files:Q", title="Mean workspace files (count)"))
        .properties(title=f"Workspace {_growth(per_scale, 'mean_files')}", width=WIDTH // 1.5, height=HEIGHT)
    )
    return alt.hconcat(db, files).properties(title="Environment size per scale")


def harness_metric_by_scale(
    summary: pl.DataFrame,
    metric: str,
    title: str,
    y_title: str,
    scale: alt.Scale | None = None,
    axis_format: str | None = None,
) -> alt.LayerChart:
    """One line per harness over the scales (columns: scale, harness, <metric>; averaged over tasks). The harnesses
    sit side by side at each scale, each with its own colour and point shape, so that equal values stay visible."""
    require_rows(summary, title, ["scale", "harness", metric])
    data = summary.group_by(["scale", "harness"]).agg(pl.col(metric).mean()).sort(["harness", "scale"])
    base = alt.Chart(data).encode(
        x=SCALE_AXIS,
        xOffset=alt.XOffset("harness:N", sort=harness_order(), scale=alt.Scale(paddingOuter=0.6)),
        y=alt.Y(
            f"{metric}:Q",
            title=y_title,
            scale=scale or alt.Scale(),
            axis=alt.Axis(format=axis_format) if axis_format else alt.Axis(),
        ),
        color=harness_color(data).legend(symbolOpacity=1),
        tooltip=["harness", "scale", alt.Tooltip(f"{metric}:Q", format=".4g")],
    )
    lines = base.mark_line(strokeWidth=1.5, opacity=0.6)
    points = base.mark_point(filled=True, size=70, opacity=1).encode(shape=harness_shape(data))
    return (lines + points).properties(title=title, width=WIDTH * 0.75, height=HEIGHT)


def harness_comparison(summary: pl.DataFrame) -> alt.HConcatChart:
    """Tool-output tokens (log axis: DTC's tens of thousands beside PTC's hundreds), tool calls and pass rate per
    episode, by harness and scale."""
    return alt.hconcat(
        harness_metric_by_scale(
            summary,
            "tool_output_tokens",
            "Tool output entering context",
            "Tokens per episode (log scale)",
            alt.Scale(type="log"),
            "~s",
        ),
        harness_metric_by_scale(summary, "tool_calls", "Task-tool calls", "Calls per episode"),
        harness_metric_by_scale(
            summary, "pass_rate", "Pass rate", "Share of episodes with R = 1", alt.Scale(domain=[0, 1])
        ),
    ).properties(title="DTC vs PTC vs Hybrid as the environment grows")


DYNAMICS_PANELS = [
    ("mean_reward", "Mean reward", "Share of rollouts with R = 1", True),
    ("tool_output_tokens_per_episode", "Tool-output tokens per episode", "Tokens", False),
    ("tool_calls_per_episode", "Tool calls per episode", "Calls", False),
    ("runtime_errors_per_episode", "Runtime errors per episode", "Errors", False),
    ("dtc_like_program_share", "DTC-like programs", "Share of programs (one call, printed whole)", True),
    ("truncation_rate", "Episodes ended on a budget", "Share of rollouts", True),
]


def training_dynamics(dynamics: pl.DataFrame) -> alt.VConcatChart:
    """Per RL step, one line per harness (columns: step, harness, mean_reward, tool_output_tokens_per_episode,
    tool_calls_per_episode, runtime_errors_per_episode: the rows of the GSPO dynamics log). The reward is a share
    of rollouts with R = 1: its axis is [0, 1]; a constant series gets an axis around its value."""
    require_rows(dynamics, "training_dynamics", ["step", "harness"])
    require_updates(dynamics, "training_dynamics")
    shown = [p for p in DYNAMICS_PANELS if p[0] in dynamics.columns and dynamics[p[0]].drop_nulls().len()]
    if not shown:
        raise NoFigureData(
            f"training_dynamics: no values in any of {', '.join(p[0] for p in DYNAMICS_PANELS)}; no figure is saved"
        )
    charts = [
        alt.Chart(dynamics.filter(pl.col(col).is_not_null()))
        .mark_line(point=True)
        .encode(
            x=step_axis(dynamics["step"], "RL step"),
            y=alt.Y(f"{col}:Q", title=y, scale=y_scale(dynamics[col], unit)),
            color=harness_color(dynamics),
            tooltip=["harness", "step", col],
        )
        .properties(title=title, width=WIDTH // 1.3, height=HEIGHT // 1.3)
        for col, title, y, unit in shown
    ]
    rows = [alt.hconcat(*charts[i : i + 2]) for i in range(0, len(charts), 2)]
    return alt.vconcat(*rows).properties(title="GSPO training dynamics")


def cross_harness(evaluation: pl.DataFrame) -> alt.LayerChart:
    """Heatmap: pass rate of each trained model (rows) under each harness (columns)."""
    require_rows(evaluation, "cross_harness", ["model", "harness", "pass_rate"])
    base = alt.Chart(evaluation).encode(
        x=alt.X("harness:N", sort=harness_order(), title="Evaluated under", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("model:N", title="Trained model"),
    )
    heat = base.mark_rect().encode(
        color=alt.Color("pass_rate:Q", title="Pass rate", scale=alt.Scale(domain=[0, 1], scheme="greens"))
    )
    text = base.mark_text(baseline="middle").encode(text=alt.Text("pass_rate:Q", format=".2f"))
    return (heat + text).properties(
        title="Cross-harness evaluation (held-out seeds)", width=WIDTH // 1.3, height=HEIGHT // 1.3
    )


def cross_harness_learning(table: pl.DataFrame) -> alt.LayerChart:
    """Heatmap of the cross-harness table (train.scoring.cross_harness_rows, with a `model` label per stage and
    recipe): pass rate of each model (rows) under each harness (columns), 'passed/instances' written in each cell,
    the 95% interval in the tooltip."""
    require_rows(table, "cross_harness_learning", ["model", "harness", "pass_rate"])
    label = [f"{p:g}/{n}" for p, n in zip(table["passed"], table["instances"])]
    frame = table.with_columns(
        label=pl.Series(label), interval=pl.format("{}-{}", pl.col("pass_low").round(2), pl.col("pass_high").round(2))
    )
    models = list(dict.fromkeys(table["model"].to_list()))
    base = alt.Chart(frame).encode(
        x=alt.X("harness:N", sort=harness_order(), title="Evaluated under", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("model:N", sort=models, title=None),
    )
    heat = base.mark_rect().encode(
        color=alt.Color("pass_rate:Q", title="Pass rate", scale=alt.Scale(domain=[0, 1], scheme="greens")),
        tooltip=[
            "model",
            "harness",
            "label",
            alt.Tooltip("interval:N", title="95% CI"),
            alt.Tooltip("mean_score:Q", format=".2f", title="mean R~"),
        ],
    )
    text = base.mark_text(baseline="middle").encode(text="label:N")
    return (heat + text).properties(
        title="Each recipe's models under each harness (held-out instances)",
        width=WIDTH // 1.3,
        height=max(HEIGHT // 1.3, 22 * len(models)),
    )


def pass_rate_by_scale(evaluation: pl.DataFrame, group: str = "variant") -> alt.LayerChart:
    """Pass rate per scale, one line per variant (e.g. full vs v0-only training, isError on vs off). The variants
    sit side by side at each scale with their own point shape, so that equal pass rates (often all 0) stay visible."""
    require_rows(evaluation, "pass_rate_by_scale", ["scale", group, "pass_rate"])
    variants = list(dict.fromkeys(evaluation.sort(group)[group].to_list()))
    title = group.replace("_", " ").capitalize()
    base = alt.Chart(evaluation).encode(
        x=SCALE_AXIS,
        xOffset=alt.XOffset(f"{group}:N", sort=variants, scale=alt.Scale(paddingOuter=0.6)),
        y=alt.Y("pass_rate:Q", title="Pass rate", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color(f"{group}:N", title=title, sort=variants, scale=alt.Scale(domain=variants)).legend(
            symbolOpacity=1
        ),
        tooltip=[group, "scale", "pass_rate"],
    )
    points = base.mark_point(filled=True, size=70, opacity=1).encode(  # same title and domain: one legend
        shape=alt.Shape(f"{group}:N", title=title, sort=variants, scale=alt.Scale(domain=variants))
    )
    return (base.mark_line(opacity=0.6) + points).properties(
        title="Ablations: pass rate by scale", width=WIDTH, height=HEIGHT
    )


def program_structures(structures: pl.DataFrame) -> alt.Chart:
    """Share of programs using each construct (columns: source, construct, share)."""
    require_rows(structures, "program_structures", ["source", "construct", "share"])
    return (
        alt.Chart(structures)
        .mark_bar()
        .encode(
            x=alt.X("share:Q", title="Share of programs", scale=alt.Scale(domain=[0, 1])),
            y=alt.Y("construct:N", title=None),
            color=alt.Color("source:N", title="Programs from"),
            yOffset="source:N",
            tooltip=["source", "construct", "share"],
        )
        .properties(title="Program structures used", width=WIDTH, height=HEIGHT)
    )


def dtc_like_share(shares: pl.DataFrame) -> alt.LayerChart:
    """Share of DTC-like programs (one call, no control flow, printed whole) per source (columns: source, share),
    written above each bar (a share of 0 draws no bar)."""
    require_rows(shares, "dtc_like_share", ["source", "share"])
    base = alt.Chart(shares).encode(
        x=alt.X("source:N", title="Programs from", axis=alt.Axis(labelAngle=-30)),
        y=alt.Y("share:Q", title="Share of DTC-like programs", scale=alt.Scale(domain=[0, 1])),
        tooltip=["source", "share"],
    )
    bars = base.mark_bar(color="#e45756")
    labels = base.mark_text(dy=-8).encode(text=alt.Text("share:Q", format=".0%"))
    return (bars + labels).properties(title="DTC-like programmatic calls", width=WIDTH // 1.5, height=HEIGHT)
