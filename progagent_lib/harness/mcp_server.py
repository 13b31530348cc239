"""The harness served as an MCP server: one episode of one task under one harness.

Any MCP client (an IDE agent, the SDK's own client, another framework) can play an episode:
it lists the tools the model would see under the chosen harness (`programmatic_tool_call`,
`terminal`, `claim_done` and, for DTC and Hybrid, the task's own tools, with the same schemas and
descriptions), calls them, and ends with `claim_done`, whose result carries the verifier's verdict.

The server steps an `Episode` (harness/episode.py), the same object `progagent run` plays: each tool
call of the client is one turn of the episode, with one call. So an MCP-driven episode has the same
budgets (`Limits`: tool calls, turns, context tokens), the same observation cuts, error mode, end
reasons and metrics as `progagent run` for the same task, scale, seed and harness, and it ends the same
way: at claim_done or when a budget runs out; later calls get a tool error saying so. This module only
translates between MCP and the episode: the observation's text (cut as the episode cut it) becomes the
result's text content and its `is_error` becomes `isError`. What a reply adds to the observation (the
verdict, a direct tool's result as structured data, an error) is cleaned the same way
(`textsafe.clean_text`): no reply carries a character that a client's terminal would obey.

The client is the model, and the server never sees the model's own text (its reasoning, the words
around its calls): token counts that need it (the context's size) count only the calls' arguments;
tool-output tokens are counted from the observations, as `progagent run` counts them. An episode the
client leaves before it ended (the server is closed or stopped) ends as `client_closed`, the state as
left judged. With `trajectory=` (`progagent serve --trajectory FILE`) the episode is appended to a
JSON-lines file as it ends, a trajectory that `harness.read_jsonl` reads like `progagent run`'s.

    server = build_server("tasks/retail/restock_orders", scale="v0", seed=0, harness=DEFAULT_HARNESS,
                          trajectory="runs/mcp.jsonl")
    server.run_stdio()                       # or server.run_http(port=8765): http://127.0.0.1:8765/mcp

One server process serves one episode, to one client: over HTTP the first MCP session that calls a
tool owns the episode, and any other session is refused with a message saying so (a second client
must not read the first one's variables or end its episode). Requests of the stateless 2026 protocol
carry no session at all, so they count as one client together; the bearer token is what keeps
anyone else out of them. HTTP requests are checked for their
Host and Origin headers on every bind address (DNS rebinding), and an optional bearer token is
required of every request when given (`http_guard.py`, shared with the OpenEnv server).
"""

from __future__ import annotations

import hmac
import logging
import os
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

from progagent_lib.harness.end_reasons import END_REASONS
from progagent_lib.harness.episode import Episode, Limits
from progagent_lib.harness.http_guard import RequestGuard, allowed_host_headers
from progagent_lib.harness.spec import DEFAULT_HARNESS, HARNESSES, HarnessSpec, get_harness
from progagent_lib.harness.trajectory import Trajectory, write_jsonl
from progagent_lib.harness.turn import ToolCall, Turn
from progagent_lib.task.task import Task, load_task
from progagent_lib.textsafe import clean_text, clean_value

SERVER_NAME = "progagent"
MCP_POLICY_NAME = "mcp"  # the trajectory's `policy`: the model behind the MCP client is unknown to the server
logger = logging.getLogger(__name__)


