"""What training changed: pass rate on held-out seeds by stage (base, SFT, GSPO) and recipe harness.

Reads `runs/<profile>/learning.jsonl` (one row per stage, recipe, harness and scale, written by
`progagent_lib.train.pipeline.Recipe.evaluate`) and draws it; and the teacher's needs, per harness, against the
model's context (what DTC does within the small model's 8,192 positions).
"""
from __future__ import annotations

from pathlib import Path

import altair as alt
import polars as pl

from .style import HARNESS_ORDER, harness_color

STAGE_ORDER = ["base", "sft", "gspo"]


def learning_frame(path: str | Path) -> pl.DataFrame:
    from ..train.pipeline import read_learning

    rows = read_learning(path)
    if not rows:
        raise FileNotFoundError(f"no learning rows in {path}: run the training notebooks (04, 05) first")
    return pl.DataFrame(rows).select("stage", "recipe", "harness", "scale", "episodes", "errored", "pass_rate",
                                     "mean_score", "claim_done_rate", "model")


def pass_rate_by_stage(frame: pl.DataFrame, title: str = "Pass rate on held-out seeds, by training stage") -> alt.Chart:
    """Grouped bars: pass rate per stage, one colour per harness (a recipe evaluated under its own harness)."""
    own = frame.filter(pl.col("recipe") == pl.col("harness"))
    data = own.group_by("stage", "harness").agg(pl.col("pass_rate").mean(), pl.col("mean_score").mean(),
                                                pl.col("episodes").sum())
    return alt.Chart(data).mark_bar().encode(
        x=alt.X("stage:N", sort=STAGE_ORDER, title="Stage"),
        xOffset=alt.XOffset("harness:N", sort=HARNESS_ORDER),
        y=alt.Y("pass_rate:Q", title="Pass rate (R = 1)", scale=alt.Scale(domain=[0, 1])),
        color=harness_color(),
        tooltip=["stage", "harness", "episodes", alt.Tooltip("pass_rate:Q", format=".2f"),
                 alt.Tooltip("mean_score:Q", format=".2f")],
    ).properties(title=title, width=260, height=220)


def teacher_needs_chart(needs: pl.DataFrame, positions: int | None = None) -> alt.LayerChart | alt.Chart:
    """Context the teacher needs per task and harness (columns: task_id, harness, context_tokens), with the
    model's positions as a rule."""
    bars = alt.Chart(needs).mark_bar().encode(
        y=alt.Y("task_id:N", title="Task"), yOffset=alt.YOffset("harness:N", sort=HARNESS_ORDER),
        x=alt.X("context_tokens:Q", title="Context tokens the teacher's episode needs"),
        color=harness_color(), tooltip=["task_id", "harness", "turns", "context_tokens", "longest_turn_tokens"],
    )
    chart = bars
    if positions:
        rule = alt.Chart(pl.DataFrame({"positions": [positions]})).mark_rule(color="black", strokeDash=[4, 3]).encode(
            x="positions:Q")
        chart = bars + rule
    return chart.properties(title=f"Teacher episodes against the model's {positions or '?'} positions", width=320,
                            height=max(160, 40 * needs["task_id"].n_unique()))
