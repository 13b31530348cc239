"""The harness served as an MCP server: one episode of one task under one harness.

Any MCP client (an IDE agent, the SDK's own client, another framework) can play an episode:
it lists the tools the model would see under the chosen harness (`programmatic_tool_call`,
`terminal`, `claim_done` and, for DTC and Hybrid, the task's own tools, with the same schemas and
descriptions), calls them, and ends with `claim_done`, whose result carries the verifier's verdict.

Every call goes through `Session.dispatch`, so this module only translates between MCP and the
session: an observation's text becomes the result's text content and its `is_error` becomes
`isError`. The episode's rules (what is refused under which harness, the end after claim_done)
live in the session, once, for the episode loop, the trainer and this server alike. What a reply adds
to the observation (the verdict, a direct tool's result as structured data, an error) is cleaned the
same way (`textsafe.clean_text`): no reply carries a character that a client's terminal would obey.

    server = build_server("tasks/retail/restock_orders", scale="v2", seed=0, harness="ptc")
    server.run_stdio()                       # or server.run_http(port=8765): http://127.0.0.1:8765/mcp

One server process serves one episode, to one client: over HTTP the first MCP session that calls a
tool owns the episode, and any other session is refused with a message saying so (a second client
must not read the first one's variables or end its episode). Requests of the stateless 2026 protocol
carry no session at all, so they count as one client together; the bearer token is what keeps
anyone else out of them. HTTP requests are checked for their
Host and Origin headers on every bind address (DNS rebinding), and an optional bearer token is
required of every request when given.
"""
from __future__ import annotations

import hmac
import ipaddress
import logging
import os
import re
import signal
import sys
import threading
from contextlib import contextmanager
from concurrent.futures import ThreadPoolExecutor
from io import TextIOWrapper
from pathlib import Path
from typing import Any, Callable, Sequence

import anyio
import mcp_types
from mcp.server import Server

from progagent_lib.harness.spec import HarnessSpec, get_harness
from progagent_lib.task.task import Task, load_task
from progagent_lib.textsafe import clean_text, clean_value

SERVER_NAME = "progagent"
logger = logging.getLogger(__name__)


