"""The OpenEnv server's guard (issue 37 §6): a hostile local client, a cross-site page and a DNS-rebound name try to
run an episode; only a client with the token, under a name the server answers to, gets one.

A real server: `make_app` under uvicorn on 127.0.0.1 (a thread of this process, so refused attempts can be shown to
leave no episode folder), and `progagent openenv serve` as a subprocess for the command's flags. Real clients:
httpx for HTTP, `websockets` for the handshake (a DNS-rebound name is a WebSocket to `evil.example` whose TCP
connection goes to 127.0.0.1: the Host header says evil.example, as a rebinding browser's would), and our
`ProgAgentEnvClient`. The guard is `harness/http_guard.RequestGuard`, also in front of `progagent serve --transport http`.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
import uvicorn
from openenv.core import GenericEnvClient
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import InvalidStatus

from progagent_lib.harness.http_guard import SUBPROTOCOL_PREFIX, RequestGuard, new_token, split_host
from progagent_lib.integrations import openenv_cli
from progagent_lib.integrations.openenv import (
    TOKEN_ENV, OpenEnvServerConfig, ProgAgentAction, ProgAgentEnvClient, make_app, token_client,
)

REPO = Path(__file__).resolve().parents[2]
TASKS = REPO / "tasks"
RESTOCK = "retail/restock_orders"
TOKEN = new_token()
# A DTC episode: its steps run the task's tools on the host, so the guard is tested apart from the kernel sandbox.
RESET = {"type": "reset", "data": {"task": RESTOCK, "scale": "v0", "seed": 0, "harness": "dtc"}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def episodes_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("guard-episodes")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PROGAGENT_EPISODES", str(path))
        patch.delenv(TOKEN_ENV, raising=False)
        yield path


@pytest.fixture(scope="module")
def port(episodes_dir):
    port = free_port()
    app = make_app(OpenEnvServerConfig(tasks_dir=TASKS, scale="v0", harness="dtc"), token=TOKEN, host="127.0.0.1", port=port)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="openenv-guard-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the OpenEnv server did not start"
        time.sleep(0.05)
    yield port
    server.should_exit = True
    thread.join(timeout=30)


@pytest.fixture
def no_episode_left(episodes_dir):
    """A refused request must not have started an episode (no state copy); an accepted one released its own (the
    server closes a WebSocket session's environment shortly after the client left)."""
    yield
    deadline = time.monotonic() + 15
    while list(episodes_dir.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list(episodes_dir.iterdir()) == []


def auth(token: str = TOKEN) -> dict:
    return {"Authorization": f"Bearer {token}"}


def http_reset(port: int, headers: dict) -> httpx.Response:
    return httpx.post(f"http://127.0.0.1:{port}/reset", json=RESET["data"], headers=headers, timeout=60)


def handshake(port: int, *, name: str = "127.0.0.1", headers: dict | None = None,
              subprotocols: list[str] | None = None) -> tuple[int, str]:
    """Open ws://NAME:PORT/ws over a TCP connection to 127.0.0.1 (NAME need not resolve: a rebound DNS name), send a
    DTC reset; (101, the reset's task id) when the server took it, else (HTTP status, the refusal's text)."""
    async def attempt() -> tuple[int, str]:
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        try:
            async with ws_connect(f"ws://{name}:{port}/ws", sock=sock, additional_headers=headers or {},
                                  subprotocols=subprotocols, proxy=None, open_timeout=10) as ws:
                await ws.send(json.dumps(RESET))
                reply = json.loads(await asyncio.wait_for(ws.recv(), timeout=120))
                await ws.send(json.dumps({"type": "close"}))
                return 101, reply["data"]["observation"]["task_id"]
        except InvalidStatus as refused:
            return refused.response.status_code, bytes(refused.response.body or b"").decode()
    return asyncio.run(attempt())


# --- a DNS-rebound name ----------------------------------------------------------------------------------
def test_a_foreign_host_header_is_refused_on_http_and_on_the_websocket(port, no_episode_left):
    response = http_reset(port, {**auth(), "Host": f"evil.example:{port}"})
    assert response.status_code == 421 and "evil.example" in response.text
    assert http_reset(port, {**auth(), "Host": f"127.0.0.1:{port + 1}"}).status_code == 421  # the right name, another port
    status, reason = handshake(port, name="evil.example", headers=auth())
    assert status == 421 and "not a name this server answers to" in reason


@pytest.mark.parametrize("repeated", ["Host: evil.example", "Origin: http://127.0.0.1:{port}\r\nOrigin: http://evil.example",
                                      "Authorization: Bearer wrong-but-long-enough"])
def test_a_repeated_guarded_header_is_refused(port, repeated, no_episode_left):
    """A request naming the server and a foreign host (or origin, or token): which one a framework reads is not
    left to chance. (uvicorn itself refuses two Hosts; two Origins or two tokens reach the guard.)"""
    extra = repeated.format(port=port)
    request = (f"POST /reset HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\n{extra}\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(json.dumps(RESET['data']))}\r\n\r\n"
               f"{json.dumps(RESET['data'])}")
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(request.encode())
        status_line = sock.recv(200).split(b"\r\n")[0]
    assert int(status_line.split()[1]) == 400, status_line


# --- a cross-site page -----------------------------------------------------------------------------------
@pytest.mark.parametrize("origin", ["http://evil.example", "http://127.0.0.1:1", "null", "file://", "chrome-extension://x"])
def test_a_foreign_origin_is_refused_on_http(port, origin, no_episode_left):
    response = http_reset(port, {**auth(), "Origin": origin})
    assert response.status_code == 403 and "not allowed" in response.text


def test_a_foreign_origin_is_refused_on_the_websocket_handshake(port, no_episode_left):
    # With the right token too: a page that learnt it still may not drive the server from another site.
    status, reason = handshake(port, headers={**auth(), "Origin": "http://evil.example"})
    assert status == 403 and "Origin 'http://evil.example' is not allowed" in reason
    status, _ = handshake(port, headers={"Origin": "http://evil.example"},
                          subprotocols=[SUBPROTOCOL_PREFIX + TOKEN])  # a browser's way of sending the token
    assert status == 403


# --- no token, a wrong token -----------------------------------------------------------------------------
@pytest.mark.parametrize("headers", [{}, auth("0" * 64), {"Authorization": TOKEN}, {"Authorization": f"Basic {TOKEN}"},
                                     auth(TOKEN[:-1]), auth(TOKEN.upper())])
def test_a_missing_or_wrong_token_is_refused(port, headers, no_episode_left):
    response = http_reset(port, headers)
    assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"
    assert httpx.get(f"http://127.0.0.1:{port}/health", headers=headers).status_code == 401  # every route
    status, reason = handshake(port, headers=headers)
    assert status == 401 and "bearer token" in reason


def test_a_wrong_subprotocol_token_and_a_url_token_are_refused(port, no_episode_left):
    assert handshake(port, subprotocols=[SUBPROTOCOL_PREFIX + "0" * 64])[0] == 401
    assert handshake(port, subprotocols=[TOKEN])[0] == 401
    # never in the URL (logs, proxies, history keep it): a query parameter is not a credential
    assert httpx.get(f"http://127.0.0.1:{port}/health?token={TOKEN}").status_code == 401


def test_our_client_without_the_token_says_what_to_do(port, monkeypatch):
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    with pytest.raises(ValueError, match=rf"pass token=\.\.\. or set \${TOKEN_ENV}"):
        ProgAgentEnvClient(base_url=f"http://127.0.0.1:{port}")
    client = ProgAgentEnvClient(base_url=f"http://127.0.0.1:{port}", token="f" * 64).sync()
    with pytest.raises(ConnectionError, match=r"refused the connection \(HTTP 401\): missing or wrong bearer token"):
        client.connect()


# --- the right token under a loopback name: a whole episode ------------------------------------------------
@pytest.mark.parametrize("name", ["127.0.0.1", "localhost"])
def test_the_token_under_a_loopback_name_plays_an_episode(port, name, no_episode_left):
    """Our client (token from $PROGAGENT_OPENENV_TOKEN, as existing users configure it): reset, a direct tool call,
    claim_done; the verifier's verdict comes back."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(TOKEN_ENV, TOKEN)
        client = ProgAgentEnvClient(base_url=f"http://{name}:{port}", message_timeout_s=120)
    with client.sync() as env:
        first = env.reset(task=RESTOCK, scale="v0", seed=0, harness="dtc")
        assert first.observation.task_id == RESTOCK and [m["role"] for m in first.observation.messages] == ["system", "user"]
        listed = env.step(ProgAgentAction.call("get_supplier", supplier_id=1))
        assert not listed.done and listed.observation.calls[0]["is_error"] is False
        assert listed.observation.messages[-1]["role"] == "tool" and "name" in listed.observation.messages[-1]["content"]
        ended = env.step(ProgAgentAction.call("claim_done", action="nothing ordered"))
        assert ended.done and ended.reward == 0.0 and ended.observation.end_reason == "claim_done"
        assert ended.observation.criteria  # the verifier ran


def test_an_allowed_origin_and_the_browser_subprotocol_are_accepted(port, no_episode_left):
    """A same-site page (Origin naming the server) with the token as a subprotocol, and OpenEnv's own client."""
    status, task_id = handshake(port, headers={"Origin": f"http://localhost:{port}"},
                                subprotocols=[SUBPROTOCOL_PREFIX + TOKEN])
    assert (status, task_id) == (101, RESTOCK)
    assert http_reset(port, {**auth(), "Origin": f"http://127.0.0.1:{port}"}).status_code == 200
    with token_client(GenericEnvClient)(base_url=f"http://127.0.0.1:{port}", token=TOKEN).sync() as env:
        assert env.reset(**RESET["data"]).observation["task_id"] == RESTOCK


# --- `progagent openenv serve`: --allow-host, --token-file, the printed token ------------------------------
@contextlib.contextmanager
def serve_command(tmp_path: Path, *flags: str):
    """`python -m progagent_lib.integrations.openenv_cli serve ...` on a free port; yields (port, stderr's first line)."""
    port = free_port()
    episodes = tmp_path / "episodes"
    episodes.mkdir(exist_ok=True)
    env = {key: value for key, value in os.environ.items() if key != TOKEN_ENV}
    process = subprocess.Popen([sys.executable, "-m", "progagent_lib.integrations.openenv_cli", "serve", "--tasks-dir",
                                str(TASKS), "--harness", "dtc", "--port", str(port), *flags],
                               env={**env, "PROGAGENT_EPISODES": str(episodes)}, cwd=REPO,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stderr.readline()
        assert process.poll() is None or line, "the serve command exited without a word"
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            assert process.poll() is None and time.monotonic() < deadline, f"no server: {line}{process.stderr.read()}"
            time.sleep(0.2)
        yield port, line
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)


def test_allow_host_admits_a_named_host_and_only_it(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    with serve_command(tmp_path, "--token-file", str(token_file), "--allow-host", "box.lan") as (port, line):
        assert TOKEN not in line and f"token from {token_file}" in line  # a token from a file is not printed
        assert http_reset(port, {**auth(), "Host": f"box.lan:{port}"}).status_code == 200
        assert http_reset(port, {**auth(), "Host": f"box.lan:{port}", "Origin": f"http://box.lan:{port}"}).status_code == 200
        assert handshake(port, name="box.lan", headers=auth()) == (101, RESTOCK)
        assert http_reset(port, {**auth(), "Host": f"other.lan:{port}"}).status_code == 421
        assert handshake(port, name="other.lan", headers=auth())[0] == 421
        assert http_reset(port, {"Host": f"box.lan:{port}"}).status_code == 401  # a named host still needs the token


def test_the_serve_command_prints_a_fresh_token_per_start(tmp_path):
    tokens = []
    for _ in range(2):
        with serve_command(tmp_path) as (port, line):
            match = re.search(rf"token ([0-9a-f]{{64}}); clients: export {TOKEN_ENV}=\1", line)
            assert match and f"ws://127.0.0.1:{port}/ws" in line, line
            tokens.append(match.group(1))
            assert http_reset(port, {}).status_code == 401
            assert http_reset(port, auth(match.group(1))).status_code == 200
    assert tokens[0] != tokens[1]


def refused_start(*flags: str) -> str:
    """The serve command's error for `flags` (a subprocess with a deadline: a check that let it start would serve on)."""
    done = subprocess.run([sys.executable, "-m", "progagent_lib.integrations.openenv_cli", "serve", "--tasks-dir",
                           str(TASKS), "--port", str(free_port()), *flags], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2, done.stderr
    return done.stderr


def test_the_serve_command_refuses_a_bad_token_file_or_host(tmp_path):
    short = tmp_path / "short"
    short.write_text("abc\n")
    assert "at least 16 characters" in refused_start("--token-file", str(short))
    assert "cannot read the token file" in refused_start("--token-file", str(tmp_path / "nope"))
    assert "allowed host 'box lan:" in refused_start("--allow-host", "box lan")


def test_the_default_port_is_not_the_engines():
    import argparse

    parser = argparse.ArgumentParser()
    openenv_cli.register(parser.add_subparsers(dest="command"))
    assert parser.parse_args(["openenv", "serve"]).port == 8766  # vLLM / the engine: 8000; `progagent serve`: 8765


# --- the guard's parsing, alone --------------------------------------------------------------------------
def test_host_and_origin_parsing():
    assert split_host("LocalHost") == ("localhost", "80") and split_host("[::1]:8766") == ("[::1]", "8766")
    assert split_host("a:b:c") is None and split_host("evil@127.0.0.1") is None and split_host("") is None
    guard = RequestGuard(None, allowed_hosts=["127.0.0.1:8766", "box.lan:*"])
    allowed = lambda **h: guard.refusal({k.encode(): [v] for k, v in h.items()}) is None  # noqa: E731
    assert allowed(host="127.0.0.1:8766", origin="http://127.0.0.1:8766")
    assert allowed(host="box.lan", origin="https://box.lan")
    assert not allowed(host="127.0.0.1:8766", origin="http://127.0.0.1:8766/path")
    assert not allowed(host="127.0.0.1:8766", origin="http://127.0.0.1")          # port 80 is another origin
    assert not allowed(host="127.0.0.1.evil.example:8766") and not allowed(host="127.0.0.1:87660")
    with pytest.raises(ValueError, match="at least 16 characters"):
        RequestGuard(None, allowed_hosts=["127.0.0.1:1"], token="short")
    with pytest.raises(ValueError, match="printable ASCII"):
        RequestGuard(None, allowed_hosts=["127.0.0.1:1"], token="a token with spaces")