class HarnessMCPServer:
    """An MCP server (the SDK's low-level `Server`) in front of one `Episode`.

    The episode (and the kernel behind it) is created, stepped and closed on one dedicated worker
    thread: the kernel client's sockets then never change threads, the async server loop never
    blocks on a running program, and calls are applied one at a time, in arrival order.
    `trajectory` is a JSON-lines file the episode is appended to when it ends (or None).
    """

    def __init__(
        self,
        make_episode: Callable[[], Episode],
        *,
        name: str = SERVER_NAME,
        instructions: str | None = None,
        trajectory: str | Path | None = None,
    ):
        self.trajectory_path = Path(trajectory) if trajectory is not None else None
        self.trajectory: Trajectory | None = None  # the scored episode, once it ended
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="progagent-episode")
        self._closed = False
        self._owner: str | None = None  # the MCP session that owns the episode (HTTP); None until the first call
        self._owner_lock = threading.Lock()
        try:
            self.episode: Episode = self._worker.submit(make_episode).result()
        except BaseException:
            self._worker.shutdown(wait=False)
            raise
        if instructions is None:  # what the model reads before its first call: the system prompt and the task
            t = self.episode.trajectory
            instructions = (
                f"{self.episode.messages[0]['content']}\n\n# Task ({t.task_id}, scale {t.scale}, seed {t.seed})"
                f"\n\n{self.episode.env.instruction}"
            )
        self.server: Server = Server(
            name,
            version=_version(),
            instructions=instructions,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    # -- MCP handlers -------------------------------------------------------------------------
    def tools(self) -> list[mcp_types.Tool]:
        """The episode's tool schemas (OpenAI function format) as MCP tools, unchanged."""
        return [
            mcp_types.Tool(
                name=s["function"]["name"],
                description=s["function"].get("description", ""),
                input_schema=s["function"].get("parameters") or {"type": "object", "properties": {}},
            )
            for s in self.episode.tools
        ]

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
        return _error_result(
            "this server's episode belongs to another MCP session; one `progagent serve` serves one "
            "episode to one client. Start another server (another port) for another episode."
        )

    def call(self, name: str, arguments: dict) -> mcp_types.CallToolResult:
        """Step the episode by one tool call (blocking) and translate what it observed."""
        if self._closed:
            return _error_result("this server has shut down; start a new `progagent serve` for another episode")
        try:
            return self._worker.submit(self._step, name, arguments).result()
        except Exception as exc:
            logger.exception("tool call %r failed inside the harness", name)
            return _error_result(f"the harness failed to run {name}: {type(exc).__name__}: {exc}")

    def _step(self, name: str, arguments: dict) -> mcp_types.CallToolResult:
        """On the worker thread: one turn of the episode with this one call; the end of the episode when it came."""
        episode = self.episode
        if episode.finished:
            return _error_result(ended_message(episode.end_reason))
        try:
            message, *follow_up = episode.add_turn(Turn(tool_calls=[ToolCall(name=name, arguments=arguments)]))
        except Exception as exc:  # the machinery failed, not the model: the episode ends errored, as in training
            episode.fail(f"the harness failed to run {name}: {type(exc).__name__}: {exc}")
            try:
                self._finish()
            except Exception:
                logger.exception("the errored episode could not be scored or written")
            raise
        text = message["content"]  # the observation as it entered the context (cut by the episode's limits)
        if (
            follow_up
        ):  # a scripted user's next message (an environment with several user turns): the client reads it here
            text += "".join(f"\n\n[user] {m['content']}" for m in follow_up)
        observations = episode.last_observations
        observation = observations[-1] if observations else None
        is_error = observation.is_error if observation is not None else True  # None: refused over the budget
        structured = None
        if (
            observation is not None
            and isinstance(observation.value, dict)
            and not is_error
            and text == observation.content
        ):
            # a direct task-tool result as data too (an object, as every MCP version allows); not when the
            # observation was cut: the data would carry what the cut kept out of the context
            structured = observation.value
        if episode.finished:
            trajectory = self._finish()
            # The verdict goes to the MCP client (the evaluator driving the episode), as data and as text.
            structured = {
                "reward": trajectory.reward,
                "score": trajectory.score,
                "criteria": trajectory.criteria,
                "final_answer": trajectory.final_answer,
                "end_reason": trajectory.end_reason,
            }
            verdict = episode.session.result
            summary = (
                verdict.summary()
                if verdict is not None and episode.end_reason == "claim_done"
                else f"[{ended_message(trajectory.end_reason)} The state as left: R={trajectory.reward:g}, "
                f"R~={trajectory.score:.3f}]"
            )
            text = f"{text}\n\n{summary}"
        return mcp_types.CallToolResult(
            content=[mcp_types.TextContent(type="text", text=clean_text(text))],
            structured_content=clean_value(structured),
            is_error=bool(is_error),
        )

    def _finish(self) -> Trajectory:
        """Score the ended episode, release its environment and kernel, and append its trajectory to the file."""
        self.trajectory = self.episode.to_trajectory()
        if self.trajectory_path is not None:
            write_jsonl(self.trajectory, self.trajectory_path)
        return self.trajectory

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

    def http_app(
        self,
        host: str = "127.0.0.1",
        path: str = "/mcp",
        *,
        port: int | None = None,
        allowed_hosts: Sequence[str] = (),
        token: str | None = None,
    ):
        """The streamable-HTTP ASGI app (Starlette), for embedding or for `run_http`.

        Host and Origin headers are checked whatever the bind address (`allowed_host_headers`);
        with `token`, every request must carry `Authorization: Bearer <token>` (`http_guard.RequestGuard`,
        the guard every server of the workbench puts in front).
        """
        from mcp.server.transport_security import TransportSecuritySettings

        # The SDK's own Host/Origin check is off: RequestGuard makes it, the same check as the OpenEnv server's.
        unchecked = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        app = self.server.streamable_http_app(streamable_http_path=path, host=host, transport_security=unchecked)
        return RequestGuard(app, allowed_hosts=allowed_host_headers(host, port, allowed_hosts), token=token)

    def run_http(
        self,
        host: str = "127.0.0.1",
        port: int = 8765,
        path: str = "/mcp",
        log_level: str = "warning",
        *,
        allowed_hosts: Sequence[str] = (),
        token: str | None = None,
    ) -> None:
        """Serve streamable HTTP at http://HOST:PORT/PATH until interrupted (blocking)."""
        import uvicorn

        # uvicorn re-raises a SIGTERM after its own shutdown; as SystemExit it lets us close the episode.
        with _sigterm_exits():
            try:
                uvicorn.run(
                    self.http_app(host, path, port=port, allowed_hosts=allowed_hosts, token=token),
                    host=host,
                    port=port,
                    log_level=log_level,
                )
            finally:
                self.close()

    def close(self) -> None:
        """End the episode if it is still going (`client_closed`; written to the trajectory file when there is
        one), and release it (kernel, environment copy). Idempotent."""
        if self._closed:
            return
        self._closed = True
        with _sigterm_ignored():  # a client's SIGTERM must not cut the kernel's shutdown short
            try:
                self._worker.submit(self._close_episode).result()
            finally:
                self._worker.shutdown(wait=True)

    def _close_episode(self) -> None:
        try:
            if not self.episode.finished and self.trajectory_path is not None:
                self.episode.client_left()
                self._finish()
        except Exception:
            logger.exception("the episode left by its client could not be scored or written")
        finally:
            self.episode.close()

    def __enter__(self) -> "HarnessMCPServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def ended_message(end_reason: str) -> str:
    """What a call after the end of the episode is told."""
    return (
        f"The episode has ended ({end_reason}: {END_REASONS.get(end_reason, 'ended')}). No more tool calls "
        "are accepted; start a new `progagent serve` for another episode."
    )


def build_server(
    task: Task | str | Path,
    scale: str = "v0",
    seed: int = 0,
    harness: str | HarnessSpec = DEFAULT_HARNESS,
    *,
    error_mode: str = "is_error",
    mcp_servers: Sequence[str] = (),
    name: str = SERVER_NAME,
    limits: Limits | None = None,
    trajectory: str | Path | None = None,
    system_prompt: str | Path | None = None,
    policy_name: str = MCP_POLICY_NAME,
    **session_kwargs: Any,
) -> HarnessMCPServer:
    """Instantiate the task at (scale, seed) and serve one episode of it under `harness`.

    The episode is the one `progagent run` plays (`harness.episode.Episode`): `limits` default to the task's
    (`Limits.for_task`), `error_mode` and `system_prompt` (a file replacing the harness's prompt) are
    `run_episode`'s. `trajectory` is a JSON-lines file the episode is appended to when it ends, recorded
    under `policy_name`. `mcp_servers` are external MCP servers (command lines or http(s) URLs) whose tools
    join the task's inside programs as `tools.<name>`. Further keyword arguments go to `Session` (and on to
    the runtime), e.g. `program_timeout=` or `unsafe_no_sandbox=True`.
    """
    task = task if isinstance(task, Task) else load_task(task)
    spec = get_harness(harness) if isinstance(harness, str) else harness
    if mcp_servers and not spec.programmatic:
        offering = [name for name, other in HARNESSES.items() if other.programmatic]
        raise ValueError(
            f"external MCP servers are reachable only from programs, which the {spec.name!r} harness "
            f"does not offer; use a harness that does: {', '.join(offering)}"
        )
    kwargs = dict(session_kwargs)
    if mcp_servers:
        kwargs["mcp_servers"] = list(mcp_servers)

    def make_episode() -> Episode:
        episode = Episode(
            task,
            scale,
            seed,
            spec,
            limits=limits or Limits.for_task(task),
            policy_name=policy_name,
            error_mode=error_mode,
            system_prompt=system_prompt,
            session_kwargs=kwargs,
        )
        try:
            if spec.programmatic:
                # Start the kernel now: a sandbox or MCP-server problem shows when the server starts,
                # not as the first program's error, and the first program does not wait for a kernel.
                episode.session.runtime  # noqa: B018 - the property starts the kernel
            return episode
        except BaseException:
            episode.close()
            raise

    return HarnessMCPServer(make_episode, name=name, trajectory=trajectory)


def serve_command(
    task: Task | str | Path,
    scale: str = "v0",
    seed: int = 0,
    harness: str = DEFAULT_HARNESS,
    *,
    transport: str = "stdio",
    port: int | None = None,
    error_mode: str = "is_error",
    mcp_servers: Sequence[str] = (),
    python: str | None = None,
    trajectory: str | Path | None = None,
) -> list[str]:
    """The argv of `progagent serve` for these settings, to start the server as a subprocess.

    E.g. `MCPToolSource(serve_command("tasks/retail/restock_orders", harness=spec.BASELINE_HARNESS))`, or the
    command and args of the SDK's `StdioServerParameters`. `trajectory`: the JSON-lines file the
    episode is appended to when it ends.
    """
    task_path = str(task.root if isinstance(task, Task) else task)
    argv = [
        python or sys.executable,
        "-m",
        "progagent_lib.cli",
        "serve",
        "--task",
        task_path,
        "--scale",
        scale,
        "--seed",
        str(seed),
        "--harness",
        harness,
        "--transport",
        transport,
        "--error-mode",
        error_mode,
    ]
    if port is not None:
        argv += ["--port", str(port)]
    for server in mcp_servers:
        argv += ["--mcp-server", server]
    if trajectory is not None:
        argv += ["--trajectory", str(trajectory)]
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


def _error_result(message: str) -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text=clean_text(message))], is_error=True
    )


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("progagent-workbench")
    except Exception:  # noqa: BLE001 - an uninstalled checkout still serves
        return "0"
