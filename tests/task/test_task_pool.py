"""Every task in the pool: certified at v0..v3 (oracle R=1, deterministic, empty R=0, long-horizon), and
its near-miss wrong solution rejected by the verifier."""
import pytest

from progagent_lib.task import find_task_dirs, load_task
from progagent_lib.task.certify import certify_task

from conftest import TASKS_DIR

TASK_DIRS = find_task_dirs(TASKS_DIR)


@pytest.fixture(params=TASK_DIRS, ids=[str(p.relative_to(TASKS_DIR)) for p in TASK_DIRS])
def task(request):
    return load_task(request.param)


def test_task_certifies_at_every_scale(task):
    # Two parameter draws here (the one-program and each-parameter checks need a second); `make certify` runs four.
    report = certify_task(task, scales=("v0", "v1", "v2", "v3"), seeds=(0,), draws=2)
    assert report.passed, "\n".join(f"{c.scale} {c.name}: {c.detail}" for c in report.failures())


def test_near_miss_solution_is_rejected(task):
    assert task.has_near_miss, f"{task.id} has no near_miss.py"
    env = task.instantiate("v0", 1)
    try:
        result = env.verify(task.near_miss(env.tools))
    finally:
        env.close()
    assert result.reward == 0.0, f"{task.id}: the near miss passed every criterion"
    assert result.score > 0.0, f"{task.id}: the near miss is not near (R~=0); make it plausible"


def test_task_is_parametrised(task):
    """Every pool task draws instance parameters, else one fixed program passes all its instances."""
    assert task.parametrised, f"{task.id} draws no instance parameters: one fixed program would pass every instance"


def test_pool_covers_several_domains():
    tasks = [load_task(p) for p in TASK_DIRS]
    assert len({t.id for t in tasks}) == len(tasks), "task ids must be unique"
    assert all(t.id.split("/")[0] == t.domain for t in tasks), "a task's id starts with its domain"
