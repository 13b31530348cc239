"""MCP client bridge: an external MCP server's tools as plain synchronous Python calls.

`MCPToolSource(server)` connects to one MCP server, either a command line that starts it on stdio
("python notes_server.py") or an http(s) URL of a streamable-HTTP endpoint. The MCP SDK is async;
the runtime's tool bridge is not. So the source runs the SDK client on a private event loop in a
background thread and hands calls to it, which lets `PTCRuntime(mcp_servers=[...])` expose the
server's tools as `tools.<name>` in the kernel beside the task's own tools.

    with MCPToolSource("python notes_server.py") as source:
        source.tool_specs["add_note"].parameters      # JSON schema of the arguments
        result, is_error = source.call("add_note", {"text": "hi"})
        source.call_tool("add_note", {"text": "hi"})  # the MCP result itself: text, structured content, isError
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import mcp_types
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError


class MCPConnectionError(RuntimeError):
    """The MCP server could not be started, reached, or listed, or the connection broke."""


@dataclass(frozen=True)
class MCPToolSpec:
    """One tool an MCP server offers: the fields the tool bridge and the model need."""

    name: str
    description: str
    parameters: dict  # JSON schema of the arguments object
    output_schema: dict | None = None

    def openai_schema(self) -> dict:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


def is_url(server: str) -> bool:
    return server.startswith(("http://", "https://"))


def stdio_parameters(
    server: str | Sequence[str], *, env: dict[str, str] | None = None, cwd: str | Path | None = None
) -> StdioServerParameters:
    """The SDK's launch parameters for a server command line (a string is split like a shell would)."""
    argv = shlex.split(server) if isinstance(server, str) else list(server)
    if not argv:
        raise ValueError(
            "empty MCP server command: pass a command line such as 'python notes_server.py' or an http(s) URL"
        )
    return StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=cwd)


def decode_result(result: mcp_types.CallToolResult, output_schema: dict | None = None) -> Any:
    """A tool result as a native Python value: structured content if present, else JSON-parsed text, else text."""
    if result.structured_content is not None:
        value = result.structured_content
        # MCPServer wraps a non-object return value as {"result": value} and says so in the
        # tool's output schema; hand the program the value it returned, not the envelope.
        if _is_result_envelope(output_schema) and isinstance(value, dict) and set(value) == {"result"}:
            return value["result"]
        return value
    texts, others = [], []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            texts.append(block.text)
        else:
            others.append(block.model_dump(mode="json", by_alias=True, exclude_none=True))
    if others:  # images, resources: keep them whole beside any text
        return (
            ([{"type": "text", "text": t} for t in texts] + others)
            if texts
            else (others[0] if len(others) == 1 else others)
        )
    text = "\n".join(texts)
    try:
        return json.loads(text)
    except ValueError:
        return text


def _is_result_envelope(schema: dict | None) -> bool:
    return schema is not None and schema.get("type") == "object" and set(schema.get("properties", {})) == {"result"}


