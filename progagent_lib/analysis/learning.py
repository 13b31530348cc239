"""What training changed: pass rate on the held-out splits by stage (base, memorization baseline, SFT, GSPO, the
SFT control) and recipe harness, with 95% intervals.

Reads `runs/<profile>/learning.jsonl` (one row per stage, recipe, harness, split and decoding, written by
`progagent_lib.train.pipeline.Recipe.evaluate`) and draws it; and the teacher's needs, per harness, against the
model's context (what DTC does within the small model's 8,192 positions).
"""

from __future__ import annotations

from pathlib import Path

import altair as alt
import polars as pl

from ..train.common import SPLIT_ORDER as _SPLIT_ORDER
from ..train.common import STAGE_LABELS, STAGES
from .style import HARNESS_LABELS, harness_color, harness_order, require_rows

SPLIT_ORDER = list(_SPLIT_ORDER)
SPLIT_LABELS = {"seeds": "(a) held-out seeds", "params": "(b) held-out parameters", "tasks": "(c) held-out tasks"}
COLUMNS = [
    "run",
    "commit",
    "stage",
    "recipe",
    "harness",
    "split",
    "decoding",
    "temperature",
    "samples",
    "instances",
    "tasks",
    "episodes",
    "errored",
    "pass_rate",
    "pass_low",
    "pass_high",
    "mean_score",
    "score_low",
    "score_high",
    "task_pass_min",
    "task_pass_max",
    "tasks_with_a_pass",
    "valid_program_rate",
    "runtime_error_rate",
    "claim_done_rate",
    "task_tool_call_rate",
    "tool_output_tokens",
    "model",
]


def learning_frame(path: str | Path) -> pl.DataFrame:
    from ..train.pipeline import read_learning

    rows = read_learning(path)
    if not rows:
        raise FileNotFoundError(f"no learning rows in {path}: run the training notebooks (04, 05) first")
    old = [r for r in rows if "split" not in r]
    if old:
        raise ValueError(
            f"{path}: {len(old)} row(s) without a split, written before the held-out splits existed; "
            "rerun the training notebooks (04, 05) into a fresh run folder"
        )
    return pl.DataFrame([{k: r.get(k) for k in COLUMNS} for r in rows], infer_schema_length=None)


def cross_harness_frame(path: str | Path, decoding: str = "greedy") -> pl.DataFrame:
    """The cross-harness table of a run's learning.jsonl (train.scoring.cross_harness_rows: splits pooled), one row
    per (model, harness played), with a `model` label per stage and recipe; empty without rows."""
    from ..train.pipeline import read_learning
    from ..train.scoring import cross_harness_rows, model_label

    rows = cross_harness_rows(read_learning(path), decoding)
    return pl.DataFrame(
        [{**r, "splits": ",".join(r["splits"]), "model": model_label(r["stage"], r["recipe"])} for r in rows]
    )


def learning_table(frame: pl.DataFrame) -> pl.DataFrame:
    """Split x stage: greedy and sampled pass rate with intervals and mean R~ (each recipe under its own harness)."""
    own = frame.filter(pl.col("recipe") == pl.col("harness"))

    def cell(prefix: str) -> list[pl.Expr]:
        return [
            pl.format(
                "{} ({}-{})", pl.col("pass_rate").round(2), pl.col("pass_low").round(2), pl.col("pass_high").round(2)
            ).alias(prefix),
            pl.format(
                "{} ({}-{})", pl.col("mean_score").round(2), pl.col("score_low").round(2), pl.col("score_high").round(2)
            ).alias(f"{prefix} R~"),
        ]

    keys = ["recipe", "split", "stage"]
    greedy = own.filter(pl.col("decoding") == "greedy").select(*keys, "instances", *cell("greedy"))
    sampled = own.filter(pl.col("decoding") == "sampled").select(*keys, pl.col("samples").alias("k"), *cell("sampled"))
    table = greedy.join(sampled, on=keys, how="left")
    order = {s: i for i, s in enumerate(STAGES)}
    split_order = {s: i for i, s in enumerate(SPLIT_ORDER)}
    return (
        table.with_columns(
            pl.col("stage").replace_strict(order, default=99).alias("_s"),
            pl.col("split").replace_strict(split_order, default=99).alias("_p"),
        )
        .sort("recipe", "_p", "_s")
        .drop("_s", "_p")
        .with_columns(
            pl.col("split").replace_strict(SPLIT_LABELS, default=pl.col("split")),
            pl.col("stage").replace_strict(STAGE_LABELS, default=pl.col("stage")),
        )
    )


