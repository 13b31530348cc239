"""Progress a user sees in a terminal: `run_episode` reports every turn, and the batch's bar shows the turns of the
episode playing beside its count of whole episodes (one small-model episode takes minutes: a bare 0/1 says nothing);
`progagent reproduce` draws a bar over each notebook's cells (a training cell runs for minutes). Real oracle
episodes, real kernels, a real papermill run; the bars are tqdm's terminal bars, drawn on a redirected stderr.
(The training bars are in test_train_logging.py.)"""
import contextlib
import io
import re

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from progagent_lib.harness.batch import run_batch
from progagent_lib.harness.episode import run_episode
from progagent_lib.policy import OracleTeacher, policies_for


def test_run_episode_reports_each_turn_as_it_ends(restock_task):
    seen = []
    trajectory = run_episode(restock_task, "v0", 0, "ptc", OracleTeacher("ptc"),
                             on_turn=lambda episode: seen.append(episode.trajectory.turns))
    assert trajectory.reward == 1.0 and trajectory.turns >= 2
    assert seen == list(range(1, trajectory.turns + 1))


def test_the_batch_bar_shows_the_turn_of_the_episode_playing(restock_task):
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        result = run_batch([restock_task], ["v0"], ["dtc"], policies_for("oracle", ["dtc"]), progress=True,
                           limit_overrides={"max_turns": 90})
    assert result.ran == 1 and not result.failures
    frames = stderr.getvalue().split("\r")
    playing = [f for f in frames if re.search(r"0/1 \[.*, turn \d+/90\]", f)]
    assert playing, frames[:5]
    assert "turn" not in frames[-1]   # the finished episode's turns leave the bar


def test_reproduce_draws_a_bar_over_each_notebooks_cells(tmp_path):
    from progagent_lib.analysis.reproduce import reproduce

    folder = tmp_path / "notebooks"
    folder.mkdir()
    notebook = new_notebook(cells=[new_code_cell("profile = None\nrun_dir = None", metadata={"tags": ["parameters"]}),
                                   new_code_cell("print(profile)")])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, folder / "00_tiny.ipynb")
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        reproduce("ci", run_dir=tmp_path / "run", notebooks_dir=folder)
    assert re.search(r"00_tiny.ipynb: 100%\|.*\| (\d+)/\1 \[", stderr.getvalue()), stderr.getvalue()[-1000:]
