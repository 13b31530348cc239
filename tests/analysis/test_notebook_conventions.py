"""What a reader of the notebooks in JupyterLab relies on: the opening cell, the kernel, no raw training logs."""
import re
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from progagent_lib.analysis.reproduce import notebook_paths, reproduce

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = notebook_paths(notebooks_dir=REPO / "notebooks")


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 9


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_opens_with_what_it_shows_and_its_profile(path):
    nb = nbformat.read(path, as_version=4)
    first = nb.cells[0]
    assert first.cell_type == "markdown" and first.source.startswith(f"# {path.name[:2]} "), \
        f"{path.name}: the first cell should be a markdown title '# {path.name[:2]} · ...'"
    assert len(first.source.split()) > 12, f"{path.name}: the opening cell should say what the notebook shows"
    assert "**Profile:**" in first.source, f"{path.name}: the opening cell should say which profile it runs under"
    setup = next(c for c in nb.cells if "load_profile(profile, run_dir)" in c.source)
    assert setup.source.rstrip().splitlines()[-1].startswith("P"), f"{path.name}: the setup cell should end by showing the profile banner"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_on_the_project_kernel(path):
    assert nbformat.read(path, as_version=4).metadata.kernelspec.name == "progagent"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_training_calls_send_their_logs_to_a_file(path):
    """The trainers print one log dict per step; in a notebook those calls (run_sft/run_gspo, or a recipe's
    sft/gspo stage) sit inside `logs_to_file`."""
    for cell in nbformat.read(path, as_version=4).cells:
        lines = cell.source.splitlines()
        for index, line in enumerate(lines):
            if re.search(r"\b(run_(sft|gspo)|recipe\.(sft|gspo))\(", line) and not line.lstrip().startswith(("from ", "import ")):
                assert any("logs_to_file(" in before for before in lines[:index]), \
                    f"{path.name}: `{line.strip()}` prints the trainer's logs into the notebook: wrap it in logs_to_file"


def test_executed_copies_say_which_profile_they_ran_under(tmp_path):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    nb = new_notebook(cells=[new_markdown_cell("# 00 · A notebook\n\nIt shows a number."),
                             new_code_cell("profile = None\nrun_dir = None", metadata={"tags": ["parameters"]}),
                             new_code_cell("print(1)")])
    nb.metadata["kernelspec"] = {"name": "progagent", "display_name": "Python (progagent)", "language": "python"}
    nbformat.write(nb, folder / "00_stamped.ipynb")
    [run] = reproduce("ci", run_dir=tmp_path / "run", notebooks_dir=folder)
    executed = nbformat.read(run.output, as_version=4)
    assert executed.cells[0].source.endswith("*This copy ran under profile `ci` (`progagent reproduce`).*")
    assert nbformat.read(folder / "00_stamped.ipynb", as_version=4).cells[0].source.endswith("It shows a number.")