def pass_rate_by_split(
    frame: pl.DataFrame, title: str = "Pass rate on held-out instances, by split and stage"
) -> alt.Chart:
    """Points with 95% interval bars: pass rate per stage, one panel per split, greedy and sampled side by side
    (each recipe under its own harness). Several recipes: one row each, labelled 'PTC recipe'; one recipe: its name
    in the title, and no row header (a lone 'Recipe / ptc' label said nothing)."""
    own = require_rows(frame.filter(pl.col("recipe") == pl.col("harness")), "pass_rate_by_split", ["pass_rate"])
    own = own.with_columns(
        pl.col("split").replace_strict(SPLIT_LABELS, default=pl.col("split")).alias("split_label"),
        pl.col("stage").replace_strict(STAGE_LABELS, default=pl.col("stage")).alias("stage_label"),
        pl.format("{} recipe", pl.col("recipe").replace_strict(dict(HARNESS_LABELS), default=pl.col("recipe"))).alias(
            "recipe_label"
        ),
    )
    stages = [STAGE_LABELS[s] for s in STAGES]
    order = {h: i for i, h in enumerate(harness_order())}
    recipes = [
        f"{HARNESS_LABELS.get(r, r)} recipe" for r in sorted(own["recipe"].unique(), key=lambda r: order.get(r, 99))
    ]
    base = alt.Chart(own).encode(
        x=alt.X("stage_label:N", sort=stages, title="Stage", axis=alt.Axis(labelAngle=-30)),
        xOffset=alt.XOffset("decoding:N", sort=["greedy", "sampled"]),
        color=alt.Color("decoding:N", sort=["greedy", "sampled"], title="Decoding"),
    )
    bars = base.mark_rule(strokeWidth=2).encode(
        y=alt.Y("pass_low:Q", title="Pass rate (R = 1), 95% interval", scale=alt.Scale(domain=[0, 1])), y2="pass_high:Q"
    )
    points = base.mark_point(filled=True, size=60).encode(
        y="pass_rate:Q",
        tooltip=[
            "recipe",
            "split_label",
            "stage_label",
            "decoding",
            "instances",
            "episodes",
            alt.Tooltip("pass_rate:Q", format=".2f"),
            alt.Tooltip("pass_low:Q", format=".2f"),
            alt.Tooltip("pass_high:Q", format=".2f"),
            alt.Tooltip("mean_score:Q", format=".2f"),
        ],
    )
    column = alt.Column("split_label:N", sort=[SPLIT_LABELS[s] for s in SPLIT_ORDER], title=None)
    panels = (bars + points).properties(width=220, height=200)
    if len(recipes) == 1:
        return panels.facet(column=column).properties(title=f"{title} ({recipes[0]}, under its own harness)")
    return panels.facet(column=column, row=alt.Row("recipe_label:N", sort=recipes, title=None)).properties(title=title)


def teacher_needs_chart(needs: pl.DataFrame, positions: int | None = None) -> alt.LayerChart | alt.Chart:
    """Context the teacher needs per task and harness (columns: task_id, harness, context_tokens), with the
    model's positions as a rule."""
    require_rows(needs, "teacher_needs", ["task_id", "harness", "context_tokens"])
    bars = (
        alt.Chart(needs)
        .mark_bar()
        .encode(
            y=alt.Y("task_id:N", title="Task"),
            yOffset=alt.YOffset("harness:N", sort=harness_order()),
            x=alt.X("context_tokens:Q", title="Context tokens the teacher's episode needs"),
            color=harness_color(needs),
            tooltip=["task_id", "harness", "turns", "context_tokens", "longest_turn_tokens"],
        )
    )
    chart = bars
    if positions:
        rule = (
            alt.Chart(pl.DataFrame({"positions": [positions]}))
            .mark_rule(color="black", strokeDash=[4, 3])
            .encode(x="positions:Q")
        )
        chart = bars + rule
    return chart.properties(
        title=f"Teacher episodes against the model's {positions or '?'} positions",
        width=320,
        height=max(160, 40 * needs["task_id"].n_unique()),
    )
