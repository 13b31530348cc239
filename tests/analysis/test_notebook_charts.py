"""Charts in the notebooks render anywhere: a static PNG kept in the executed copy, no vega loaded from a CDN (offline,
on a cluster or on GitHub such a chart showed nothing)."""
import json
import re
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from progagent_lib.analysis.reproduce import notebook_paths, reproduce

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = notebook_paths(notebooks_dir=REPO / "notebooks")
CDN = re.compile(r"cdn\.jsdelivr|jsdelivr\.net|unpkg\.com|cdnjs|require\.config|vega-embed|<script", re.IGNORECASE)
DRAWS = re.compile(r"\bsave_figure\(|\bsave_chart\(|\.properties\(|alt\.Chart\(")

CHART = """import polars as pl
from progagent_lib.analysis import figures

summary = pl.DataFrame({"scale": ["v0", "v3"] * 3, "harness": ["dtc", "dtc", "ptc", "ptc", "hybrid", "hybrid"],
                        "tool_output_tokens": [1.3e4, 9.2e4, 565.0, 778.0, 2.1e3, 2.5e3],
                        "tool_calls": [53.0, 335, 55, 337, 55, 337], "pass_rate": [1.0] * 6})
figures.harness_comparison(summary)"""


def _outputs(nb) -> list[dict]:
    return [out for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", [])]


def _text_of(outputs) -> str:
    """Every output but the images' bytes (base64 can spell anything)."""
    return json.dumps([{k: v for k, v in out.get("data", {}).items() if not k.startswith("image/")} | {
        k: v for k, v in out.items() if k not in ("data", "metadata")} for out in outputs])


def _chart_notebook(path: Path, setup: str) -> None:
    nb = new_notebook(cells=[new_code_cell("profile = None\nrun_dir = None", metadata={"tags": ["parameters"]}),
                             new_code_cell(setup), new_code_cell(CHART)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


def test_executed_charts_are_png_outputs_with_no_cdn(tmp_path):
    """Runs a chart through papermill on a real kernel, as `progagent reproduce` does, with and without the notebooks'
    renderer choice: altair's default HTML loads vega from a CDN; `static_charts()` keeps a PNG and no script."""
    folder = tmp_path / "notebooks"
    folder.mkdir()
    _chart_notebook(folder / "00_static.ipynb", "from progagent_lib.analysis.style import static_charts\nstatic_charts()")
    _chart_notebook(folder / "01_default.ipynb", "import altair")
    static, default = reproduce("ci", run_dir=tmp_path / "run", notebooks_dir=folder)
    outputs = _outputs(nbformat.read(static.output, as_version=4))
    [chart] = [out for out in outputs if "image/png" in out.get("data", {})]
    assert chart["data"]["image/png"].startswith("iVBORw0KGgo")          # a PNG, kept in the notebook
    assert not CDN.search(_text_of(outputs)), CDN.search(_text_of(outputs))
    # the check sees what the notebooks showed before: HTML that loads vega from a CDN
    assert CDN.search(_text_of(_outputs(nbformat.read(default.output, as_version=4))))


def test_every_notebook_that_draws_a_chart_asks_for_static_charts_first():
    drawing = []
    for path in NOTEBOOKS:
        cells = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
        first_chart = next((i for i, source in enumerate(cells) if DRAWS.search(source)), None)
        if first_chart is None:
            continue
        drawing.append(path.name)
        renderer = next((i for i, source in enumerate(cells) if "static_charts()" in source), None)
        assert renderer is not None and renderer < first_chart, \
            f"{path.name}: call progagent_lib.analysis.style.static_charts() in the setup cell, before the first chart"
        assert not any("save_chart(" in source for source in cells), \
            f"{path.name}: draw through save_figure (it shows why when there is no data) rather than save_chart"
    assert len(drawing) >= 7, drawing


def test_committed_notebooks_keep_no_output_that_loads_from_a_cdn():
    for path in NOTEBOOKS:
        text = _text_of(_outputs(nbformat.read(path, as_version=4)))
        assert not CDN.search(text), f"{path.name}: an output loads from a CDN ({CDN.search(text).group()})"
