"""OpenEnv (openenv-core 0.3.0): OpenEnv's own clients drive our server through whole teacher episodes.

The server is OpenEnv's `create_app` over `ProgAgentEnvironment`, run by uvicorn on 127.0.0.1 on a free port
(in a thread of this process, so its kernels and episode folders can be counted) and stopped at the end. The
teacher's turns are played on the client side: `OracleTeacher(harness)` reads only the messages the server sent.
The server needs its per-start token (tests/security/test_isolation_openenv_guard.py checks the guard): our client reads it from
$PROGAGENT_OPENENV_TOKEN, as a trainer configured by environment does; OpenEnv's own clients get it by `token_client`.
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import psutil
import pytest
import uvicorn
from openenv.core import GenericEnvClient
from openenv.core.env_server import CallToolAction
from openenv.core.mcp_client import MCPToolClient

from progagent_lib import load_task
from progagent_lib.harness import read_jsonl
from progagent_lib.harness.spec import model_tool_schemas
from progagent_lib.integrations import openenv_cli
from progagent_lib.integrations.openenv import (
    TOKEN_ENV, OpenEnvServerConfig, ProgAgentAction, ProgAgentEnvClient, ProgAgentEnvironment, make_app, new_token, play,
    token_client,
)
from progagent_lib.policy import OracleTeacher
from progagent_lib.runtime import kernel as kernel_module

REPO = Path(__file__).resolve().parents[2]
TASKS = REPO / "tasks"
RESTOCK, SLA = "retail/restock_orders", "customer_support/sla_escalations"
META = {"programmatic_tool_call", "terminal", "claim_done"}
TOKEN = new_token()
AUTH = {"Authorization": f"Bearer {TOKEN}"}


# --- the server and what it leaves behind --------------------------------------------------------------
@pytest.fixture(scope="module")
def episodes_dir(tmp_path_factory):
    """A private episodes root: the counts are not disturbed by other test runs on the machine."""
    path = tmp_path_factory.mktemp("openenv-episodes")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PROGAGENT_EPISODES", str(path))
        patch.setenv(TOKEN_ENV, TOKEN)  # what ProgAgentEnvClient sends when no token= is passed
        yield path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_server(config: OpenEnvServerConfig):
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(make_app(config, token=TOKEN, port=port), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="openenv-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the OpenEnv server did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@pytest.fixture(scope="module")
def trajectories(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("openenv-trajectories") / "episodes.jsonl"


@pytest.fixture(scope="module")
def base_url(episodes_dir, trajectories):
    with running_server(OpenEnvServerConfig(tasks_dir=TASKS, scale="v0", harness="ptc", trajectories=trajectories)) as url:
        yield url


def leftovers(episodes_dir: Path) -> tuple[int, int, int]:
    """Episode folders, live kernel sessions, child processes (kernels) of this process. The verification server
    (progagent_lib.task.verify_*: one per host process, started by the first verification and kept) is not an
    episode's."""
    children = psutil.Process().children(recursive=True)
    verifiers = {p.pid for p in children if "progagent_lib.task.verify" in " ".join(_cmdline(p))}
    verifiers |= {c.pid for p in children if p.pid in verifiers for c in _descendants(p)}
    return (len(list(episodes_dir.iterdir())), len(kernel_module._LIVE_SESSIONS),
            len([p for p in children if p.pid not in verifiers]))


