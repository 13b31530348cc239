"""One look for every figure: harness colours, titles, and saving as PNG + SVG."""
from __future__ import annotations

from pathlib import Path

import altair as alt

from ..harness.spec import HARNESS_LABELS, HARNESSES  # noqa: F401  (HARNESS_LABELS re-exported)

HARNESS_ORDER = list(HARNESSES)
HARNESS_COLORS = {"dtc": "#d95f02", "ptc": "#1b9e77", "hybrid": "#7570b3"}
SCALE_ORDER = ["v0", "v1", "v2", "v3"]


def harness_color(field: str = "harness", title: str = "Harness") -> alt.Color:
    """The same colour for the same harness in every figure."""
    present = HARNESS_ORDER
    return alt.Color(f"{field}:N", title=title, sort=present,
                     scale=alt.Scale(domain=present, range=[HARNESS_COLORS[h] for h in present]))


def save_chart(chart: alt.TopLevelMixin, name: str, figures_dir: str | Path = "figures") -> list[Path]:
    """Write figures_dir/name.png and name.svg; returns both paths."""
    figures_dir = Path(figures_dir)
    figures_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in ("png", "svg"):
        path = figures_dir / f"{name}.{fmt}"
        chart.save(str(path), format=fmt, **({"scale_factor": 2} if fmt == "png" else {}))
        paths.append(path)
    return paths
