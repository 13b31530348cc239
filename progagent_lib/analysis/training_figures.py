"""Training logs as files and figures: what the trainers print goes to a file, and the notebook shows curves.

The trainers log one record per step: the HF/TRL trainer's log (loss, grad_norm, learning_rate, reward, ...;
printed as a dict per step, or kept as `log_history` in `trainer_state.json`) and the GSPO dynamics log
(`dynamics.jsonl`: mean_reward, mean_score, tool_output_tokens_per_episode, ...). Fields come and go as the
training code changes, so every reader here keeps what it finds, ignores what it does not know, and every
figure draws only the panels whose columns are present; with none, it is refused (`style.NoFigureData`) rather
than drawn as a note.
"""

from __future__ import annotations

import ast
import contextlib
import json
import math
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import altair as alt
import polars as pl

from .style import (
    NoFigureData,
    harness_color,
    harness_order,
    require_rows,
    require_updates,
    step_axis,
    y_scale,
)

TRAINER_LOG = "trainer_log.txt"  # what a training call printed, captured by `logs_to_file`
WIDTH, HEIGHT = 250, 170

# Records of the trainer's log that close a run rather than describe a step.
_SUMMARY_KEYS = ("train_runtime", "train_loss")


@dataclass(frozen=True)
class Panel:
    """One small chart: `column` of a per-step table, under `title`, with the y axis named `y_title`."""

    column: str
    title: str
    y_title: str
    unit_interval: bool = False  # a share in [0, 1]: fix the axis so that runs compare
    axis_format: str | None = None  # d3 format of the y labels (a learning rate of 5e-5 reads "0.00005" otherwise)


@contextlib.contextmanager
def logs_to_file(path: str | Path, append: bool = False) -> Iterator[Path]:
    """Send what the code inside prints (the trainers print one log dict per step) to `path`, not the notebook.

    Progress bars and displayed objects still reach the notebook (they do not go through stdout); errors
    still raise. The file starts afresh (one training run per file) unless `append`.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a" if append else "w") as log, contextlib.redirect_stdout(log):
        yield path
    sys.stdout.flush()


def _number(value):
    """A logged value as a number where it is one (the HF printer formats floats as strings such as '7.622')."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _parse_line(line: str) -> dict | None:
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        record = json.loads(line)
    except ValueError:
        try:  # a printed Python dict; bare nan/inf are not literals
            record = ast.literal_eval(re.sub(r"\b(nan|inf)\b", "None", line))
        except (ValueError, SyntaxError):
            return None
    return record if isinstance(record, dict) else None


def read_log_records(path: str | Path) -> list[dict]:
    """The log records in a file, in order: `trainer_state.json` (its `log_history`), a JSON list, JSON lines,
    or captured stdout with one printed dict per line (other lines are skipped). A missing file gives []."""
    path = Path(path)
    if not path.is_file():
        return []
    text = path.read_text(errors="replace")
    records: list[dict] = []
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict):
            data = data.get("log_history", [])
        if isinstance(data, list):
            records = [r for r in data if isinstance(r, dict)]
    else:
        records = [r for r in map(_parse_line, text.splitlines()) if r is not None]
    return [{key: _number(value) for key, value in r.items()} for r in records]


def trainer_log(records: Sequence[dict]) -> pl.DataFrame:
    """The per-step rows of a trainer's log as a table with a `step` column (1, 2, ... where the log has none).

    The closing summary (train_runtime, train_loss) and evaluation-only records are left out; only scalar
    fields are kept, so a field that appears in some steps and not others is null where missing.
    """
    rows = [r for r in records if not any(k in r for k in _SUMMARY_KEYS)]
    table: list[dict] = []
    for index, record in enumerate(rows, 1):
        row = {
            k: (None if isinstance(v, float) and not math.isfinite(v) else v)
            for k, v in record.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)
        }
        row["step"] = int(record["step"]) if isinstance(record.get("step"), (int, float)) else index
        table.append(row)
    if not table:
        return pl.DataFrame({"step": []}, schema={"step": pl.Int64})
    return pl.DataFrame(table, infer_schema_length=None).with_columns(pl.exclude("step").cast(pl.Float64, strict=False))


