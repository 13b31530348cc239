"""Episodes on other machines: GSPO's rollout function plays through two real OpenEnv servers (`progagent openenv serve`,
two subprocesses sharing one token file) and gives the trajectories of local play, turn for turn; the servers are used
round-robin; a bounded number of local kernels plays a batch in waves with the same result; bad hosts are refused.

The policy is deterministic: the oracle teacher's PTC turns, in the tiny model's tokens, replayed by `ContextReplay`
(each context gets the next teacher turn it does not yet hold, so a batch played in waves replays as one). The GSPO
trainer is a stand-in with the one attribute the rollout function reads (`processing_class`), as in
tests/train/test_train_gspo.py: TRL's trainer itself is not needed to play a group.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import replace
from pathlib import Path

import pytest

from progagent_lib import load_task
from progagent_lib.generation import TurnOutput
from progagent_lib.generation.tiny_model import TinyModelConfig, build_tiny_model
from progagent_lib.harness import read_jsonl
from progagent_lib.harness.chat_format import ChatFormat
from progagent_lib.harness.episode import Episode, run_episode
from progagent_lib.harness.http_guard import new_token
from progagent_lib.integrations.openenv import ProgAgentEnvClient
from progagent_lib.integrations.openenv_remote import EnvServers, RemoteEnvError
from progagent_lib.policy import OracleTeacher
from progagent_lib.train.env_hosts import LocalKernels, episode_host
from progagent_lib.train.feasibility import UNLIMITED
from progagent_lib.train.gspo import (
    DYNAMICS_FILE,
    DynamicsLog,
    GSPORunConfig,
    make_rollout_func,
)

REPO = Path(__file__).resolve().parents[2]
TASK = "retail/restock_orders"
SEEDS = (0, 1)
GROUP = 2          # rollouts per prompt
CAPACITY = 4       # each server's --max-concurrent-envs


# --- two servers, one token file -----------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(url: str, token: str) -> bool:
    request = urllib.request.Request(f"{url}/health", headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def token_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("token") / "openenv.token"
    path.write_text(new_token() + "\n")
    path.chmod(0o600)
    return path


@pytest.fixture(scope="module")
def servers(tmp_path_factory, token_file):
    """Two `progagent openenv serve` processes: [(url, the file each appends its finished trajectories to)]."""
    folder = tmp_path_factory.mktemp("servers")
    token = token_file.read_text().strip()
    started = []
    for i in range(2):
        port, log = free_port(), folder / f"server{i}.jsonl"
        process = subprocess.Popen(
            [sys.executable, "-m", "progagent_lib.integrations.openenv_cli", "serve", "--tasks-dir", "tasks",
             "--port", str(port), "--token-file", str(token_file), "--trajectories", str(log),
             "--max-concurrent-envs", str(CAPACITY)],
            cwd=REPO, env={**os.environ, "PROGAGENT_EPISODES": str(folder / f"episodes{i}")},
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        started.append((process, f"http://127.0.0.1:{port}", log))
    try:
        deadline = time.monotonic() + 120
        for process, url, _ in started:
            while not healthy(url, token):
                assert process.poll() is None, f"the server at {url} exited: {process.stderr.read()[-2000:]}"
                assert time.monotonic() < deadline, f"the server at {url} did not start in 120 s"
                time.sleep(0.2)
        yield [(url, log) for _, url, log in started]
    finally:
        for process, _, _ in started:
            process.terminate()
        for process, _, _ in started:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


# --- a deterministic policy ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_path(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("tiny")
    build_tiny_model(REPO / "tasks", TinyModelConfig(vocab_size=1024, hidden_size=64, intermediate_size=128,
                                                     head_dim=16), save_to=path)
    return path


@pytest.fixture(scope="module")
def chat(tiny_path) -> ChatFormat:
    from transformers import AutoTokenizer

    return ChatFormat(AutoTokenizer.from_pretrained(str(tiny_path)), model_name=str(tiny_path))


@pytest.fixture(scope="module")
def task():
    return load_task(REPO / "tasks" / TASK)


@pytest.fixture(scope="module")
def teacher(task, chat) -> list:
    """The PTC teacher's episode of each seed, played locally with the tiny model's token counts."""
    return [run_episode(task, "v0", seed, "ptc", OracleTeacher("ptc"), UNLIMITED, tokenizer=chat.tokenizer)
            for seed in SEEDS]


def find(context: list[int], turn: list[int], start: int) -> int:
    first = turn[0]
    for at in range(start, len(context) - len(turn) + 1):
        if context[at] == first and context[at:at + len(turn)] == turn:
            return at
    return -1


class ContextReplay:
    """A turn generator replaying the teacher: each context gets the next teacher turn it does not hold yet. It keeps
    no state between calls, so it replays a batch played in waves or in any order; `widest` is the largest call."""

    def __init__(self, chat: ChatFormat, trajectories: list):
        self.scripts = [(chat.prompt_ids(t.messages[:2], t.tools), chat.assistant_turns(t.messages, t.tools))
                        for t in trajectories]
        self.widest = 0

    def __call__(self, contexts: list[list[int]], max_new_tokens: int) -> list[TurnOutput]:
        self.widest = max(self.widest, len(contexts))
        return [self.next_turn(context) for context in contexts]

    def next_turn(self, context: list[int]) -> TurnOutput:
        prompt, turns = next((p, s) for p, s in self.scripts if context[:len(p)] == p)
        position, played = len(prompt), 0
        for turn in turns:
            at = find(context, turn, position)
            if at < 0:
                break
            position, played = at + len(turn), played + 1
        return TurnOutput(list(turns[played]), [0.0] * len(turns[played]))


def gspo_config(**fields) -> GSPORunConfig:
    defaults = {"tasks_root": "tasks", "task_ids": [TASK], "harness": "ptc", "scales": ["v0"],
                "train_seeds": list(SEEDS), "num_generations": GROUP, "prompts_per_step": len(SEEDS), "max_turns": 20,
                "max_new_tokens": None, "max_context_tokens": None}
    return GSPORunConfig(**{**defaults, **fields})


def rollout(config: GSPORunConfig, task, chat, replay: ContextReplay, tmp_path: Path, seeds=SEEDS) -> list:
    """GSPO's rollout function on one generation batch (TRL hands it each prompt GROUP times, group by group)."""
    prompts = [[{"role": "user", "content": "x", "episode": f"{task.id}|v0|{seed}"}] for seed in seeds
               for _ in range(GROUP)]
    dynamics = DynamicsLog(tmp_path / DYNAMICS_FILE, group_size=GROUP, sample_episodes=0)
    trainer = type("Trainer", (), {"processing_class": chat.tokenizer})()
    out = make_rollout_func(config, [task], dynamics, turn_generator=lambda trainer, specs: replay, chat=chat)(
        prompts, trainer)
    assert len(out["completion_ids"]) == len(prompts)
    return [e.trajectory for e in dynamics.pending]


