"""Profiles, figures and the headless reproduction runner."""
import nbformat
import polars as pl
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from progagent_lib.analysis import figures
from progagent_lib.analysis.profiles import ProfileError, load_profile
from progagent_lib.analysis.reproduce import NotebookFailed, reproduce
from progagent_lib.analysis.style import save_chart


def test_profiles_extend_and_resolve(tmp_path):
    ci = load_profile("ci", run_dir=tmp_path / "run")
    smoke = load_profile("cpu-smoke", run_dir=tmp_path / "run2")
    assert ci["harnesses"] == smoke["harnesses"]            # inherited from cpu-smoke
    assert ci["scales"] != smoke["scales"]                  # overridden
    assert all(p.joinpath("task.toml").is_file() for p in ci.task_paths)
    assert ci.path("x", "y.json").parent.is_dir()
    with pytest.raises(ProfileError, match="no profile 'nope'"):
        load_profile("nope", run_dir=tmp_path)
    with pytest.raises(ProfileError, match="no setting 'missing'"):
        ci["missing"]


def test_figures_are_written_as_png_and_svg(tmp_path):
    summary = pl.DataFrame({"scale": ["v0", "v3"] * 3, "harness": ["dtc", "dtc", "ptc", "ptc", "hybrid", "hybrid"],
                            "tool_output_tokens": [1e4, 9e4, 500.0, 700.0, 2e3, 2.5e3], "tool_calls": [50.0, 400, 50, 400, 50, 400],
                            "pass_rate": [1.0] * 6})
    png, svg = save_chart(figures.harness_comparison(summary), "comparison", tmp_path)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    text = svg.read_text()
    assert "<svg" in text and "Tool output entering context" in text and "Environment scale" in text


def test_reproduce_names_the_failing_notebook_and_cell(tmp_path):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    good = new_notebook(cells=[new_code_cell("profile = None\nrun_dir = None", metadata={"tags": ["parameters"]}),
                               new_code_cell("print(profile)")])
    bad = new_notebook(cells=[new_code_cell("profile = None\nrun_dir = None", metadata={"tags": ["parameters"]}),
                              new_code_cell("x = 1"), new_code_cell("1 / 0")])
    for nb in (good, bad):
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(good, folder / "00_good.ipynb")
    nbformat.write(bad, folder / "01_bad.ipynb")
    with pytest.raises(NotebookFailed, match=r"01_bad.ipynb failed at cell \d+ \(1 / 0\): ZeroDivisionError"):
        reproduce("ci", run_dir=tmp_path / "run", notebooks_dir=folder)
    executed = tmp_path / "run" / "notebooks" / "00_good.ipynb"
    assert "ci" in nbformat.read(executed, 4).cells[-1].outputs[0]["text"]


def test_the_engine_loads_while_the_notebooks_that_generate_nothing_run(tmp_path):
    """`progagent reproduce` launches the profile's engine and waits for it only before the first notebook that uses
    it: one marked `"progagent": {"uses_engine": false}` runs meanwhile. (The wait is a callable here; the engine's
    own launch and wait are what every EngineServer.start does, in tests/engine.)"""
    from progagent_lib.analysis.profiles import load_profile
    from progagent_lib.analysis.reproduce import _run_notebooks, uses_engine

    folder = tmp_path / "notebooks"
    folder.mkdir()
    for name, marked in (("00_tasks", True), ("01_train", False), ("02_more", False)):
        nb = new_notebook(cells=[new_code_cell("profile = None\nrun_dir = None", metadata={"tags": ["parameters"]})])
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        if marked:
            nb.metadata["progagent"] = {"uses_engine": False}
        nbformat.write(nb, folder / f"{name}.ipynb")
    assert [uses_engine(p) for p in sorted(folder.glob("*.ipynb"))] == [False, True, True]
    prof = load_profile("ci", run_dir=tmp_path / "run")
    waited = []

    def ready():
        waited.append(sorted(p.name for p in (tmp_path / "run" / "notebooks").glob("*.ipynb")))

    runs = _run_notebooks(prof, None, "python3", folder, {}, ready)
    assert [r.notebook for r in runs] == ["00_tasks.ipynb", "01_train.ipynb", "02_more.ipynb"]
    assert waited == [["00_tasks.ipynb"]]   # once, after the notebook that needs no engine, before the first that does