def _cmdline(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:  # gone meanwhile
        return []


def _descendants(process: psutil.Process) -> list[psutil.Process]:
    try:
        return process.children(recursive=True)
    except psutil.Error:
        return []


def wait_for(counts: tuple, episodes_dir: Path, timeout: float = 15.0) -> tuple:
    deadline = time.monotonic() + timeout
    while (now := leftovers(episodes_dir)) != counts and time.monotonic() < deadline:
        time.sleep(0.1)
    return now


@pytest.fixture
def clean(episodes_dir):
    """Asserts that a test leaves no episode folder and no kernel behind."""
    before = leftovers(episodes_dir)
    yield before
    assert wait_for(before, episodes_dir) == before


# --- must show: a whole teacher episode to reward 1, under PTC and DTC ---------------------------------
@pytest.mark.parametrize("harness", ["ptc", "dtc", "hybrid"])
def test_sync_client_plays_the_teacher_to_reward_1(base_url, harness, clean, episodes_dir, trajectories):
    task = load_task(TASKS / RESTOCK)
    with ProgAgentEnvClient(base_url=base_url).sync() as env:
        first = env.reset(task=RESTOCK, scale="v0", seed=0, harness=harness)
        offered = {t["function"]["name"] for t in first.observation.tool_schemas}
        direct = set(task.env_class.tool_specs) if harness != "ptc" else set()
        assert offered == (META - {"programmatic_tool_call"} if harness == "dtc" else META) | direct
        assert first.observation.instruction == task.instruction(0) and first.observation.params == task.params_for(0)
        assert [m["role"] for m in first.observation.messages] == ["system", "user"]

        result = play(env, OracleTeacher(harness), tasks_dir=TASKS, task=RESTOCK, scale="v0", seed=0, harness=harness)

        assert result.done and result.reward == 1.0
        assert result.observation.end_reason == "claim_done" and result.observation.score == 1.0
        assert all(c["passed"] for c in result.observation.criteria)
        state = env.state()
        assert state.finished and not state.live and state.reward == 1.0 and state.harness == harness
        assert state.metrics["turns"] == state.step_count and state.metrics["tool_calls"] > 0
        if harness == "ptc":
            assert state.step_count == 4 and state.metrics["model_tool_calls"] == 4
        # The ended episode's kernel and state copy are gone while the client is still connected.
        assert wait_for(clean, episodes_dir) == clean
        with pytest.raises(RuntimeError, match=r"the episode has ended \(claim_done; reward 1\).*call reset\(\)"):
            env.step(ProgAgentAction.call("claim_done", action="again"))
    written = read_jsonl(trajectories)[-1]  # the server's trajectory of the episode, as every path writes it
    assert (written.task_id, written.harness, written.policy, written.reward) == (RESTOCK, harness, "openenv", 1.0)


def test_async_client_plays_the_teacher_on_a_second_task(base_url, clean):
    """The client is async by default: the PTC teacher on sla_escalations over `async with`."""
    task = load_task(TASKS / SLA)

    async def episode():
        async with ProgAgentEnvClient(base_url=base_url) as env:
            result = await env.reset(task=SLA, scale="v0", seed=1, harness="ptc")
            agent = OracleTeacher("ptc").start_episode(task, result.observation.params)
            messages, tools = list(result.observation.messages), result.observation.tool_schemas
            while not result.done:
                result = await env.step(ProgAgentAction.from_turn(agent.act(messages, tools)))
                messages += result.observation.messages
            return result, await env.state()

    result, state = asyncio.run(episode())
    assert result.reward == 1.0 and result.observation.score == 1.0 and state.seed == 1 and state.task_id == SLA


def test_openenvs_generic_client_plays_the_dtc_teacher(base_url, clean):
    """OpenEnv's GenericEnvClient (plain dicts, nothing of ours on the client) through a DTC teacher episode."""
    task = load_task(TASKS / SLA)
    with token_client(GenericEnvClient)(base_url=base_url, token=TOKEN).sync() as env:
        result = env.reset(task=SLA, scale="v0", seed=0, harness="dtc")
        agent = OracleTeacher("dtc").start_episode(task, result.observation["params"])
        messages, tools = list(result.observation["messages"]), result.observation["tool_schemas"]
        while not result.done:
            turn = agent.act(messages, tools)
            result = env.step({"tool_calls": [{"name": c.name, "arguments": c.arguments, "id": c.id} for c in turn.tool_calls]})
            messages += result.observation["messages"]
        assert result.reward == 1.0 and result.observation["end_reason"] == "claim_done"
        assert result.observation["metrics"]["turns"] > 10  # DTC: one tool call per turn


def test_mcp_tool_mode_with_openenvs_mcp_client(base_url, clean):
    """OpenEnv's MCP tool mode: MCPToolClient lists our harness's tools and plays the PTC teacher by call_tool."""
    task = load_task(TASKS / RESTOCK)
    with token_client(MCPToolClient)(base_url=base_url, token=TOKEN).sync() as env:
        env.reset(task=RESTOCK, scale="v0", seed=0, harness="ptc")
        tools = env.list_tools()
        expected = model_tool_schemas("ptc", task.tool_schemas())
        assert [(t.name, t.input_schema) for t in tools] == [(s["function"]["name"], s["function"]["parameters"]) for s in expected]
        schemas = [{"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}}
                   for t in tools]
        agent = OracleTeacher("ptc").start_episode(task, task.params_for(0))
        messages: list[dict] = []
        while True:
            call = agent.act(messages, schemas).tool_calls[0]
            if call.name == "claim_done":
                break
            text = env.call_tool(call.name, **call.arguments)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
        result = env.step(CallToolAction(tool_name="claim_done", arguments=call.arguments))
        assert result.done and result.reward == 1.0
        assert result.observation.result["structured_content"]["reward"] == 1.0
        assert result.observation.result["structured_content"]["score"] == 1.0


# --- bad input: a clear error, nothing left behind -------------------------------------------------------
@pytest.mark.parametrize("reset, message", [
    ({"scale": "v0", "seed": 0}, r"reset needs task: an episode is identified by \(task, scale, seed\)"),
    ({"task": RESTOCK, "scale": "v0"}, r"reset needs seed"),
    ({"task": "retail/no_such_task", "seed": 0}, r"unknown task 'retail/no_such_task'.*tasks served here: .*retail/restock_orders"),
    ({"task": RESTOCK, "seed": 0, "scale": "v9"}, r"unknown scale 'v9'"),
    ({"task": RESTOCK, "seed": 0, "harness": "xtc"}, r"unknown harness 'xtc'"),
    ({"task": RESTOCK, "seed": 0, "prompt": "hi"}, r"unknown reset option\(s\) \['prompt'\]"),
    ({"task": RESTOCK, "seed": 0, "limits": {"max_turn": 3}}, r"unknown limit\(s\) \['max_turn'\]"),
])
def test_bad_resets_are_refused_clearly(base_url, reset, message, clean):
    with ProgAgentEnvClient(base_url=base_url).sync() as env:
        with pytest.raises(RuntimeError, match=message):
            env.reset(**reset)


def test_a_task_outside_the_served_folder_is_refused(base_url, tmp_path, clean):
    outside = tmp_path / "evil"
    outside.mkdir()
    (outside / "task.toml").write_text('id = "evil"\ndomain = "x"\ntitle = "x"\n')
    with ProgAgentEnvClient(base_url=base_url).sync() as env:
        with pytest.raises(RuntimeError, match="outside the served tasks folder"):
            env.reset(task=str(outside), seed=0)


def test_step_without_an_episode_is_refused(base_url, clean):
    with ProgAgentEnvClient(base_url=base_url).sync() as env:
        with pytest.raises(RuntimeError, match=r"no episode is running: call reset\(task=\.\.\., scale=\.\.\., seed=\.\.\.\) first"):
            env.step(ProgAgentAction.call("terminal", command="ls"))
    with token_client(GenericEnvClient)(base_url=base_url, token=TOKEN).sync() as env:
        with pytest.raises(RuntimeError, match="Invalid message"):
            env.step({"tool_calls": "not a list"})


def test_a_dropped_connection_releases_the_running_episode(base_url, clean, episodes_dir):
    env = ProgAgentEnvClient(base_url=base_url).sync()
    env.connect()
    env.reset(task=RESTOCK, scale="v0", seed=0, harness="ptc")
    result = env.step(ProgAgentAction.call("programmatic_tool_call", code="x = 41\nprint(x + 1)"))
    assert "42" in result.observation.messages[-1]["content"] and not result.done
    folders, kernels, _ = leftovers(episodes_dir)
    assert folders == clean[0] + 1 and kernels == clean[1] + 1  # the episode is live: its copy and its kernel
    env.close()  # the trainer goes away without ending the episode; `clean` checks the server released it


def test_a_trainer_that_never_ends_the_episode_hits_the_turn_budget(base_url, clean):
    with ProgAgentEnvClient(base_url=base_url).sync() as env:
        env.reset(task=RESTOCK, scale="v0", seed=0, harness="dtc", limits={"max_turns": 3})
        results = [env.step(ProgAgentAction.call("terminal", command="ls")) for _ in range(3)]
        assert [r.done for r in results] == [False, False, True]
        assert results[-1].reward == 0.0 and results[-1].observation.end_reason == "max_turns"
        assert results[-1].observation.score is not None and results[-1].observation.score < 1.0


def test_an_idle_session_is_closed_by_the_session_timeout(episodes_dir):
    """A trainer that neither ends its episode nor disconnects: OpenEnv's reaper closes the session."""
    before = leftovers(episodes_dir)
    config = OpenEnvServerConfig(tasks_dir=TASKS, task=RESTOCK, seed=0, harness="ptc", session_timeout=1.0)
    with running_server(config) as url:
        env = ProgAgentEnvClient(base_url=url).sync()
        env.connect()
        try:
            env.reset()  # task, scale and seed from the server's configuration
            env.step(ProgAgentAction.call("programmatic_tool_call", code="print(1)"))
            assert leftovers(episodes_dir)[:2] == (before[0] + 1, before[1] + 1)
            assert wait_for(before, episodes_dir, timeout=20) == before  # released while still connected
        finally:
            env.close()


def test_http_endpoints_are_stateless_and_say_so(base_url, clean):
    with httpx.Client(base_url=base_url, timeout=60, headers=AUTH) as http:
        reset = http.post("/reset", json={"task": RESTOCK, "scale": "v0", "seed": 0, "harness": "dtc"})
        assert reset.status_code == 200 and reset.json()["observation"]["task_id"] == RESTOCK
        step = http.post("/step", json={"action": {"tool_calls": [{"name": "terminal", "arguments": {"command": "ls"}}]}})
        assert step.status_code == 409 and "no episode is running" in step.json()["detail"]
        unknown = http.post("/reset", json={"task": "nope", "seed": 0})
        assert unknown.status_code == 409 and "unknown task 'nope'" in unknown.json()["detail"]
        assert http.get("/health").json()["status"] == "healthy"
        assert "tool_calls" in http.get("/schema").json()["action"]["properties"]


def test_the_serve_command_refuses_an_unknown_default_task(capsys):
    assert openenv_cli.main(["serve", "--tasks-dir", str(TASKS), "--task", "retail/nope"]) == 2
    assert "unknown task 'retail/nope'" in capsys.readouterr().err


def test_the_serve_command_runs_a_server(tmp_path):
    """`python -m progagent_lib.integrations.openenv_cli serve` (the `progagent openenv serve` entry point)."""
    port = free_port()
    episodes = tmp_path / "episodes"
    episodes.mkdir()
    env = {**os.environ, "PROGAGENT_EPISODES": str(episodes)}
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    server = subprocess.Popen([sys.executable, "-m", "progagent_lib.integrations.openenv_cli", "serve", "--tasks-dir",
                               str(TASKS), "--task", RESTOCK, "--seed", "0", "--harness", "dtc", "--port", str(port),
                               "--token-file", str(token_file)],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/health", headers=AUTH, timeout=2).status_code == 200:
                    break
            assert server.poll() is None and time.monotonic() < deadline, server.stderr.read() if server.poll() else "no start"
            time.sleep(0.2)
        with ProgAgentEnvClient(base_url=f"http://127.0.0.1:{port}", token=TOKEN).sync() as client:
            result = client.reset()
            assert result.observation.task_id == RESTOCK and result.observation.harness == "dtc"
            assert len(list(episodes.iterdir())) == 1
            result = client.step(ProgAgentAction.call("claim_done", action="nothing done"))
            assert result.done and result.reward == 0.0
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    assert list(episodes.iterdir()) == []


def test_reset_limits_override_the_servers(clean):
    """The environment alone (no server): the reset's limits win over the configuration's, the rest is kept."""
    environment = ProgAgentEnvironment(OpenEnvServerConfig(tasks_dir=TASKS, limits={"max_turns": 5, "max_tool_calls": 7}))
    try:
        environment.reset(task=RESTOCK, scale="v1", seed=2, harness="dtc", limits={"max_turns": 2})
        limits = environment.episode.limits
        assert (limits.max_turns, limits.max_tool_calls) == (2, 7)
        assert environment.state.live and environment.state.scale == "v1" and environment.state.seed == 2
    finally:
        environment.close()
    assert environment.episode is None and not environment.state.live