def comparable(trajectory) -> dict:
    """Everything a trajectory records but its timings."""
    data = trajectory.to_dict()
    data.pop("seconds")
    for call in data["calls"]:
        call.pop("seconds")
    return data


# --- must show: the same trajectories, through both servers ----------------------------------------------
def test_gspo_rollouts_through_two_servers_equal_local_play(servers, token_file, task, chat, teacher, tmp_path):
    assert [t.reward for t in teacher] == [1.0, 1.0]
    remote_config = gspo_config(env_servers=[url for url, _ in servers], env_server_token_file=str(token_file))
    local = rollout(gspo_config(), task, chat, ContextReplay(chat, teacher), tmp_path / "local")
    remote = rollout(remote_config, task, chat, ContextReplay(chat, teacher), tmp_path / "remote")
    assert [t.end_reason for t in local] == ["claim_done"] * 4 and [t.reward for t in local] == [1.0] * 4
    assert all(t.model_tool_calls >= 2 and t.calls[0].kind == "program" for t in local)   # real programs ran
    for mine, theirs in zip(local, remote, strict=True):
        assert comparable(theirs) == comparable(mine)

    # Ended by a budget here (max_turns), not by claim_done: the server judges the state as left, as local play does.
    short_local = rollout(gspo_config(max_turns=2), task, chat, ContextReplay(chat, teacher), tmp_path / "l2", (0,))
    short_remote = rollout(replace(remote_config, max_turns=2), task, chat, ContextReplay(chat, teacher),
                           tmp_path / "r2", (0,))
    assert [t.end_reason for t in short_local] == ["max_turns"] * GROUP and short_local[0].criteria
    assert [comparable(t) for t in short_remote] == [comparable(t) for t in short_local]

    # Round-robin: each server hosted half of the 6 remote episodes (each appends every episode it finished).
    hosted = {url: read_jsonl(log) if log.exists() else [] for url, log in servers}
    assert sorted(len(v) for v in hosted.values()) == [3, 3], {url: len(v) for url, v in hosted.items()}
    assert sorted(t.reward for v in hosted.values() for t in v) == [0.0, 0.0, 1.0, 1.0, 1.0, 1.0]