class HarnessMCPServer:
    """An MCP server (the SDK's low-level `Server`) in front of one harness `Session`.

    The session (and the kernel behind it) is created, used and closed on one dedicated worker
    thread: the kernel client's sockets then never change threads, the async server loop never
    blocks on a running program, and calls are applied one at a time, in arrival order.
    """

    def __init__(self, make_session: Callable[[], Any], *, name: str = SERVER_NAME, instructions: str | None = None,
                 close_env: bool = True):
        self._close_env = close_env
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="progagent-session")
        self._closed = False
        self._owner: str | None = None  # the MCP session that owns the episode (HTTP); None until the first call
        self._owner_lock = threading.Lock()
        try:
            self.session = self._worker.submit(make_session).result()
        except BaseException:
            self._worker.shutdown(wait=False)
            raise
        self.server: Server = Server(name, version=_version(), instructions=instructions,
                                     on_list_tools=self._list_tools, on_call_tool=self._call_tool)

    # -- MCP handlers -------------------------------------------------------------------------
    def tools(self) -> list[mcp_types.Tool]:
        """The session's tool schemas (OpenAI function format) as MCP tools, unchanged."""
        return [mcp_types.Tool(name=s["function"]["name"], description=s["function"].get("description", ""),
                               input_schema=s["function"].get("parameters") or {"type": "object", "properties": {}})
                for s in self.session.tool_schemas()]

    async def _list_tools(self, ctx: Any, params: Any) -> mcp_types.ListToolsResult:
        return mcp_types.ListToolsResult(tools=self.tools())

    async def _call_tool(self, ctx: Any, params: mcp_types.CallToolRequestParams) -> mcp_types.CallToolResult:
        refusal = self._claim(_mcp_session_id(ctx))
        if refusal is not None:
            return refusal
        return await anyio.to_thread.run_sync(self.call, params.name, dict(params.arguments or {}))

    def _claim(self, client: str | None) -> mcp_types.CallToolResult | None:
        """Bind the episode to the first MCP session that calls a tool; refuse every other one."""
        if client is None:  # stdio: one client by construction
            return None
        with self._owner_lock:
            if self._owner is None:
                self._owner = client
        if hmac.compare_digest(self._owner, client):
            return None
        return _error_result("this server's episode belongs to another MCP session; one `progagent serve` serves one "
                             "episode to one client. Start another server (another port) for another episode.")

    def call(self, name: str, arguments: dict) -> mcp_types.CallToolResult:
        """Dispatch one tool call to the session (blocking) and translate the observation."""
        from progagent_lib.harness.session import ToolCall

        if self._closed:
            return _error_result("this server has shut down; start a new `progagent serve` for another episode")
        try:
            observation = self._worker.submit(self.session.dispatch, ToolCall(name=name, arguments=arguments)).result()
        except Exception as exc:  # noqa: BLE001 - dispatch handles model mistakes; this is the machinery failing
            logger.exception("tool call %r failed inside the harness", name)
            return _error_result(f"the harness failed to run {name}: {type(exc).__name__}: {exc}")
        text, structured = observation.content, None
        if isinstance(observation.value, dict) and not observation.is_error:
            # a direct task-tool result as data too (an object, as every MCP version allows)
            structured = observation.value
        verdict = observation.verify
        if observation.done and verdict is not None:
            # The verdict goes to the MCP client (the evaluator driving the episode), as data and as text.
            structured = {"reward": verdict.reward, "score": verdict.score,
                          "criteria": verdict.to_dict()["criteria"], "final_answer": self.session.final_answer}
            text = f"{text}\n\n{verdict.summary()}"
        return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=clean_text(text))],
                                        structured_content=clean_value(structured), is_error=bool(observation.is_error))

    # -- transports ---------------------------------------------------------------------------
    def run_stdio(self, stdin: Any = None, stdout: Any = None) -> None:
        """Serve over stdin/stdout until the client closes its end (blocking)."""
        from mcp.server.stdio import stdio_server

        async def serve() -> None:
            async with stdio_server(stdin=stdin, stdout=stdout) as (read_stream, write_stream):
                await self.server.run(read_stream, write_stream, self.server.create_initialization_options())

        with _sigterm_exits():
            try:
                anyio.run(serve)
            finally:
                self.close()

    def http_app(self, host: str = "127.0.0.1", path: str = "/mcp", *, port: int | None = None,
                 allowed_hosts: Sequence[str] = (), token: str | None = None):
        """The streamable-HTTP ASGI app (Starlette), for embedding or for `run_http`.

        Host and Origin headers are checked whatever the bind address (`allowed_host_headers`);
        with `token`, every request must carry `Authorization: Bearer <token>`.
        """
        from mcp.server.transport_security import TransportSecuritySettings

        hosts = allowed_host_headers(host, port, allowed_hosts)
        security = TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                             allowed_origins=[f"http://{h}" for h in hosts] + [f"https://{h}" for h in hosts])
        app = self.server.streamable_http_app(streamable_http_path=path, host=host, transport_security=security)
        return BearerTokenGate(app, token) if token else app

    def run_http(self, host: str = "127.0.0.1", port: int = 8765, path: str = "/mcp", log_level: str = "warning", *,
                 allowed_hosts: Sequence[str] = (), token: str | None = None) -> None:
        """Serve streamable HTTP at http://HOST:PORT/PATH until interrupted (blocking)."""
        import uvicorn

        # uvicorn re-raises a SIGTERM after its own shutdown; as SystemExit it lets us close the session.
        with _sigterm_exits():
            try:
                uvicorn.run(self.http_app(host, path, port=port, allowed_hosts=allowed_hosts, token=token),
                            host=host, port=port, log_level=log_level)
            finally:
                self.close()

    def close(self) -> None:
        """End the episode: close the session (kernel, environment copy). Idempotent."""
        if self._closed:
            return
        self._closed = True
        with _sigterm_ignored():  # a client's SIGTERM must not cut the kernel's shutdown short
            try:
                self._worker.submit(self._close_session).result()
            finally:
                self._worker.shutdown(wait=True)

    def _close_session(self) -> None:
        try:
            self.session.close()
        finally:
            if self._close_env:  # the environment copy was made for this server alone
                self.session.env.close()

    def __enter__(self) -> "HarnessMCPServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def build_server(task: Task | str | Path, scale: str = "v2", seed: int = 0, harness: str | HarnessSpec = "ptc", *,
                 error_mode: str = "is_error", mcp_servers: Sequence[str] = (), name: str = SERVER_NAME,
                 **session_kwargs: Any) -> HarnessMCPServer:
    """Instantiate the task at (scale, seed) and serve it under `harness`.

    `mcp_servers` are external MCP servers (command lines or http(s) URLs) whose tools join the
    task's inside programs as `tools.<name>`. Further keyword arguments go to `Session` (and on to
    the runtime), e.g. `program_timeout=` or `unsafe_no_sandbox=True`.
    """
    from progagent_lib.harness.session import Session

    task = task if isinstance(task, Task) else load_task(task)
    spec = get_harness(harness) if isinstance(harness, str) else harness
    if mcp_servers and not spec.programmatic:
        raise ValueError(f"external MCP servers are reachable only from programs, which the {spec.name!r} harness "
                         "does not offer; use harness 'ptc' or 'hybrid'")

    def make_session():
        env = task.instantiate(scale=scale, seed=seed)
        try:
            kwargs = dict(session_kwargs)
            if mcp_servers:
                kwargs["mcp_servers"] = list(mcp_servers)
            session = Session(env, spec, error_mode=error_mode, **kwargs)
            if spec.programmatic:
                # Start the kernel now: a sandbox or MCP-server problem shows when the server starts,
                # not as the first program's error, and the first program does not wait for a kernel.
                session.runtime  # noqa: B018
            return session
        except BaseException:
            env.close()
            raise

    instructions = f"{spec.system_prompt()}\n\n# Task ({task.id}, scale {scale}, seed {seed})\n\n{task.instruction(seed)}"
    return HarnessMCPServer(make_session, name=name, instructions=instructions)


