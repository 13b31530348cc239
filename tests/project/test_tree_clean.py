"""`make test`'s notebook run leaves the checkout as it found it: nothing new or changed under figures/ or notebooks/
(`make reproduce` once overwrote about 20 committed figures). Ordered after the last notebook by the
`after_notebooks` marker (tests/conftest.py), since pytest collects tests/ before notebooks/."""
import pytest


@pytest.mark.after_notebooks
def test_the_notebook_run_leaves_figures_and_notebooks_unchanged(request, committed_outputs_before, committed_outputs_now):
    notebooks = sorted({item.path.name for item in request.session.items if item.path.suffix == ".ipynb"})
    if not notebooks:
        pytest.skip("checks a notebook run: pytest tests --nbval-lax notebooks (make test), with PROGAGENT_PROFILE=ci")
    after = committed_outputs_now
    changed = sorted(key for key in committed_outputs_before.keys() | after.keys()
                     if committed_outputs_before.get(key) != after.get(key))
    assert not changed, (f"running {', '.join(notebooks)} changed the committed tree: {changed}; notebooks save under "
                         "runs/<profile> (figures: runs/<profile>/figures), and only `make figures` writes figures/")