def test_evaluation_through_a_server_equals_local_evaluation(servers, token_file, tiny_path, tmp_path, monkeypatch):
    """`evaluate` with env_servers: the tiny model, greedy, plays the same episodes as it does here."""
    from progagent_lib.train.evaluate import EvalConfig, evaluate

    monkeypatch.chdir(REPO)
    config = EvalConfig(model=str(tiny_path), task_ids=[TASK], harnesses=["ptc"], seeds=[0, 1], max_turns=2,
                        max_new_tokens=16, output_dir=str(tmp_path / "local"))
    url, hosted = servers[1]
    before = len(read_jsonl(hosted)) if hosted.exists() else 0
    local, _ = evaluate(config)
    remote, _ = evaluate(replace(config, output_dir=str(tmp_path / "remote"), env_servers=[url],
                                 env_server_token_file=str(token_file)))
    assert len(local) == 2 and not any(t.errored for t in local + remote)
    assert len(read_jsonl(hosted)) == before + 2    # the server played them
    assert [comparable(t) for t in remote] == [comparable(t) for t in local]


def test_bounded_local_kernels_play_the_batch_in_waves(task, chat, teacher, tmp_path):
    unbounded = rollout(gspo_config(), task, chat, ContextReplay(chat, teacher), tmp_path / "all")
    replay = ContextReplay(chat, teacher)
    bounded = rollout(gspo_config(max_local_kernels=2), task, chat, replay, tmp_path / "two")
    assert replay.widest == 2       # never more than two local episodes in one lockstep wave
    assert [comparable(t) for t in bounded] == [comparable(t) for t in unbounded]


def test_a_local_episode_waits_for_a_free_kernel_slot(task):
    """The semaphore: with one slot, a second episode (another thread) starts only when the first has closed."""
    host = LocalKernels(1)
    first = Episode(task, "v0", 0, "dtc", env_host=host)
    second_started = threading.Event()

    def start_second():
        with Episode(task, "v0", 1, "dtc", env_host=host):
            second_started.set()

    thread = threading.Thread(target=start_second)
    thread.start()
    assert not second_started.wait(2.0) and host.live == 1
    first.close()
    assert second_started.wait(60)
    thread.join(60)
    assert (host.live, host.peak) == (0, 1)
    # One thread that holds every slot would wait for itself: refused with the fix, instead of hanging.
    with Episode(task, "v0", 0, "dtc", env_host=host), \
            pytest.raises(RuntimeError, match="already holds all 1 local kernel slots"):
        Episode(task, "v0", 1, "dtc", env_host=host)
    assert host.live == 0


# --- bad hosts are refused, each with its fix ---------------------------------------------------------------
def test_a_wrong_token_or_an_absent_server_is_refused_before_any_episode(servers, tmp_path):
    wrong = tmp_path / "wrong.token"
    wrong.write_text(new_token())
    config = gspo_config(env_servers=[servers[0][0]], env_server_token_file=str(wrong))
    with pytest.raises(RemoteEnvError, match="refused this trainer.*HTTP 401.*env_server_token_file"):
        episode_host(config)
    absent = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(RemoteEnvError, match=f"{absent} cannot be reached.*progagent openenv serve"):
        EnvServers([absent], new_token()).check()


