"""One look for every figure: harness colours, y scales, how a chart shows in a notebook, and saving a figure with
the data it was drawn from (PNG + SVG + the Vega-Lite spec with its rows), never a figure drawn from no data."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import altair as alt
import polars as pl

from ..harness.spec import HARNESS_LABELS as HARNESS_LABELS  # the figures' callers read it here
from ..harness.spec import HARNESSES

SCALE_ORDER = ["v0", "v1", "v2", "v3"]
FIGURE_FORMATS = ("png", "svg")
DATA_SUFFIX = ".vl.json"  # beside every saved figure: its Vega-Lite spec, the rows it was drawn from inline


class NoFigureData(ValueError):
    """A figure was asked to draw a table without rows (or without the columns it shows). Nothing is drawn, so
    that no placeholder is saved, shown as a result or published."""


def require_rows(table: pl.DataFrame, figure: str, columns: Iterable[str] = ()) -> pl.DataFrame:
    """`table` if it has rows and a value in each of `columns`; otherwise NoFigureData naming the figure."""
    columns = list(columns)
    missing = [c for c in columns if c not in table.columns or table.get_column(c).drop_nulls().len() == 0]
    if table.height == 0 or missing:
        what = "no rows" if table.height == 0 else f"no values in {', '.join(missing)}"
        raise NoFigureData(f"{figure}: {what} to draw (the run logged none); no figure is saved")
    return table


def require_updates(steps: pl.DataFrame, figure: str) -> pl.DataFrame:
    """`steps` (RL steps with a `skipped` column, as the GSPO dynamics log writes) if at least one step updated the
    policy; otherwise NoFigureData: curves of a run in which nothing was trained would be read as training dynamics.
    A table without the column (an older log) is passed through."""
    if "skipped" in steps.columns and steps.height:
        skipped = steps.get_column("skipped").drop_nulls()
        if skipped.len() and bool(skipped.all()):
            raise NoFigureData(
                f"{figure}: every one of the run's {skipped.len()} optimizer steps was skipped (no group had a reward "
                "difference), so the policy never changed; no figure is saved"
            )
    return steps


def harness_order() -> list[str]:
    """Every registered harness, in the house order (the order of harness.spec.HARNESSES)."""
    return list(HARNESSES)


def harnesses_in(data: pl.DataFrame | Iterable[str] | None, field: str = "harness") -> list[str]:
    """The harnesses present in `data` (a table's `field`, or names), in the house order; all of them without data."""
    if data is None:
        return harness_order()
    names = data.get_column(field).to_list() if isinstance(data, pl.DataFrame) else list(data)
    return [h for h in harness_order() if h in names] or harness_order()


def harness_color(
    data: pl.DataFrame | Iterable[str] | None = None, field: str = "harness", title: str = "Harness"
) -> alt.Color:
    """The same colour for the same harness in every figure; the legend lists only the harnesses in `data`."""
    present = harnesses_in(data, field)
    return alt.Color(
        f"{field}:N",
        title=title,
        sort=present,
        scale=alt.Scale(domain=present, range=[HARNESSES[h].color for h in present]),
    )


def harness_shape(
    data: pl.DataFrame | Iterable[str] | None = None, field: str = "harness", title: str = "Harness"
) -> alt.Shape:
    """A point shape per harness (with `harness_color`, one merged legend), so that equal values stay apart."""
    present = harnesses_in(data, field)
    return alt.Shape(
        f"{field}:N",
        title=title,
        sort=present,
        scale=alt.Scale(domain=present, range=[HARNESSES[h].shape for h in present]),
    )


def y_scale(values: pl.Series, unit_interval: bool = False) -> alt.Scale:
    """The y scale of a per-step panel: [0, 1] for a share; a constant series gets a domain around its value (not
    below 0 for a value that is not), since a domain of one value draws a single tick (a flat loss of 0 showed one
    tick '0' and nothing else)."""
    if unit_interval:
        return alt.Scale(domain=[0, 1])
    values = values.drop_nulls()
    low, high = (values.min(), values.max()) if values.len() else (None, None)
    if low is not None and low == high:
        value = float(cast(float, low))  # a numeric column's minimum (polars types it any literal)
        pad = abs(value) * 0.5 or 1.0
        return alt.Scale(domain=[max(value - pad, 0.0) if value >= 0 else value - pad, value + pad])
    return alt.Scale(zero=False)


def step_axis(steps: pl.Series, title: str = "Step", **scale) -> alt.X:
    """The x axis of a per-step panel: whole steps only. Over a few steps every step is a tick (over 1..2 Vega put
    a tick at 1.5 and printed it '2' twice)."""
    steps = steps.drop_nulls()
    low, high = (int(cast(float, steps.min())), int(cast(float, steps.max()))) if steps.len() else (0, 0)
    values = list(range(low, high + 1)) if high - low <= 12 else alt.Undefined
    return alt.X(
        "step:Q",
        title=title,
        axis=alt.Axis(values=values, tickMinStep=1, format="d"),
        scale=alt.Scale(**scale) if scale else alt.Undefined,
    )


def static_charts(fmt: str = "png") -> None:
    """Show every altair chart of this process as a static image that vl-convert renders here, offline: PNG (or
    SVG), kept in the executed notebook, shown by GitHub, nbconvert and JupyterLab alike. Altair's default output is
    HTML that loads vega from a CDN, and shows nothing offline, on a cluster or on GitHub.

    The one place the notebooks' renderer is chosen: every notebook that draws a chart calls this first."""
    if fmt not in FIGURE_FORMATS:
        raise ValueError(f"static_charts: format {fmt!r} is not one of {', '.join(FIGURE_FORMATS)}")
    alt.renderers.enable(fmt, **({"scale_factor": 2} if fmt == "png" else {}))


def _views(spec: dict, data: dict | None = None) -> Iterator[tuple[dict, dict | None]]:
    """Each view (a spec with a mark) of a Vega-Lite spec, with the data it draws (inherited from its parents)."""
    data = spec.get("data", data)
    if "mark" in spec:
        yield spec, data
    for key in ("layer", "hconcat", "vconcat", "concat"):
        for child in spec.get(key, []):
            yield from _views(child, data)
    if isinstance(spec.get("spec"), dict):  # facet and repeat
        yield from _views(spec["spec"], data)


def figure_problems(spec: dict) -> list[str]:
    """Why a figure's spec is not a result: a view without data rows, or no view that draws data as anything but
    text (a note such as 'no logged steps' drawn in place of a chart). Empty: the figure shows data."""
    datasets = spec.get("datasets", {})

    def rows(data: dict | None) -> int:
        if not data:
            return 0
        if "values" in data:
            return len(data["values"])
        return len(datasets.get(data.get("name"), []))

    problems, drawn = [], False
    for view, data in _views(spec):
        mark = view["mark"]["type"] if isinstance(view["mark"], dict) else view["mark"]
        if rows(data) == 0:
            problems.append(f"a {mark} mark has no data rows")
        elif mark != "text":
            drawn = True
    if not drawn:
        problems.append("no mark draws data (only text, or nothing): a placeholder, not a figure")
    return problems


def figure_data_problems(figure: str | Path) -> list[str]:
    """`figure_problems` of a saved figure (NAME.png, NAME.svg or NAME.vl.json), read from its NAME.vl.json."""
    stem = Path(figure).with_suffix("")
    stem = stem.with_suffix("") if stem.suffix == ".vl" else stem
    path = stem.with_name(stem.name + DATA_SUFFIX)
    if not path.is_file():
        return [f"no {path.name} beside it: the rows it was drawn from are unknown (save_chart writes them)"]
    try:
        spec = json.loads(path.read_text())
    except ValueError as exc:
        return [f"{path.name} is not JSON: {exc}"]
    return figure_problems(spec)


def figure_files(name: str, figures_dir: str | Path) -> list[Path]:
    """The files of figure `name` in `figures_dir`: NAME.png, NAME.svg and NAME.vl.json."""
    folder = Path(figures_dir)
    return [folder / f"{name}.{fmt}" for fmt in FIGURE_FORMATS] + [folder / f"{name}{DATA_SUFFIX}"]


def save_chart(chart: alt.TopLevelMixin, name: str, figures_dir: str | Path = "figures") -> list[Path]:
    """Write figures_dir/name.png and name.svg, and name.vl.json (the spec with the rows drawn); returns the PNG and
    SVG paths. A chart without data rows, or one that draws only text, is refused (NoFigureData)."""
    spec = chart.to_dict()
    problems = figure_problems(spec)
    if problems:
        raise NoFigureData(f"{name}: {'; '.join(problems)}; not saved")
    png, svg, data = figure_files(name, figures_dir)
    png.parent.mkdir(parents=True, exist_ok=True)
    chart.save(str(png), format="png", scale_factor=2)
    chart.save(str(svg), format="svg")
    data.write_text(json.dumps(spec, indent=1, default=str) + "\n")
    return [png, svg]


@dataclass(frozen=True)
class NotDrawn:
    """What a notebook shows in place of a figure that had no data: its name and why."""

    name: str
    reason: str

    def __repr__(self) -> str:
        return f"figure {self.name!r} not drawn: {self.reason}"

    def _repr_markdown_(self) -> str:
        return f"*Figure `{self.name}` not drawn: {self.reason}*"


def save_figure(
    name: str, figures_dir: str | Path, draw: Callable[..., alt.TopLevelMixin], /, *args, **kwargs
) -> alt.TopLevelMixin | NotDrawn:
    """`draw(*args, **kwargs)`, saved as figures_dir/name.{png,svg,vl.json}; returns the chart to show (a notebook
    cell ends with it). `draw` is called here so that a table without rows is caught: then (NoFigureData) nothing
    is saved, the files an earlier run left under that name are removed (no stale figure is published as this
    run's), and a NotDrawn line saying why is returned."""
    try:
        chart = draw(*args, **kwargs)
        save_chart(chart, name, figures_dir)
    except NoFigureData as exc:
        for path in figure_files(name, figures_dir):
            path.unlink(missing_ok=True)
        return NotDrawn(name, str(exc))
    return chart
