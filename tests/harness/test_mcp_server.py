"""`progagent serve` as a real process, driven by the MCP SDK's own client over stdio and streamable HTTP.

The server steps an `Episode`; that its trajectory equals `progagent run`'s is tests/harness/test_mcp_episode.py."""
import argparse
import json
import re
import shlex
import socket
import subprocess
import sys
import time

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from progagent_lib.harness.session import Session
from progagent_lib.runtime.mcp_client import MCPToolSource

from conftest import REPO, TASKS_DIR

TASK = TASKS_DIR / "retail" / "restock_orders"
SCALE = "v0"


def serve_command(harness: str, *extra: str) -> list[str]:
    from progagent_lib.harness.mcp_server import serve_command as command

    return command(TASK, scale=SCALE, seed=0, harness=harness) + list(extra)


def oracle_program(task) -> str:
    """The oracle as one program for the kernel: oracle_kit's source pasted over its import, then solve."""
    source = (task.root / "oracle.py").read_text()
    kit = (REPO / "progagent_lib" / "task" / "oracle_kit.py").read_text()
    program, replaced = re.subn(r"^from progagent_lib\.task\.oracle_kit import .*$", lambda _: kit, source, flags=re.M)
    assert replaced == 1
    return program + f"\n\nanswer = solve(tools, **{task.params_for(0)!r})\nprint(answer)\n"  # the server's seed 0


def text(result) -> str:
    return "\n".join(block.text for block in result.content)


async def play_ptc_episode(client: Client, task, external_tool: bool = False) -> dict:
    """List, misuse, then solve with oracle programs and claim_done; returns what was observed."""
    seen = {"tools": {t.name: t for t in (await client.list_tools()).tools}}
    if external_tool:  # a tool of the external MCP server given with --mcp-server, inside a program
        seen["external"] = await client.call_tool("programmatic_tool_call", {"code": "print(tools.word_count(text='x y'))"})
    seen["direct"] = await client.call_tool("list_products", {"page": 1})
    seen["failing_program"] = await client.call_tool("programmatic_tool_call", {"code": "x = 1\nraise ValueError('boom')"})
    seen["bad_tool_in_program"] = await client.call_tool(
        "programmatic_tool_call", {"code": "tools.get_supplier(supplier_id=987654)"})
    seen["unknown"] = await client.call_tool("no_such_tool", {})
    seen["state_kept"] = await client.call_tool("programmatic_tool_call", {"code": "print(x + 41)"})
    seen["oracle"] = await client.call_tool("programmatic_tool_call", {"code": oracle_program(task)})
    seen["claim"] = await client.call_tool("claim_done", {"action": text(seen["oracle"]).strip()})
    seen["claim_again"] = await client.call_tool("claim_done", {"action": "again"})
    seen["after_end"] = await client.call_tool("programmatic_tool_call", {"code": "print(1)"})
    return seen


def assert_solved_ptc_episode(seen: dict, task) -> None:
    env = task.instantiate(SCALE, 0)
    try:
        expected = Session(env, "ptc").tool_schemas()
    finally:
        env.close()
    # the client sees exactly the harness's tools, with their schemas and descriptions
    assert list(seen["tools"]) == [s["function"]["name"] for s in expected]
    for schema in expected:
        tool = seen["tools"][schema["function"]["name"]]
        assert tool.description == schema["function"]["description"]
        assert tool.input_schema == schema["function"]["parameters"]
    assert "list_products" not in seen["tools"]

    assert seen["direct"].is_error and "programmatic_tool_call" in text(seen["direct"])
    assert seen["failing_program"].is_error and "boom" in text(seen["failing_program"])
    assert seen["bad_tool_in_program"].is_error and "987654" in text(seen["bad_tool_in_program"])
    assert seen["unknown"].is_error and "no_such_tool" in text(seen["unknown"])
    assert not seen["state_kept"].is_error and text(seen["state_kept"]).strip() == "42"
    assert not seen["oracle"].is_error, text(seen["oracle"])

    verdict = seen["claim"].structured_content
    assert not seen["claim"].is_error
    assert verdict["reward"] == 1.0 and verdict["score"] == 1.0, verdict
    assert verdict["criteria"] and all(c["passed"] for c in verdict["criteria"])
    assert "R=1" in text(seen["claim"])
    assert seen["claim_again"].is_error and seen["after_end"].is_error


