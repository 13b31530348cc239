"""One report of an episode (`harness.metrics.episode_report`), whichever trainer's adapter gives it: the teacher's
episode, played for real through the OpenEnv environment, is reported the same by OpenEnv (the last observation), by
TRL (`episode_metrics`' logs) and by verifiers (`progagent_metrics`, in the verifiers venv)."""
from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from progagent_lib.harness.metrics import EPISODE_REPORT, episode_report
from progagent_lib.harness.trajectory import write_jsonl
from progagent_lib.integrations.openenv import OpenEnvServerConfig, ProgAgentAction, ProgAgentEnvironment
from progagent_lib.integrations.trl import environment_class, episode_metrics
from progagent_lib.policy import OracleTeacher

REPO = Path(__file__).resolve().parents[2]
TASKS = REPO / "tasks"
RESTOCK = "retail/restock_orders"
VERIFIERS_PYTHON = REPO / ".venv-verifiers" / "bin" / "python"


@pytest.fixture(scope="module")
def played(restock_task):
    """The teacher's PTC episode through the OpenEnv environment: its last observation and its trajectory."""
    environment = ProgAgentEnvironment(OpenEnvServerConfig(tasks_dir=TASKS))
    observation = environment.reset(task=RESTOCK, scale="v0", seed=0, harness="ptc")
    messages, tools = list(observation.messages), list(observation.tool_schemas)
    agent = OracleTeacher("ptc").start_episode(restock_task, observation.params)
    while not observation.done:
        observation = environment.step(ProgAgentAction.from_turn(agent.act(messages, tools)))
        messages += observation.messages
    environment.close()
    trajectory = environment.last
    assert trajectory.reward == 1.0 and trajectory.tool_calls > trajectory.model_tool_calls > 0
    return observation, trajectory


def test_trl_and_openenv_report_the_episode_alike(played, restock_task):
    observation, trajectory = played
    report = episode_report(trajectory)
    assert list(report) == list(EPISODE_REPORT)
    assert {name: observation.metrics[name] for name in EPISODE_REPORT} == report
    trl_environment = environment_class(restock_task, "ptc")()
    trl_environment.trajectory = trajectory   # the episode this rollout played
    logged: dict[str, float] = {}
    episode_metrics([[]], environments=[trl_environment], log_metric=logged.__setitem__)
    assert {name: logged[f"progagent/{name}"] for name in EPISODE_REPORT} == report
    assert logged["progagent/claim_done"] == 1.0 and logged["progagent/infrastructure_errors"] == 0.0


VERIFIERS_REPORT = textwrap.dedent('''
    import asyncio, json, sys
    import verifiers.v1 as vf
    from verifiers.v1.trace import AgentInfo, TraceTask
    from progagent_lib.harness.trajectory import read_jsonl
    from progagent_lib.integrations import verifiers_env as ve

    (trajectory,) = read_jsonl(sys.argv[1])
    config = ve.ProgAgentTasksetConfig(id="progagent", tasks_dir=sys.argv[2], tasks=[trajectory.task_id])
    task = next(iter(ve.ProgAgentTaskset(config).load()))
    trace = vf.Trace(task=TraceTask(type="ProgAgentTask", data=task.data), agent=AgentInfo(config=vf.AgentConfig()),
                     info={"progagent": ve.summary(trajectory)})   # what ProgAgentHarness records of an episode
    print("RESULT " + json.dumps(asyncio.run(task.progagent_metrics(trace))))
''')


def test_verifiers_reports_the_episode_alike(played, tmp_path):
    if not VERIFIERS_PYTHON.exists():
        if os.environ.get("CI"):
            raise RuntimeError(f"{VERIFIERS_PYTHON.parent.parent} is missing; the Makefile must set it up")
        pytest.skip("the verifiers venv (.venv-verifiers) is missing")
    _, trajectory = played
    write_jsonl(trajectory, tmp_path / "episode.jsonl")
    done = subprocess.run([str(VERIFIERS_PYTHON), "-c", VERIFIERS_REPORT, str(tmp_path / "episode.jsonl"), str(TASKS)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    metrics = json.loads(done.stdout.split("RESULT ", 1)[1])
    assert {name: metrics[f"progagent_{name}"] for name in EPISODE_REPORT} == episode_report(trajectory)