def test_a_server_with_another_version_of_the_task_is_refused(servers, token_file, task, chat, teacher, tmp_path):
    """The trainer's task pool and the server's must agree: a local copy whose prompt differs ends errored, named."""
    import shutil

    copy = tmp_path / "tasks" / TASK
    shutil.copytree(task.root, copy)
    (copy / "prompt.md").write_text((copy / "prompt.md").read_text() + "\nAlso say hello.\n")
    other = load_task(copy)
    assert other.id == task.id
    config = gspo_config(env_servers=[servers[0][0]], env_server_token_file=str(token_file))
    played = rollout(config, other, chat, ContextReplay(chat, teacher), tmp_path / "run", (0,))
    assert all(t.errored and "serves another version of retail/restock_orders" in t.error for t in played)


def test_a_full_or_absent_server_is_skipped_and_none_left_is_an_error_naming_the_fix(servers, token_file, task):
    (busy, _), (free, _) = servers
    token = token_file.read_text().strip()
    holders = [ProgAgentEnvClient(base_url=busy, token=token).sync() for _ in range(CAPACITY)]
    try:
        for client in holders:
            client.reset(task=TASK, scale="v0", seed=0, harness="dtc")
        both = EnvServers([busy, free], token)
        with Episode(task, "v0", 0, "dtc", env_host=both) as episode:
            assert episode.session.url == free and both.opened == {free: 1}
        with pytest.raises(RemoteEnvError, match="no environment server can take.*: full.*--max-concurrent-envs"):
            Episode(task, "v0", 0, "dtc", env_host=EnvServers([busy], token, capacity_wait_s=1.0))
        # A server that went away is skipped as a full one is.
        gone = f"http://127.0.0.1:{free_port()}"
        skipping = EnvServers([gone, free], token)
        with Episode(task, "v0", 0, "dtc", env_host=skipping) as episode:
            assert episode.session.url == free and skipping.opened == {free: 1}
    finally:
        for client in holders:
            client.close()


@pytest.mark.parametrize("error_mode", ["is_error", "off"])
def test_the_configs_error_mode_is_the_servers(servers, token_file, task, error_mode):
    """A failing tool under the paper's isError ablation ("off") comes back as a plain result, remotely as here."""
    from progagent_lib.harness.turn import ToolCall, Turn

    turn = Turn(tool_calls=[ToolCall("cancel_purchase_order", {"order_id": 987654})])
    host = EnvServers([servers[1][0]], token_file.read_text().strip())
    played = []
    for env_host in (None, host):
        with Episode(task, "v0", 0, "dtc", error_mode=error_mode, env_host=env_host) as episode:
            episode.add_turn(turn)
            played.append((episode.messages[-1]["content"], episode.trajectory.calls[0].is_error))
    assert played[0] == played[1] and played[0][1] is (error_mode == "is_error")


def test_bad_env_host_settings_are_refused_naming_the_field():
    from progagent_lib.config import ConfigError
    from progagent_lib.train.evaluate import EvalConfig

    for bad, message in [
        ({"env_servers": "http://cpu-1:8766"}, "env_servers.*must be a list of server URLs"),
        ({"env_servers": ["ws://cpu-1:8766/ws"]}, "not an environment server's base URL: write http://HOST:PORT"),
        ({"env_servers": ["http://user:secret@cpu-1:8766"]}, "the token goes in a token file, not the URL"),
        ({"env_servers": ["http://cpu-1:8766", "http://cpu-1:8766/"]}, "lists a server twice"),
        ({"env_server_token_file": "token"}, "env_server_token_file.*read only with env_servers"),
        ({"max_local_kernels": 0}, "max_local_kernels=0: must be an integer >= 1 or null"),
    ]:
        for kind in (GSPORunConfig, EvalConfig):
            with pytest.raises(ConfigError, match=message):
                kind(**bad)