def test_sdk_client_plays_a_ptc_oracle_episode_over_stdio_to_reward_1(restock_task):
    command = serve_command("ptc")
    params = StdioServerParameters(command=command[0], args=command[1:], cwd=str(REPO))

    async def main():
        async with Client(params, read_timeout_seconds=120) as client:
            return await play_ptc_episode(client, restock_task)

    assert_solved_ptc_episode(anyio.run(main), restock_task)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_sdk_client_plays_a_ptc_oracle_episode_over_streamable_http(restock_task):
    port = free_port()
    notes_server = shlex.join([sys.executable, str(REPO / "progagent_lib" / "runtime" / "examples" / "notes_server.py")])
    proc = subprocess.Popen(serve_command("ptc", "--transport", "http", "--port", str(port), "--mcp-server", notes_server),
                            cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, f"progagent serve exited early:\n{proc.stderr.read()}"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "progagent serve did not listen within 120 s"
                time.sleep(0.2)

        async def main():
            async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=120) as client:
                return await play_ptc_episode(client, restock_task, external_tool=True)

        seen = anyio.run(main)
        assert not seen["external"].is_error and text(seen["external"]).strip() == "2"
        assert_solved_ptc_episode(seen, restock_task)
    finally:
        proc.terminate()
        # SIGTERM is a clean shutdown: the session and the episode's copy are closed, exit code 128+15
        assert proc.wait(timeout=60) == 143


class _MCPTools:
    """The oracle's `tools` interface over MCP: each call is a direct tool call to the server."""

    def __init__(self, source: MCPToolSource):
        self.source, self.calls = source, 0

    def __getattr__(self, name):
        def call(**arguments):
            self.calls += 1
            result, is_error = self.source.call(name, arguments)
            assert not is_error, result
            return result
        return call


def test_dtc_episode_with_direct_task_tool_calls_reaches_reward_1(restock_task):
    with MCPToolSource(serve_command("dtc"), cwd=REPO) as server:
        assert "list_products" in server.tool_specs and "programmatic_tool_call" not in server.tool_specs
        page, is_error = server.call("list_products", {"page": 1})
        assert not is_error and page["items"]
        message, is_error = server.call("get_supplier", {"supplier_id": 987654})
        assert is_error and "987654" in message
        message, is_error = server.call("list_products", {"page": "first"})
        assert is_error and "page" in message

        tools = _MCPTools(server)
        answer = restock_task.oracle(tools, restock_task.params_for(0))
        verdict, is_error = server.call("claim_done", {"action": answer})
        assert not is_error and verdict["reward"] == 1.0, verdict
        assert tools.calls > 10
        message, is_error = server.call("list_products", {"page": 1})
        assert is_error and "claim_done" in message


def serve_in_process(*argv: str) -> int:
    from progagent_lib.harness import serve_cli

    parser = argparse.ArgumentParser()
    serve_cli.register(parser.add_subparsers())
    args = parser.parse_args(["serve", *argv])
    return args.func(args)


def test_serve_refuses_external_servers_under_dtc(capsys):
    rc = serve_in_process("--task", str(TASK), "--harness", "dtc", "--transport", "http",
                          "--mcp-server", "python notes_server.py")
    assert rc == 2 and "only from programs" in capsys.readouterr().err


def test_serve_reports_an_external_server_that_does_not_start(capsys):
    rc = serve_in_process("--task", str(TASK), "--scale", SCALE, "--harness", "ptc", "--transport", "http",
                          "--mcp-server", "no_such_program_xyz --stdio")
    assert rc == 2 and "no_such_program_xyz" in capsys.readouterr().err


def test_build_server_in_process_hybrid_offers_programs_and_direct_tools(restock_task):
    from progagent_lib.harness.mcp_server import build_server

    with build_server(restock_task, scale=SCALE, seed=0, harness="hybrid") as server:
        async def main():
            async with Client(server.server) as client:
                names = [t.name for t in (await client.list_tools()).tools]
                supplier = await client.call_tool("get_supplier", {"supplier_id": 1})
                missing = await client.call_tool("get_supplier", {})
                return names, supplier, missing, client.instructions

        names, supplier, missing, instructions = anyio.run(main)
    # the client is told the task (and the harness's system prompt) when it connects
    assert restock_task.instruction(0) in instructions
    assert names == [s["function"]["name"] for s in server.episode.tools]
    assert {"programmatic_tool_call", "get_supplier", "terminal", "claim_done"} <= set(names)
    assert not supplier.is_error and supplier.structured_content["id"] == 1
    assert supplier.structured_content["name"] in text(supplier)
    assert missing.is_error and "supplier_id" in text(missing)
    assert server.episode.session.closed
    # the calls were turns of the episode, as `progagent run` records them
    assert [c.name for c in server.episode.trajectory.calls] == ["get_supplier", "get_supplier"]
    assert server.episode.trajectory.model_tool_calls == 2 and server.episode.trajectory.tool_calls == 2


