"""Shared test fixtures. Built environment states are cached under the repo's .cache unless told otherwise."""
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("PROGAGENT_CACHE", str(REPO / ".cache" / "progagent"))
TASKS_DIR = REPO / "tasks"


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def restock_task():
    from progagent_lib import load_task

    return load_task(TASKS_DIR / "retail" / "restock_orders")


@pytest.fixture(scope="module")
def episode(restock_task):
    """An instantiated restock_orders episode (v0, seed 0), one per test module, closed after it."""
    env = restock_task.instantiate("v0", 0)
    yield env
    env.close()


# `make test` runs the suite, then every notebook through nbval (profile ci): figures/ and notebooks/ must come out
# of it as they went in (runs write under runs/<profile>; only `make figures` writes figures/). Tests marked
# `after_notebooks` (tests/project/test_tree_clean.py) run last and compare with the state recorded before the first test.
_COMMITTED_BEFORE = pytest.StashKey[dict]()


def committed_outputs() -> dict[str, str]:
    """figures/ and notebooks/ as git sees them: `git status --porcelain` lines, and each file git does not ignore
    with a hash of its bytes (a file rewritten while already modified changes no status line)."""
    import hashlib
    import subprocess

    def git(*args: str) -> str:
        return subprocess.run(["git", *args, "--", "figures", "notebooks"], cwd=REPO, capture_output=True, text=True,
                              timeout=60, check=True).stdout

    state = {f"git status: {line}": "" for line in git("status", "--porcelain", "--untracked-files=all").splitlines()}
    for name in filter(None, git("ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")):
        path = REPO / name
        state[name] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "absent"
    return state


def pytest_configure(config):
    config.addinivalue_line("markers", "after_notebooks: run after the session's notebooks (nbval), against the "
                                       "committed outputs as they were before the first test")


def pytest_collection_modifyitems(config, items):
    last = [item for item in items if item.get_closest_marker("after_notebooks")]
    if last:
        items[:] = [item for item in items if item not in last] + last
        config.stash[_COMMITTED_BEFORE] = committed_outputs()


@pytest.fixture
def committed_outputs_before(request) -> dict[str, str]:
    return request.config.stash[_COMMITTED_BEFORE]


@pytest.fixture
def committed_outputs_now() -> dict[str, str]:
    return committed_outputs()