class MCPToolSource:
    """A live connection to one MCP server, with a synchronous interface.

    Args:
        server: a command line that starts the server on stdio (string or argv list), or an
            http(s) URL of its streamable-HTTP endpoint (e.g. "http://127.0.0.1:8765/mcp").
        env: extra environment variables for a stdio server (the SDK passes only a safe few
            of the caller's, such as PATH and HOME).
        cwd: working folder of a stdio server.
        connect_timeout: seconds to wait for the server to start and list its tools.
        call_timeout: seconds one tool call may take before `call` gives up.
    """

    def __init__(
        self,
        server: str | Sequence[str],
        *,
        env: dict[str, str] | None = None,
        cwd: str | Path | None = None,
        connect_timeout: float = 60.0,
        call_timeout: float = 300.0,
    ):
        self.server = server if isinstance(server, str) else shlex.join(server)
        self.call_timeout = call_timeout
        if isinstance(server, str) and is_url(server):
            target: Any = server
        else:  # the server's stderr must go to a real file descriptor (a notebook's sys.stderr may have none)
            target = stdio_client(stdio_parameters(server, env=env, cwd=cwd), errlog=_errlog())
        self._client = Client(target, read_timeout_seconds=call_timeout)
        self.tool_specs: dict[str, MCPToolSpec] = {}
        self._closed = False

        # The client's context (its task group, the subprocess or HTTP session) must be entered and
        # left by one task, so a single owner task holds it open until `close` sets `_stop`.
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"mcp-client {self.server}", daemon=True)
        self._thread.start()
        self._ready: Future = Future()
        self._stop = asyncio.Event()  # bound to the loop on first use, inside the owner task
        self._owner = asyncio.run_coroutine_threadsafe(self._hold_connection(), self._loop)
        try:
            self.tool_specs = self._ready.result(timeout=connect_timeout)
        except FutureTimeout:
            self.close()
            raise MCPConnectionError(
                f"MCP server {self.server!r} did not answer within {connect_timeout:g}s; "
                "check that it speaks MCP on stdio (or at that URL) and starts quickly"
            ) from None
        except BaseException as exc:
            self.close()
            raise MCPConnectionError(
                f"cannot connect to MCP server {self.server!r}: {_describe(exc)}. "
                "Check the command line (or URL) and the server's own error output"
            ) from exc

    async def _hold_connection(self) -> None:
        try:
            async with self._client as client:
                self._ready.set_result(await self._list_tools(client))
                await self._stop.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)
            elif not self._closed:
                raise

    async def _list_tools(self, client: Client) -> dict[str, MCPToolSpec]:
        specs, cursor = {}, None
        while True:
            page = await client.list_tools(cursor=cursor)
            for t in page.tools:
                specs[t.name] = MCPToolSpec(
                    t.name,
                    t.description or "",
                    dict(t.input_schema or {"type": "object"}),
                    dict(t.output_schema) if t.output_schema else None,
                )
            cursor = page.next_cursor
            if not cursor:
                return specs

    def call(self, name: str, arguments: dict | None = None, deadline: float | None = None) -> tuple[Any, bool]:
        """Call a tool; returns (result as native Python, is_error as the server flagged it).

        A failure of the tool itself comes back as is_error=True with the server's message; a
        broken connection or an unknown tool raises. `deadline` (time.monotonic) ends the wait
        sooner than `call_timeout` (a program's own deadline).
        """
        result = self.call_tool(name, arguments, deadline)
        return decode_result(result, self.tool_specs[name].output_schema), bool(result.is_error)

    def call_tool(
        self, name: str, arguments: dict | None = None, deadline: float | None = None
    ) -> mcp_types.CallToolResult:
        """Call a tool; returns the server's result as it came (its text content, structured content and
        isError), for a client that shows the text to a model, as `call` decodes it for a program.

        Raises as `call` does; a call abandoned past `deadline` or refused by the server comes back as an
        error result with the message that says so.
        """
        if self._closed:
            raise MCPConnectionError(f"MCP server {self.server!r}: this connection is closed")
        if name not in self.tool_specs:
            raise KeyError(
                f"MCP server {self.server!r} has no tool {name!r}; it offers: {', '.join(sorted(self.tool_specs))}"
            )
        wait = self.call_timeout + 5
        if deadline is not None:
            wait = max(0.0, min(wait, deadline - time.monotonic()))
        future = asyncio.run_coroutine_threadsafe(self._client.call_tool(name, arguments or {}), self._loop)
        try:
            result = future.result(timeout=wait)
        except FutureTimeout:
            future.cancel()
            if deadline is not None and time.monotonic() >= deadline:
                return _error_result(f"{name} ran past the program's time limit and was abandoned")
            raise MCPConnectionError(
                f"MCP tool {name!r} on {self.server!r} took longer than {self.call_timeout:g}s"
            ) from None
        except MCPError as exc:
            if exc.code == mcp_types.CONNECTION_CLOSED or self._owner.done():
                raise MCPConnectionError(
                    f"MCP server {self.server!r} closed the connection ({exc.error.message}); "
                    "its tools are unavailable until it is reconnected"
                ) from exc
            # A protocol-level refusal of this call (invalid params, an internal error in the server):
            # to the program it is the tool failing, with the server's message.
            return _error_result(f"{name} was refused by the MCP server: {exc.error.message}")
        except Exception as exc:
            if self._owner.done():  # the server went away: say so rather than echo a stream error
                raise MCPConnectionError(
                    f"MCP server {self.server!r} closed the connection ({_describe(exc)})"
                ) from exc
            raise
        return result

    def close(self) -> None:
        """Disconnect (a stdio server process is stopped) and end the background thread. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._loop.call_soon_threadsafe(self._stop.set)
        try:
            self._owner.result(timeout=15)
        except BaseException:  # noqa: BLE001 - closing must not fail; the server may already be gone
            self._owner.cancel()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self._loop.close()

    def __enter__(self) -> "MCPToolSource":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MCPToolSource({self.server!r}, tools={sorted(self.tool_specs)})"


def _error_result(message: str) -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=message)], is_error=True)


def _describe(exc: BaseException) -> str:
    # anyio reports failures inside task groups as exception groups; the first leaf says what happened.
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


def _errlog():
    """Where a stdio server's stderr goes: ours if it is a real file, else the process's original stderr."""
    import sys

    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.fileno()
                return stream
        except (AttributeError, OSError, ValueError):
            continue
    return open(os.devnull, "w")