# --- HTTP: one episode per client, Host/Origin on every bind address, the bearer token --------------------------
TOKEN = "t0ken-for-the-test-0123456789abcdef"


def start_http_server(host: str, port: int, token: str | None = None) -> subprocess.Popen:
    env = dict(__import__("os").environ)
    if token:
        env["PROGAGENT_SERVE_TOKEN"] = token
    proc = subprocess.Popen(serve_command("ptc", "--transport", "http", "--host", host, "--port", str(port)), cwd=REPO,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while True:
        assert proc.poll() is None, f"progagent serve exited early:\n{proc.stderr.read()}"
        try:
            socket.create_connection((host, port), timeout=1).close()
            return proc
        except OSError:
            assert time.monotonic() < deadline, "progagent serve did not listen within 120 s"
            time.sleep(0.2)


def raw_post(host: str, port: int, headers: dict) -> int:
    import httpx2

    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    response = httpx2.post(f"http://{host}:{port}/mcp", json=body, timeout=30,
                           headers={"Accept": "application/json, text/event-stream", **headers})
    return response.status_code


class LegacySession:
    """A client of the 2025-06-18 streamable-HTTP protocol (sessions), spoken with plain HTTP requests."""

    def __init__(self, url: str, token: str):
        import httpx2

        self.url, self.http = url, httpx2.Client(timeout=120, headers={
            "Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"})
        response = self.http.post(url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
        assert response.status_code == 200, response.text
        self.http.headers["mcp-session-id"] = response.headers["mcp-session-id"]
        self.http.headers["mcp-protocol-version"] = "2025-06-18"
        self.http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.ids = 0

    def call(self, name: str, arguments: dict) -> dict:
        self.ids += 1
        response = self.http.post(self.url, json={"jsonrpc": "2.0", "id": self.ids, "method": "tools/call",
                                                  "params": {"name": name, "arguments": arguments}})
        assert response.status_code == 200, response.text
        lines = [line[5:] for line in response.text.splitlines() if line.startswith("data:")] or [response.text]
        return json.loads(lines[-1])["result"]


def test_http_serves_one_episode_to_one_client_with_token_and_host_checks():
    host, port = "127.0.0.2", free_port()
    proc = start_http_server(host, port, TOKEN)
    try:
        url = f"http://{host}:{port}/mcp"
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert raw_post(host, port, {}) == 401                                      # no token
        assert raw_post(host, port, {"Authorization": "Bearer wrong-token-wrong-token"}) == 401
        assert raw_post(host, port, {**auth, "Host": "evil.example:80"}) >= 400     # DNS rebinding: foreign Host
        assert raw_post(host, port, {**auth, "Origin": "http://evil.example"}) == 403
        assert raw_post(host, port, auth) == 200

        # Two clients of the 2025 (session) protocol: the first session to call a tool owns the episode.
        first, second = LegacySession(url, TOKEN), LegacySession(url, TOKEN)
        assert not first.call("programmatic_tool_call", {"code": "secret = 'first-client'"})["isError"]
        peek = second.call("programmatic_tool_call", {"code": "print(secret)"})
        assert peek["isError"] and "another MCP session" in peek["content"][0]["text"]
        steal = second.call("claim_done", {"action": "mine"})
        assert steal["isError"] and "reward" not in json.dumps(steal)
        still = first.call("programmatic_tool_call", {"code": "print(secret)"})
        assert not still["isError"] and still["content"][0]["text"].strip() == "first-client"
    finally:
        proc.terminate()
        assert proc.wait(timeout=60) == 143


def test_allowed_host_headers_cover_every_bind_address():
    from progagent_lib.harness.mcp_server import allowed_host_headers

    assert allowed_host_headers("127.0.0.1", 8765) == ["127.0.0.1:8765", "localhost:8765", "[::1]:8765"]
    assert "evil.example:8765" not in allowed_host_headers("0.0.0.0", 8765)
    assert allowed_host_headers("10.0.0.5", 80, ["box.lan"]) == ["10.0.0.5:80", "box.lan:80"]
    assert allowed_host_headers("::1", 9)[0] == "[::1]:9"


def test_serve_refuses_a_short_token(tmp_path, capsys):
    token_file = tmp_path / "token"
    token_file.write_text("short")
    rc = serve_in_process("--task", str(TASK), "--transport", "http", "--token-file", str(token_file))
    assert rc == 2 and "16 characters" in capsys.readouterr().err
