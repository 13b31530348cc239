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
