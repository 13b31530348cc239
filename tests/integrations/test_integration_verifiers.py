"""verifiers 0.4 (`progagent_lib.integrations.verifiers_env`): `vf-eval progagent` runs our tasks for real.

verifiers pins mcp==2.0.0 and openai<3, which would downgrade this venv's packages, so it lives in its own venv,
`.venv-verifiers` (verifiers==0.4.0 + this package without dependencies + jupyter_client/ipykernel + the
`environments/progagent` wrapper): everything verifiers-side runs there, in a subprocess.

The model: `ScriptedModelServer`, a tiny OpenAI-compatible HTTP server on 127.0.0.1 (a free port, started by the
test). It STANDS IN FOR A REAL MODEL SERVER (the project's engine, vLLM, an API): its chat-completions answers
are the tool calls of `OracleTeacher(harness)` for that episode. The teacher is run on the side beforehand (in
this process, through our own `run_episode`), and the server replays its assistant turns: the request's first
user message (the instance's instruction) and tool names pick the episode, the number of assistant messages
already in the conversation picks the turn. The teacher's turns only replay to R = 1 if verifiers' rollout hands
every call to the same episode rules and returns the same observations.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from progagent_lib import load_task
from progagent_lib.harness import run_episode
from progagent_lib.policy import OracleTeacher

REPO = Path(__file__).resolve().parents[2]
VENV = REPO / ".venv-verifiers"
PYTHON = VENV / "bin" / "python"
VF_EVAL = VENV / "bin" / "vf-eval"
TASKS = ["retail/restock_orders", "customer_support/sla_escalations"]
INSTALL = ("python -m venv .venv-verifiers && .venv-verifiers/bin/pip install verifiers==0.4.0 "
           "jupyter_client==8.10.0 ipykernel==7.4.0 && .venv-verifiers/bin/pip install --no-deps -e . "
           "-e environments/progagent")

if not (PYTHON.exists() and VF_EVAL.exists()):
    if os.environ.get("CI"):
        raise RuntimeError(f"{VENV} is missing; the Makefile must set it up: {INSTALL}")
    pytest.skip(f"{VENV} is missing (set it up with: {INSTALL})", allow_module_level=True)


# --- the scripted model server -------------------------------------------------------------------------
class ScriptedModelServer:
    """An OpenAI-compatible chat-completions server replaying the teacher's turns (a stand-in for a real model)."""

    def __init__(self) -> None:
        self.episodes: dict[tuple[str, frozenset], list[dict]] = {}
        self.requests = 0
        self.unknown: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": "scripted-teacher", "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                server.requests += 1
                message = server.answer(body)
                if message is None:
                    return self._send(400, {"error": {"message": "the scripted model knows no such episode/turn"}})
                if body.get("stream"):
                    return self._stream(body, message)
                finish = "tool_calls" if message.get("tool_calls") else "stop"
                self._send(200, {"id": "chatcmpl-scripted", "object": "chat.completion", "created": int(time.time()),
                                 "model": body.get("model", "scripted-teacher"),
                                 "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                                 "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}})

            def _stream(self, body, message):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                base = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": int(time.time()),
                        "model": body.get("model", "scripted-teacher")}
                delta = {"role": "assistant", "content": message.get("content") or ""}
                if message.get("tool_calls"):
                    delta["tool_calls"] = [dict(c, index=i) for i, c in enumerate(message["tool_calls"])]
                finish = "tool_calls" if message.get("tool_calls") else "stop"
                chunks = [dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": None}]),
                          dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}])]
                if (body.get("stream_options") or {}).get("include_usage"):
                    chunks.append(dict(base, choices=[], usage={"prompt_tokens": 0, "completion_tokens": 0,
                                                                "total_tokens": 0}))
                for chunk in chunks:
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

            def _send(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def learn(self, trajectory) -> None:
        """Remember the teacher's assistant turns of one episode, keyed by its instruction and its tools."""
        turns = []
        for m in trajectory.messages:
            if m["role"] == "assistant":
                turns.append({"role": "assistant", "content": m.get("content") or "",
                              **({"tool_calls": m["tool_calls"]} if m.get("tool_calls") else {})})
        names = frozenset(t["function"]["name"] for t in trajectory.tools)
        self.episodes[(trajectory.instruction, names)] = turns

    def answer(self, body: dict) -> dict | None:
        messages = body.get("messages") or []
        users = [m for m in messages if m.get("role") == "user"]
        instruction = users[0]["content"] if users else ""
        if isinstance(instruction, list):  # content parts
            instruction = "".join(p.get("text", "") for p in instruction if isinstance(p, dict))
        names = frozenset(t["function"]["name"] for t in body.get("tools") or [])
        turns = self.episodes.get((instruction, names))
        index = sum(m.get("role") == "assistant" for m in messages)
        if turns is None or index >= len(turns):
            self.unknown.append(instruction[:80])
            return None
        return turns[index]

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


# --- helpers -------------------------------------------------------------------------------------------
def venv_env(episodes_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH"))}
    env.update(PROGAGENT_EPISODES=str(episodes_dir), SCRIPTED_MODEL_KEY="not-a-secret", VF_NO_PUSH="1",
               PATH=f"{VENV / 'bin'}:{env.get('PATH', '')}", PYTHONPATH=str(REPO / "environments" / "progagent"))
    return env


def verifiers_kernels() -> int:
    """Live PTC kernels started by the verifiers venv's python (nothing else on the machine runs that python)."""
    count = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"ipykernel_launcher" in cmdline and any(b".venv-verifiers" in part for part in cmdline):
            count += 1
    return count


def teacher_server(harnesses: list[str], seeds: list[int]) -> ScriptedModelServer:
    server = ScriptedModelServer()
    for name in TASKS:
        task = load_task(REPO / "tasks" / name)
        for harness in harnesses:
            for seed in seeds:
                trajectory = run_episode(task, "v0", seed, harness, OracleTeacher(harness))
                assert trajectory.reward == 1.0, (name, harness, seed, trajectory.end_reason)
                server.learn(trajectory)
    return server


def vf_eval(server: ScriptedModelServer, out: Path, episodes_dir: Path, harness: str, *extra: str,
            timeout: float = 400) -> subprocess.CompletedProcess:
    argv = [str(VF_EVAL), "progagent", "-m", "scripted-teacher", "--client.base-url", server.base_url,
            "--client.api-key-var", "SCRIPTED_MODEL_KEY", "--no-push", "-o", str(out), "-c", "1",
            "--env.taskset.tasks-dir", str(REPO / "tasks"), "--env.taskset.tasks", *TASKS,
            "--env.taskset.harness", harness, *extra]
    return subprocess.run(argv, cwd=out.parent, env=venv_env(episodes_dir), capture_output=True, text=True,
                          timeout=timeout)


def read_episodes(out: Path) -> list[dict]:
    """vf-eval's record: one JSON line per episode in `<run>/traces.jsonl`, its agent traces under `traces`."""
    files = sorted(out.rglob("traces.jsonl"))
    assert files, f"vf-eval wrote no traces.jsonl under {out}"
    return [json.loads(line) for f in files for line in f.read_text().splitlines() if line.strip()]


def reward_of(trace: dict) -> float:
    value = trace["rewards"]["verifier_reward"]
    return float(value["score"] if isinstance(value, dict) else value)


# --- the "must show": vf-eval against an OpenAI-compatible server, the teacher's turns reach R = 1 -------
@pytest.mark.slow
@pytest.mark.parametrize("harness,group", [("ptc", 2), ("dtc", 1)])
def test_vf_eval_runs_the_teacher_to_reward_one(tmp_path, harness, group):
    """`vf-eval progagent` (verifiers' own entry point) against the scripted OpenAI-compatible server: every episode
    reaches R = 1. Under PTC each task is rolled out as a group of 2 (`-r 2`, a GRPO group): same (task, scale, seed)."""
    episodes_dir = tmp_path / "episodes"
    episodes_dir.mkdir()
    kernels_before = verifiers_kernels()
    with teacher_server([harness], [0]) as server:
        started = time.perf_counter()
        result = vf_eval(server, tmp_path / "outputs", episodes_dir, harness, "-r", str(group))
        seconds = time.perf_counter() - started
    log = result.stdout[-4000:] + result.stderr[-6000:]
    assert result.returncode == 0, log
    episodes = read_episodes(tmp_path / "outputs")
    assert len(episodes) == len(TASKS) * group, log
    traces = []
    for episode in episodes:
        assert episode["ok"] and not episode["errors"], (episode["errors"], log)
        (trace,) = episode["traces"]
        traces.append(trace)
        assert trace["ok"] and not trace["errors"], (trace["errors"], log)
        info = trace["info"]["progagent"]
        assert info["harness"] == harness and info["end_reason"] == "claim_done", info
        assert reward_of(trace) == 1.0 and info["reward"] == 1.0, (info, log)
        assert trace["metrics"]["progagent_score"] == 1.0
        if harness == "ptc":  # the programs ran in the kernel: tool calls came from inside programs
            assert info["tool_calls"] > info["model_tool_calls"] >= 1
    assert sorted(t["info"]["progagent"]["task"] for t in traces) == sorted(TASKS * group)
    keys = {}
    for episode in episodes:  # a group's rollouts share one task row: (task, scale, seed) and the instance parameters
        keys.setdefault(episode["task"]["data"]["task"], set()).add(json.dumps(episode["task"]["data"], sort_keys=True))
    assert all(len(rows) == 1 for rows in keys.values()), keys
    assert server.requests >= len(TASKS) and not server.unknown, server.unknown
    # verifiers' own summary reports the reward: "rewards   verifier_reward 1.00"
    report = result.stdout + result.stderr
    assert re.search(r"rewards\s+verifier_reward 1\.00", report), log
    # every episode's state copy and kernel were released
    assert list(episodes_dir.iterdir()) == []
    assert verifiers_kernels() == kernels_before
    print(f"vf-eval {harness}: {len(traces)} episodes in {seconds:.1f}s\n" +
          "\n".join(line for line in report.splitlines() if "reward" in line))


# --- bad input: clear errors, nothing left behind ----------------------------------------------------------
BAD_INPUT = textwrap.dedent(r'''
    import asyncio, json, os, sys
    from pathlib import Path
    from types import SimpleNamespace
    import verifiers.v1 as vf
    from progagent_lib.integrations import verifiers_env as ve
    from progagent_lib.runtime import kernel as kernel_module

    tasks_dir = sys.argv[1]
    episodes = Path(os.environ["PROGAGENT_EPISODES"])
    def leftovers():
        return len(list(episodes.iterdir())), len(kernel_module._LIVE_SESSIONS)
    out = {}

    def error_of(fn):
        try:
            fn()
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
        return None

    def taskset(**config):
        return ve.ProgAgentTaskset(ve.ProgAgentTasksetConfig(id="progagent", tasks_dir=tasks_dir, **config))

    out["missing_seed"] = error_of(lambda: list(taskset(rows=[{"task": "retail/restock_orders", "scale": "v0"}])))
    out["missing_task"] = error_of(lambda: list(taskset(rows=[{"scale": "v0", "seed": 0}])))
    out["unknown_task"] = error_of(lambda: list(taskset(tasks=["retail/no_such_task"])))
    out["unknown_scale"] = error_of(lambda: list(taskset(rows=[{"task": "retail/restock_orders", "scale": "v9", "seed": 0}])))
    out["unknown_harness"] = error_of(lambda: ve.ProgAgentTasksetConfig(id="progagent", harness="direct"))
    out["after_bad_rows"] = leftovers()

    # a tool called after the episode ended
    data = ve.make_data({"task": "retail/restock_orders", "scale": "v0", "seed": 0}, tasks_dir=tasks_dir)
    episode = ve.open_episode(data)
    from progagent_lib.harness.turn import ToolCall, Turn
    episode.add_turn(Turn(tool_calls=[ToolCall("programmatic_tool_call", {"code": "print(1)"})]))
    out["live"] = leftovers()
    episode.add_turn(Turn(tool_calls=[ToolCall("claim_done", {"action": "done"})]))
    out["after_end"] = error_of(lambda: episode.add_turn(Turn(tool_calls=[ToolCall("terminal", {"command": "ls"})])))
    trajectory = episode.to_trajectory()
    out["ended_reward"] = trajectory.reward
    out["after_ended_episode"] = leftovers()

    # a trainer that never ends an episode: the rollout is cancelled (a verifiers timeout) while the model hangs
    import http.server, threading
    class Hang(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a): pass
        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0); self.rfile.read(n)
            turn = getattr(self.server, "turns", 0); self.server.turns = turn + 1
            if turn == 0:  # first turn: a program, so that the kernel is live; then the model never answers
                body = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [
                    {"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": "", "tool_calls": [
                        {"id": "c0", "type": "function", "function": {"name": "programmatic_tool_call",
                                                                      "arguments": json.dumps({"code": "x = 1"})}}]}}]}).encode()
                self.send_response(200); self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
            else:
                self.server.hung.set(); threading.Event().wait(30)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hang); httpd.hung = threading.Event(); httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    harness = ve.ProgAgentHarness(ve.ProgAgentHarnessConfig(id="progagent"))
    ctx = SimpleNamespace(model="m", sampling=None)
    trace = SimpleNamespace(info={})
    async def never_ending():
        task = asyncio.ensure_future(harness.launch(ctx, trace, None, f"http://127.0.0.1:{httpd.server_address[1]}/v1",
                                                    "k", {}, data))
        while not httpd.hung.is_set():
            await asyncio.sleep(0.05)
        out["while_hung"] = leftovers()
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return "cancelled"
    out["never_ending"] = asyncio.run(never_ending())
    out["after_cancel"] = leftovers()
    print("RESULT " + json.dumps(out))
''')


def test_bad_input_gives_clear_errors_and_leaves_nothing(tmp_path):
    episodes_dir = tmp_path / "episodes"
    episodes_dir.mkdir()
    kernels_before = verifiers_kernels()
    result = subprocess.run([str(PYTHON), "-c", BAD_INPUT, str(REPO / "tasks")], env=venv_env(episodes_dir),
                            capture_output=True, text=True, timeout=240, cwd=tmp_path)
    line = next((l for l in result.stdout.splitlines() if l.startswith("RESULT ")), None)
    assert result.returncode == 0 and line, result.stdout[-3000:] + result.stderr[-5000:]
    out = json.loads(line[len("RESULT "):])
    assert "ProgAgentInputError" in out["missing_seed"] and "['seed']" in out["missing_seed"]
    assert "['task']" in out["missing_task"]
    assert "unknown task 'retail/no_such_task'" in out["unknown_task"] and "retail/restock_orders" in out["unknown_task"]
    assert "unknown scale 'v9'" in out["unknown_scale"]
    assert "direct" in out["unknown_harness"]
    assert out["after_bad_rows"] == [0, 0]
    assert out["live"] == [1, 1]                       # the episode's state copy and kernel exist while it runs
    assert "the episode has ended (claim_done)" in out["after_end"]
    assert out["ended_reward"] == 0.0                  # "done" is not the right report
    assert out["after_ended_episode"] == [0, 0]
    assert out["while_hung"] == [1, 1] and out["never_ending"] == "cancelled"
    assert out["after_cancel"] == [0, 0]
    assert list(episodes_dir.iterdir()) == []
    assert verifiers_kernels() == kernels_before
