"""The workbench's figures, each a function from a polars table to an altair chart.

Notebooks build the tables with the library and call these; `save_chart` writes PNG + SVG.
"""
from __future__ import annotations

import altair as alt
import polars as pl

from .style import HARNESS_ORDER, SCALE_ORDER, harness_color

WIDTH, HEIGHT = 320, 220


def _frame(table: pl.DataFrame) -> pl.DataFrame:
    return table  # altair reads polars frames directly (through narwhals)


def pool_domains(tasks_per_domain: pl.DataFrame) -> alt.Chart:
    """Bar chart: tasks per domain (columns: domain, tasks)."""
    return alt.Chart(_frame(tasks_per_domain)).mark_bar(color="#4c78a8").encode(
        x=alt.X("tasks:Q", title="Tasks"), y=alt.Y("domain:N", sort="-x", title="Domain"),
        tooltip=["domain", "tasks"],
    ).properties(title="Task pool: tasks per domain", width=WIDTH, height=max(HEIGHT, 16 * tasks_per_domain.height))


def pool_tools_per_task(tools_per_task: pl.DataFrame) -> alt.Chart:
    """Histogram of tools per task (column: tools)."""
    return alt.Chart(_frame(tools_per_task)).mark_bar(color="#72b7b2").encode(
        x=alt.X("tools:O", title="Tools per task (count)"), y=alt.Y("count():Q", title="Tasks"),
    ).properties(title="Task pool: tools per task", width=WIDTH, height=HEIGHT)