def serve_command(task: Task | str | Path, scale: str = "v2", seed: int = 0, harness: str = "ptc", *,
                  transport: str = "stdio", port: int | None = None, error_mode: str = "is_error",
                  mcp_servers: Sequence[str] = (), python: str | None = None) -> list[str]:
    """The argv of `progagent serve` for these settings, to start the server as a subprocess.

    E.g. `MCPToolSource(serve_command("tasks/retail/restock_orders", harness="dtc"))`, or the
    command and args of the SDK's `StdioServerParameters`.
    """
    task_path = str(task.root if isinstance(task, Task) else task)
    argv = [python or sys.executable, "-m", "progagent_lib.cli", "serve", "--task", task_path, "--scale", scale,
            "--seed", str(seed), "--harness", harness, "--transport", transport, "--error-mode", error_mode]
    if port is not None:
        argv += ["--port", str(port)]
    for server in mcp_servers:
        argv += ["--mcp-server", server]
    return argv


def claim_process_stdio() -> tuple[Any, Any]:
    """Keep the real stdin/stdout for the MCP wire and point fds 0/1 elsewhere for everyone else.

    Call before anything starts a subprocess: a kernel or task code that inherits fd 1 and prints
    would otherwise write into the protocol stream. Returns async text files for `run_stdio`.
    """
    wire_in = os.dup(0)
    wire_out = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)  # stray prints (ours, the kernel's, task code's) go to stderr
    sys.stdout = TextIOWrapper(os.fdopen(1, "wb", closefd=False), encoding="utf-8", line_buffering=True)
    stdin = anyio.wrap_file(TextIOWrapper(os.fdopen(wire_in, "rb"), encoding="utf-8", errors="replace"))
    stdout = anyio.wrap_file(TextIOWrapper(os.fdopen(wire_out, "wb"), encoding="utf-8", line_buffering=True))
    return stdin, stdout


@contextmanager
def _sigterm_exits():
    """While serving from the main thread, SIGTERM raises SystemExit so cleanup code runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def exit_now(signum, frame):
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, exit_now)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def _sigterm_ignored():
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _mcp_session_id(ctx: Any) -> str | None:
    """The MCP session a request belongs to (its `mcp-session-id`); None on stdio."""
    connection = getattr(getattr(ctx, "session", None), "_connection", None)
    session_id = getattr(connection, "session_id", None)
    if session_id is None:
        request = getattr(ctx, "request", None)
        headers = getattr(request, "headers", None)
        session_id = headers.get("mcp-session-id") if headers is not None else None
        if session_id is None and request is not None:
            return ""  # an HTTP request without a session (stateless): one shared identity, refused if another owns it
    return session_id


LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def allowed_host_headers(host: str, port: int | None, extra: Sequence[str] = ()) -> list[str]:
    """Host header values a server bound to `host:port` accepts (the bind address; loopback names
    when it is bound to loopback or to every address; and `extra`, e.g. the machine's public name)."""
    any_port = "*" if port is None else str(port)
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        address = None
    names = [f"[{host.strip('[]')}]" if address is not None and address.version == 6 else host]
    if host == "localhost" or (address is not None and (address.is_loopback or address.is_unspecified)):
        names += list(LOOPBACK_NAMES)
    if address is not None and address.is_unspecified:
        names = names[1:]  # "0.0.0.0" is never a Host a client sends
    names += list(extra)
    # An entry that names its port (`host:8080`, `[::1]:8080`) is kept; the others get the server's port.
    return [name if re.search(r"(^[^:\[]+|\])(:\d+)$", name) else f"{name}:{any_port}" for name in dict.fromkeys(names)]


class BearerTokenGate:
    """ASGI wrapper: every HTTP request must carry `Authorization: Bearer <token>` (compared in constant time)."""

    def __init__(self, app: Any, token: str):
        if not token or len(token) < 16:
            raise ValueError("the bearer token must have at least 16 characters (e.g. `openssl rand -hex 32`)")
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                body = b"missing or wrong bearer token"
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer"),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def _error_result(message: str) -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=clean_text(message))], is_error=True)


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("progagent-workbench")
    except Exception:  # noqa: BLE001 - an uninstalled checkout still serves
        return "0"