def read_trainer_log(folder: str | Path) -> pl.DataFrame:
    """A training run's per-step trainer log from its output folder.

    Looks at `trainer_state.json` and `log_history.json(l)` (if the training code wrote them), the checkpoints'
    `trainer_state.json` and the captured `trainer_log.txt`, and keeps the one with the most steps (a resumed
    run's checkpoint holds the steps before the resume; a checkpoint may lag the last steps)."""
    folder = Path(folder)

    def checkpoint_number(path: Path) -> int:
        tail = path.parent.name.rsplit("-", 1)[-1]
        return int(tail) if tail.isdigit() else -1

    candidates = [
        folder / "trainer_state.json",
        folder / "log_history.json",
        folder / "log_history.jsonl",
        *sorted(folder.glob("checkpoint-*/trainer_state.json"), key=checkpoint_number, reverse=True),
        folder / TRAINER_LOG,
    ]
    best = trainer_log([])
    for path in candidates:
        log = trainer_log(read_log_records(path))
        if log.height > best.height:
            best = log
    return best


def read_dynamics(folders: dict[str, str | Path], file: str = "dynamics.jsonl", name: str = "harness") -> pl.DataFrame:
    """The GSPO dynamics logs of several runs as one table, the run's key in column `name`
    (e.g. a harness name -> its run folder, runs/ci/gspo-<harness>).

    Unknown fields are kept, a field that only some steps have is null elsewhere, non-numeric fields are
    dropped, and a run without a log adds no rows."""
    rows = []
    for key, folder in folders.items():
        for record in read_log_records(Path(folder) / file):
            row = {k: v for k, v in record.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
            rows.append({name: key, **row})
    if not rows:
        return pl.DataFrame({name: [], "step": []}, schema={name: pl.Utf8, "step": pl.Int64})
    return pl.DataFrame(rows, infer_schema_length=None)


def training_curves(
    table: pl.DataFrame, panels: Sequence[Panel], title: str, color: str | None = None, columns: int = 2
) -> alt.VConcatChart:
    """One small line chart per panel whose column `table` has (with values), against `step`.

    With `color` (e.g. "harness"), one line per value of that column. A table with none of the panels' columns
    (no logged steps) is refused with NoFigureData: `style.save_figure` then shows why and saves nothing."""
    shown = [p for p in panels if p.column in table.columns and table.get_column(p.column).drop_nulls().len() > 0]
    if not shown:
        raise NoFigureData(
            f"{title}: no logged steps with {', '.join(p.column for p in panels)} "
            f"({table.height} rows); no figure is saved"
        )
    keep = ["step", *([color] if color else []), *[p.column for p in shown]]
    data = table.select([c for c in keep if c in table.columns]).sort("step")
    x = step_axis(data["step"])
    charts = []
    for panel in shown:
        y = alt.Y(
            f"{panel.column}:Q",
            title=panel.y_title,
            scale=y_scale(data[panel.column], panel.unit_interval),
            axis=alt.Axis(format=panel.axis_format) if panel.axis_format else alt.Axis(),
        )
        encoding = {
            "x": x,
            "y": y,
            "tooltip": ["step", *([color] if color else []), alt.Tooltip(f"{panel.column}:Q", format=".4g")],
        }
        if color == "harness":
            encoding["color"] = harness_color(data)
        elif color:
            encoding["color"] = alt.Color(f"{color}:N", title=color.replace("_", " ").capitalize())
        charts.append(
            alt.Chart(data.filter(pl.col(panel.column).is_not_null()))
            .mark_line(point=True)
            .encode(**encoding)
            .properties(title=panel.title, width=WIDTH, height=HEIGHT)
        )
    rows = [alt.hconcat(*charts[i : i + columns]) for i in range(0, len(charts), columns)]
    return alt.vconcat(*rows).properties(title=title)


SFT_PANELS = [
    Panel("loss", "Training loss", "Loss (assistant tokens)"),
    Panel("mean_token_accuracy", "Token accuracy", "Share of tokens predicted", unit_interval=True),
    Panel("grad_norm", "Gradient norm", "Norm"),
    Panel("learning_rate", "Learning rate", "Learning rate", axis_format=".1~e"),
]


def sft_training(log: pl.DataFrame) -> alt.VConcatChart:
    """The SFT run's curves from its trainer log (columns: step, loss, and whichever others it logged); one line
    per harness when the log has a `harness` column (notebook 04 concatenates the recipes' logs)."""
    return training_curves(log, SFT_PANELS, "Cold-start SFT", color="harness" if "harness" in log.columns else None)


def gspo_step_table(
    dynamics: pl.DataFrame, logs: dict[str, pl.DataFrame] | None = None, name: str = "harness"
) -> pl.DataFrame:
    """Per run (column `name`) and RL step: the dynamics log (`read_dynamics`) joined with each run's trainer
    log (`read_trainer_log`: loss, and its `reward` as `trainer_reward`). Either may be missing or empty;
    what is there is kept."""
    frames = []
    for key, log in (logs or {}).items():
        if log.height and "step" in log.columns:
            log = log.rename({"reward": "trainer_reward"}) if "reward" in log.columns else log
            frames.append(log.with_columns(pl.lit(key).alias(name)))
    trainer = pl.concat(frames, how="diagonal_relaxed") if frames else None
    if dynamics.height == 0:
        return trainer if trainer is not None else dynamics
    if trainer is None:
        return dynamics
    extra = [c for c in trainer.columns if c not in dynamics.columns]
    return dynamics.join(trainer.select(name, "step", *extra), on=[name, "step"], how="full", coalesce=True)


GSPO_PANELS = [
    Panel("loss", "GSPO loss", "Loss"),
    Panel("mean_reward", "Pass rate of rollouts", "Share of episodes with R = 1", unit_interval=True),
    Panel("mean_score", "Mean score of rollouts", "R~", unit_interval=True),
    Panel("trainer_reward", "Reward optimised", "Mean reward (trainer)"),
    Panel("tool_output_tokens_per_episode", "Tool output entering context", "Tokens per episode"),
    Panel("runtime_errors_per_episode", "Runtime errors", "Errors per episode"),
]


def gspo_training(steps: pl.DataFrame, name: str = "harness", title: str = "GSPO training") -> alt.VConcatChart:
    """Loss, reward and pass rate per RL step, one line per run (a `gspo_step_table`, runs in column `name`).
    Refused (NoFigureData) when no step updated the policy."""
    require_updates(steps, title)
    return training_curves(steps, GSPO_PANELS, title, color=name if name in steps.columns else None, columns=3)


def pass_rate_by_harness(table: pl.DataFrame, title: str = "Pass rate on held-out seeds") -> alt.Chart:
    """Bars: pass rate (share of episodes with R = 1) per harness (columns: harness, pass_rate)."""
    require_rows(table, title, ["harness", "pass_rate"])
    return (
        alt.Chart(table)
        .mark_bar()
        .encode(
            x=alt.X("harness:N", sort=harness_order(), title="Harness", axis=alt.Axis(labelAngle=0)),
            y=alt.Y("pass_rate:Q", title="Pass rate", scale=alt.Scale(domain=[0, 1])),
            color=harness_color(table),
            tooltip=["harness", alt.Tooltip("pass_rate:Q", format=".2f")],
        )
        .properties(title=title, width=WIDTH // 1.5, height=HEIGHT)
    )


@dataclass(frozen=True)
class DiagnosticPanel:
    """One chart of GSPO's per-step diagnostics: `lines` (column -> the statistic's name in the legend), drawn
    solid, dashed, ... per statistic and coloured per run, over a shaded `band` (columns low, high) if given."""

    title: str
    y_title: str
    lines: dict[str, str]
    band: tuple[str, str] | None = None
    unit_interval: bool = False


# The columns are the dynamics line's (progagent_lib.train.gspo.STEP_LOG_KEYS).
GSPO_DIAGNOSTIC_PANELS = [
    DiagnosticPanel(
        "Sequence importance ratio",
        "Ratio (line: mean; band: min-max)",
        {"ratio_mean": "mean"},
        band=("ratio_min", "ratio_max"),
    ),
    DiagnosticPanel("Token entropy", "Nats per model token", {"entropy": "mean"}),
    DiagnosticPanel(
        "Sampler-trainer mismatch",
        "|logp sampler - logp trainer|",
        {"logp_mismatch_mean": "mean", "logp_mismatch_max": "max"},
    ),
    DiagnosticPanel(
        "Clip fractions",
        "Share of episodes clipped",
        {"clip_region": "region", "clip_low": "low", "clip_high": "high"},
        unit_interval=True,
    ),
    DiagnosticPanel(
        "Importance weight (TIS)",
        "Weight (line: mean; band: min-max)",
        {"is_weight_mean": "mean"},
        band=("is_weight_min", "is_weight_max"),
    ),
]


def gspo_diagnostics(steps: pl.DataFrame, name: str = "harness", title: str = "GSPO diagnostics") -> alt.VConcatChart:
    """Per optimizer step, one line per run (column `name` of a `gspo_step_table`): the sequence ratio (mean, with
    its min-max band), token entropy, the sampler-trainer log-prob mismatch (mean, max; on each generation batch's
    first step), the clip fractions and the truncated-importance-sampling weight. A panel whose columns the logs
    lack is left out; with none (no logged steps), NoFigureData."""

    require_updates(steps, title)

    def present(column: str) -> bool:
        return column in steps.columns and steps.get_column(column).drop_nulls().len() > 0

    shown = [p for p in GSPO_DIAGNOSTIC_PANELS if any(present(c) for c in p.lines)]
    if not shown:
        columns = sorted({c for p in GSPO_DIAGNOSTIC_PANELS for c in p.lines})
        raise NoFigureData(
            f"{title}: no logged steps with GSPO diagnostics ({', '.join(columns)}) in "
            f"{steps.height} rows; no figure is saved"
        )
    runs = [name] if name in steps.columns else []
    logged = [c for p in shown for c in p.lines if present(c)]
    drawn = steps.filter(pl.any_horizontal(pl.col(logged).is_not_null()))  # the legend: runs that logged some
    color: alt.Color | Mapping[str, object] = alt.value("#4c78a8")
    if runs:  # the bands share the legend: draw its symbols opaque
        by_run = (
            harness_color(drawn)
            if name == "harness"
            else alt.Color(f"{name}:N", title=name.replace("_", " ").capitalize())
        )
        color = by_run.legend(symbolOpacity=1)
    # every panel over the run's steps (a mismatch is logged on a batch's first step only)
    x = step_axis(steps["step"], domain=[steps["step"].min(), steps["step"].max()])
    charts = []
    for panel in shown:
        columns = [c for c in panel.lines if present(c)]
        long = (
            steps.select(*runs, "step", *columns)
            .unpivot(index=[*runs, "step"], on=columns, variable_name="column")
            .drop_nulls("value")
            .with_columns(pl.col("column").replace_strict(panel.lines).alias("statistic"))
            .sort(*runs, "step")
        )
        band_columns = panel.band if panel.band is not None and all(present(c) for c in panel.band) else ()
        values = pl.concat([long["value"].cast(pl.Float64), *[steps[c].cast(pl.Float64) for c in band_columns]])
        y = alt.Y("value:Q", title=panel.y_title, scale=y_scale(values, panel.unit_interval))
        encoding: dict[str, Any] = {  # keyword arguments of encode: channels of several types
            "x": x,
            "y": y,
            "color": color,
            "tooltip": [*runs, "step", "statistic", alt.Tooltip("value:Q", format=".4g")],
        }
        if len(panel.lines) > 1:
            encoding["strokeDash"] = alt.StrokeDash(
                "statistic:N",
                title="Statistic",
                sort=list(panel.lines.values()),
                legend=alt.Legend(symbolType="stroke", symbolStrokeColor="gray"),
            )
            encoding["detail"] = "statistic:N"
        # the points (a run of one step has no line) carry no dash, so the dash legend shows strokes
        points = {k: v for k, v in encoding.items() if k != "strokeDash"}
        chart = alt.Chart(long).mark_line().encode(**encoding) + alt.Chart(long).mark_point(
            filled=True, size=25
        ).encode(**points)
        if band_columns:
            low, high = band_columns
            band = alt.Chart(steps.select(*runs, "step", low, high).drop_nulls().sort(*runs, "step")).encode(
                x=x, y=alt.Y(f"{low}:Q", title=panel.y_title), y2=f"{high}:Q", color=color
            )
            chart = band.mark_area(opacity=0.15) + band.mark_rule(opacity=0.5) + chart
        charts.append(chart.properties(title=panel.title, width=WIDTH, height=HEIGHT))
    rows = [alt.hconcat(*charts[i : i + 3]) for i in range(0, len(charts), 3)]
    return alt.vconcat(*rows).properties(title=title)