def environment_size(per_scale: pl.DataFrame) -> alt.HConcatChart:
    """Mean database size (KB) and workspace files per scale (columns: scale, mean_db_kb, mean_files)."""
    base = alt.Chart(_frame(per_scale)).encode(x=alt.X("scale:N", sort=SCALE_ORDER, title="Environment scale"))
    db = base.mark_bar(color="#4c78a8").encode(y=alt.Y("mean_db_kb:Q", title="Mean database size (KB)")).properties(
        title="Database grows ~x8", width=WIDTH // 1.5, height=HEIGHT)
    files = base.mark_bar(color="#f58518").encode(y=alt.Y("mean_files:Q", title="Mean workspace files (count)")).properties(
        title="Workspace grows ~x4", width=WIDTH // 1.5, height=HEIGHT)
    return alt.hconcat(db, files).properties(title="Environment size per scale")


def harness_metric_by_scale(summary: pl.DataFrame, metric: str, title: str, y_title: str) -> alt.Chart:
    """One line per harness over v0..v3 (columns: scale, harness, <metric>; averaged over tasks)."""
    data = summary.group_by(["scale", "harness"]).agg(pl.col(metric).mean()).sort(["harness", "scale"])
    return alt.Chart(_frame(data)).mark_line(point=True).encode(
        x=alt.X("scale:N", sort=SCALE_ORDER, title="Environment scale"),
        y=alt.Y(f"{metric}:Q", title=y_title), color=harness_color(), tooltip=["harness", "scale", metric],
    ).properties(title=title, width=WIDTH, height=HEIGHT)


def harness_comparison(summary: pl.DataFrame) -> alt.HConcatChart:
    """Tool-output tokens, tool calls and pass rate per episode, by harness and scale."""
    return alt.hconcat(
        harness_metric_by_scale(summary, "tool_output_tokens", "Tool output entering context", "Tokens per episode"),
        harness_metric_by_scale(summary, "tool_calls", "Task-tool calls", "Calls per episode"),
        harness_metric_by_scale(summary, "pass_rate", "Pass rate", "Share of episodes with R = 1"),
    ).properties(title="DTC vs PTC vs Hybrid as the environment grows")


def training_dynamics(dynamics: pl.DataFrame) -> alt.VConcatChart:
    """Per RL step, one line per harness (columns: step, harness, mean_reward, tool_output_tokens_per_episode,
    tool_calls_per_episode, runtime_errors_per_episode: the rows of the GSPO dynamics log)."""
    panels = [("mean_reward", "Mean reward", "Reward (R)"),
              ("tool_output_tokens_per_episode", "Tool-output tokens per episode", "Tokens"),
              ("tool_calls_per_episode", "Tool calls per episode", "Calls"),
              ("runtime_errors_per_episode", "Runtime errors per episode", "Errors")]
    charts = [alt.Chart(_frame(dynamics)).mark_line(point=True).encode(
        x=alt.X("step:Q", title="RL step", axis=alt.Axis(tickMinStep=1, format="d")), y=alt.Y(f"{col}:Q", title=y), color=harness_color(),
        tooltip=["harness", "step", col]).properties(title=title, width=WIDTH // 1.3, height=HEIGHT // 1.3)
        for col, title, y in panels if col in dynamics.columns]
    rows = [alt.hconcat(*charts[i:i + 2]) for i in range(0, len(charts), 2)]
    return alt.vconcat(*rows).properties(title="GSPO training dynamics")


def cross_harness(evaluation: pl.DataFrame) -> alt.Chart:
    """Heatmap: pass rate of each trained model (rows) under each harness (columns)."""
    base = alt.Chart(_frame(evaluation)).encode(
        x=alt.X("harness:N", sort=HARNESS_ORDER, title="Evaluated under"),
        y=alt.Y("model:N", title="Trained model"))
    heat = base.mark_rect().encode(color=alt.Color("pass_rate:Q", title="Pass rate", scale=alt.Scale(domain=[0, 1], scheme="greens")))
    text = base.mark_text(baseline="middle").encode(text=alt.Text("pass_rate:Q", format=".2f"))
    return (heat + text).properties(title="Cross-harness evaluation (held-out seeds)", width=WIDTH // 1.3, height=HEIGHT // 1.3)


def cross_harness_learning(table: pl.DataFrame) -> alt.Chart:
    """Heatmap of the cross-harness table (train.scoring.cross_harness_rows, with a `model` label per stage and
    recipe): pass rate of each model (rows) under each harness (columns), 'passed/instances' written in each cell,
    the 95% interval in the tooltip."""
    label = [f"{p:g}/{n}" for p, n in zip(table["passed"], table["instances"])]
    frame = _frame(table.with_columns(
        label=pl.Series(label), interval=pl.format("{}-{}", pl.col("pass_low").round(2), pl.col("pass_high").round(2))))
    models = list(dict.fromkeys(table["model"].to_list()))
    base = alt.Chart(frame).encode(x=alt.X("harness:N", sort=HARNESS_ORDER, title="Evaluated under",
                                           axis=alt.Axis(labelAngle=0)),
                                   y=alt.Y("model:N", sort=models, title=None))
    heat = base.mark_rect().encode(
        color=alt.Color("pass_rate:Q", title="Pass rate", scale=alt.Scale(domain=[0, 1], scheme="greens")),
        tooltip=["model", "harness", "label", alt.Tooltip("interval:N", title="95% CI"),
                 alt.Tooltip("mean_score:Q", format=".2f", title="mean R~")])
    text = base.mark_text(baseline="middle").encode(text="label:N")
    return (heat + text).properties(title="Each recipe's models under each harness (held-out instances)",
                                    width=WIDTH // 1.3, height=max(HEIGHT // 1.3, 22 * len(models)))


def pass_rate_by_scale(evaluation: pl.DataFrame, group: str = "variant") -> alt.Chart:
    """Pass rate per scale, one line per variant (e.g. full vs v0-only training, isError on vs off)."""
    return alt.Chart(_frame(evaluation)).mark_line(point=True).encode(
        x=alt.X("scale:N", sort=SCALE_ORDER, title="Environment scale"),
        y=alt.Y("pass_rate:Q", title="Pass rate", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color(f"{group}:N", title=group.replace("_", " ").capitalize()), tooltip=[group, "scale", "pass_rate"],
    ).properties(title="Ablations: pass rate by scale", width=WIDTH, height=HEIGHT)


def program_structures(structures: pl.DataFrame) -> alt.Chart:
    """Share of programs using each construct (columns: source, construct, share)."""
    return alt.Chart(_frame(structures)).mark_bar().encode(
        x=alt.X("share:Q", title="Share of programs", scale=alt.Scale(domain=[0, 1])),
        y=alt.Y("construct:N", title=None), color=alt.Color("source:N", title="Programs from"),
        yOffset="source:N", tooltip=["source", "construct", "share"],
    ).properties(title="Program structures used", width=WIDTH, height=HEIGHT)


def dtc_like_share(shares: pl.DataFrame) -> alt.Chart:
    """Share of DTC-like programs (one call, no control flow, printed whole) per source (columns: source, share)."""
    return alt.Chart(_frame(shares)).mark_bar(color="#e45756").encode(
        x=alt.X("source:N", title="Programs from"), y=alt.Y("share:Q", title="Share of DTC-like programs", scale=alt.Scale(domain=[0, 1])),
        tooltip=["source", "share"],
    ).properties(title="DTC-like programmatic calls", width=WIDTH // 1.5, height=HEIGHT)
