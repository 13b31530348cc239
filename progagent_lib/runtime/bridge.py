"""The tool bridge: `tools.<name>(...)` in the kernel runs the tool on the host, over a socketpair.

The host keeps one end of a unix socketpair and passes the other to the kernel process as an
inherited file descriptor, so the channel needs no path, no port and no network (it works inside the
kernel's empty network namespace) and no other process can connect to it. Frames are a 4-byte
big-endian length and a JSON body: requests `{"id", "name", "arguments"}` (or `{"id", "op": "specs"}`),
replies `{"id", "result"}` or `{"id", "error"}`.

The kernel side (`KERNEL_PRELUDE`) is injected as source text: the kernel cannot import
progagent_lib (the sandbox hides the project tree), and it needs nothing of it.
"""
from __future__ import annotations

import json
import re
import socket
import struct
import threading
import time
from dataclasses import dataclass
from typing import Any, Iterable, Protocol

from ..task import ToolError

ERROR_MODES = ("is_error", "off", "detect")


class ToolSource(Protocol):
    """Anything besides the episode's environment that offers tools (e.g. an MCP server)."""

    tool_specs: dict  # name -> object with .name, .description, .parameters (JSON schema)

    def call(self, name: str, arguments: dict) -> tuple[Any, bool]:  # (result, is_error)
        ...


@dataclass
class ToolCall:
    """One tool call a program made through the bridge, as the host saw it."""

    name: str
    arguments: dict
    result_chars: int
    seconds: float
    is_error: bool
    error: str | None = None


# --- error-shaped payloads (error_mode="detect") -------------------------------------------------------
_ERROR_TEXT = re.compile(
    r"^\s*(?:(?:error|exception|fatal|failed|failure)\s*[:!\-]"  # "Error: ...", "ERROR - ...", not "errors were"
    r"|traceback \(most recent call last\)"
    r"|\[(?:error|err|fatal)\]"
    r"|\d{3} (?:bad request|unauthorized|forbidden|not found|internal server error|service unavailable)\b)",
    re.IGNORECASE,
)
_ERROR_KEYS = ("error", "errors", "error_message", "errormessage", "err", "exception", "fault")
_STATUS_ERROR_VALUES = {"error", "failed", "failure", "fail"}


def looks_like_error(result: Any) -> str | None:
    """The error message if `result` is shaped like a failure report from a server that omits isError.

    Recognised: strings that start like an error ("Error: ...", "Traceback (most recent call last)",
    "404 Not Found"); objects whose only meaningful content is an error (`{"error": ...}` with a
    non-empty value, `{"success": false, ...}`, `{"ok": false, ...}`, `{"status": "error", ...}`).
    A record that merely has an `error`-like field next to ordinary data (e.g. `{"id": 3, "error_rate": 0.1}`)
    is not an error: only exact keys count, and an empty/None/False value does not.
    """
    if isinstance(result, str):
        head = result.lstrip()[:200]
        return result.strip() if _ERROR_TEXT.match(head) else None
    if isinstance(result, dict):
        lowered = {str(k).lower(): v for k, v in result.items()}
        for key in _ERROR_KEYS:
            value = lowered.get(key)
            if value not in (None, "", False, [], {}, 0):
                return value if isinstance(value, str) else json.dumps(value, default=str)[:500]
        for key in ("success", "ok"):
            if lowered.get(key) is False:
                message = lowered.get("message") or lowered.get("detail") or lowered.get("reason")
                return str(message) if message else json.dumps(result, default=str)[:500]
        status = lowered.get("status")
        if isinstance(status, str) and status.lower() in _STATUS_ERROR_VALUES:
            message = lowered.get("message") or lowered.get("detail") or lowered.get("reason")
            return str(message) if message else json.dumps(result, default=str)[:500]
        if lowered.get("iserror") is True or lowered.get("is_error") is True:
            return json.dumps(result, default=str)[:500]
    return None


class ToolRouter:
    """Routes a tool name to the episode environment or to an extra source, and applies error_mode."""

    def __init__(self, env: Any, extra_sources: Iterable[ToolSource] = (), error_mode: str = "is_error"):
        if error_mode not in ERROR_MODES:
            raise ValueError(f"error_mode must be one of {ERROR_MODES}, got {error_mode!r}")
        self.env = env
        self.error_mode = error_mode
        self.sources: dict[str, ToolSource | None] = {}
        self.specs: dict[str, Any] = {}
        if env is not None:
            for name, spec in env.tool_specs.items():
                self.sources[name] = None
                self.specs[name] = spec
        for source in extra_sources:
            for name, spec in source.tool_specs.items():
                if name in self.sources:
                    raise ValueError(f"tool name {name!r} is offered twice (by the environment or another source); "
                                     "rename it in one of the sources")
                self.sources[name] = source
                self.specs[name] = spec

    def spec_payload(self) -> list[dict]:
        return [{"name": name, "description": getattr(spec, "description", "") or "",
                 "parameters": getattr(spec, "parameters", None) or {"type": "object", "properties": {}}}
                for name, spec in self.specs.items()]

    def call(self, name: str, arguments: dict) -> tuple[Any, str | None]:
        """Run one call. Returns (result, error message or None) after applying error_mode."""
        if name not in self.sources:
            return None, f"no tool named {name!r}; available tools: {', '.join(sorted(self.sources))}"
        source = self.sources[name]
        if source is None:
            try:
                result, is_error = self.env.call_tool(name, arguments), False
            except ToolError as exc:
                result, is_error = str(exc), True
        else:
            try:
                result, is_error = source.call(name, arguments)
            except Exception as exc:  # a broken source must not take the episode down
                result, is_error = f"{name} failed with {type(exc).__name__}: {exc}", True
        if is_error:
            message = result if isinstance(result, str) else json.dumps(result, default=str)
            if self.error_mode == "off":  # the paper's ablation: the failure is an ordinary value
                return (result if isinstance(result, str) else message), None
            return None, message
        if self.error_mode == "detect":
            detected = looks_like_error(result)
            if detected is not None:
                return None, detected
        return result, None


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(n - got)
        if not chunk:
            raise ConnectionError("bridge closed")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


MAX_FRAME = 256 << 20


class BridgeServer:
    """Host end of one kernel's bridge: a daemon thread answering tool calls from the kernel."""

    def __init__(self, router: ToolRouter | None = None):
        self.router = router
        self.host_sock, self.kernel_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.calls: list[ToolCall] = []
        self._lock = threading.Lock()
        # Tools run only while a program runs: a thread the program left behind must not touch the
        # environment while the host verifies it, nor be counted in the next program's calls.
        self._gate = threading.Event()
        self._in_call = threading.Lock()
        self._thread = threading.Thread(target=self._serve, name="ptc-bridge", daemon=True)
        self._thread.start()

    @property
    def kernel_fd(self) -> int:
        return self.kernel_sock.fileno()

    def release_kernel_end(self) -> None:
        """Close the host's copy of the kernel's end once the kernel process holds it."""
        self.kernel_sock.close()

    def open_gate(self) -> None:
        self._gate.set()

    def close_gate(self) -> None:
        """Refuse further calls and wait for one in flight to finish."""
        self._gate.clear()
        with self._in_call:
            pass

    def take_calls(self) -> list[ToolCall]:
        with self._lock:
            calls, self.calls = self.calls, []
        return calls

    def _serve(self) -> None:
        sock = self.host_sock
        try:
            while True:
                (length,) = struct.unpack("!I", _recv_exact(sock, 4))
                if length > MAX_FRAME:
                    return  # a corrupt or hostile stream: stop serving, calls will fail in the kernel
                request = json.loads(_recv_exact(sock, length))
                reply = self._handle(request)
                body = json.dumps(reply, default=str).encode()
                sock.sendall(struct.pack("!I", len(body)) + body)
        except (ConnectionError, OSError, ValueError, struct.error):
            return

    def _handle(self, request: dict) -> dict:
        request_id = request.get("id")
        if not isinstance(request, dict):
            return {"id": None, "error": "malformed bridge request"}
        if self.router is None:
            return {"id": request_id, "error": "this kernel is not bound to an episode yet"}
        if request.get("op") == "specs":
            return {"id": request_id, "result": self.router.spec_payload()}
        name, arguments = request.get("name"), request.get("arguments")
        if not isinstance(name, str) or not isinstance(arguments, dict):
            return {"id": request_id, "error": "a tool call needs a tool name and keyword arguments"}
        with self._in_call:
            if not self._gate.is_set():
                return {"id": request_id, "error": "tools can only be called while a program runs "
                                                   "(not from a thread left running after it ended)"}
            started = time.perf_counter()
            result, error = self.router.call(name, arguments)
            seconds = time.perf_counter() - started
        size = len(error) if error is not None else len(json.dumps(result, default=str))
        with self._lock:
            self.calls.append(ToolCall(name, arguments, size, seconds, error is not None, error))
        if error is not None:
            return {"id": request_id, "error": error}
        return {"id": request_id, "result": result}

    def close(self) -> None:
        for sock in (self.host_sock, self.kernel_sock):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


# --- the kernel side, injected as source -----------------------------------------------------------------
KERNEL_PRELUDE = r'''
def __ptc_install(fd):
    import builtins, inspect, itertools, json, socket, struct, threading

    class ToolError(Exception):
        """A tool call failed. The message says what went wrong; fix the call and try again."""

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, fileno=fd)
    lock = threading.Lock()
    ids = itertools.count(1)

    def recv_exact(n):
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                raise ToolError("the tool bridge is closed; the episode may have ended")
            data += chunk
        return data

    def request(message):
        __tracebackhide__ = True
        message["id"] = request_id = next(ids)
        body = json.dumps(message).encode()
        with lock:
            sock.sendall(struct.pack("!I", len(body)) + body)
            while True:  # skip replies to calls abandoned by an interrupt
                (length,) = struct.unpack("!I", recv_exact(4))
                reply = json.loads(recv_exact(length))
                if reply.get("id") == request_id:
                    break
        if "error" in reply:
            raise ToolError(reply["error"])
        return reply["result"]

    def make_tool(spec):
        schema = spec.get("parameters") or {}
        properties = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        params = []
        for pname, pschema in properties.items():
            if not pname.isidentifier():
                continue
            default = inspect.Parameter.empty if pname in required else pschema.get("default", None)
            params.append((pname in required and "default" not in pschema, pname, default))
        params.sort(key=lambda p: not p[0])  # required parameters first
        signature = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=d)
                                       for _, n, d in params])
        name = spec["name"]

        def tool(*args, **kwargs):
            __tracebackhide__ = True
            try:
                bound = signature.bind_partial(*args, **kwargs)
                arguments = dict(bound.arguments)
            except TypeError:
                arguments = dict(kwargs)  # let the host report what is wrong
                if args:
                    raise ToolError(f"{name}: too many positional arguments; pass them by name")
            return request({"name": name, "arguments": arguments})

        tool.__name__ = tool.__qualname__ = name
        tool.__signature__ = signature
        doc = spec.get("description") or ""
        lines = [f"    {p}: {s.get('description', '')}" for p, s in properties.items()]
        tool.__doc__ = doc + (("\n\nArgs:\n" + "\n".join(lines)) if lines else "")
        return tool

    class Tools:
        """The episode's tools. Call `tools.name(arg=value)` or `tools["name"](arg=value)`.

        Results are plain Python objects; a failing call raises ToolError.
        """

        _functions = {}

        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            if name not in type(self)._functions:
                type(self)._load()
            try:
                return type(self)._functions[name]
            except KeyError:
                raise AttributeError(f"no tool named {name!r}; available: {sorted(type(self)._functions)}") from None

        def __getitem__(self, name):
            try:
                return self.__getattr__(name)
            except AttributeError as exc:
                raise KeyError(str(exc)) from None

        def __contains__(self, name):
            type(self)._load()
            return name in type(self)._functions

        def __iter__(self):
            type(self)._load()
            return iter(sorted(type(self)._functions))

        def __len__(self):
            type(self)._load()
            return len(type(self)._functions)

        def __dir__(self):
            type(self)._load()
            return sorted(type(self)._functions)

        def __repr__(self):
            type(self)._load()
            return f"<tools: {', '.join(sorted(type(self)._functions))}>"

        @classmethod
        def _load(cls):
            if cls._functions:
                return
            for spec in request({"op": "specs"}):
                fn = make_tool(spec)
                cls._functions[spec["name"]] = fn
                setattr(cls, spec["name"], staticmethod(fn))  # so that help(tools) shows every tool
            summary = "\n".join(f"  {n}: {(f.__doc__ or '').splitlines()[0] if f.__doc__ else ''}"
                                for n, f in sorted(cls._functions.items()))
            cls.__doc__ = (Tools.__doc__ or "") + "\nAvailable tools:\n" + summary

    return Tools(), ToolError
'''


def install_code(fd: int) -> str:
    """Cell that installs `tools` and `ToolError` in the kernel's namespace (run once per kernel)."""
    # Compiled under its own file name so that tracebacks can show the program's frames only.
    return (f"exec(compile({KERNEL_PRELUDE!r}, {PRELUDE_FILENAME!r}, 'exec'))\n"
            f"tools, ToolError = __ptc_install({fd})\ndel __ptc_install\n"
            # As in any Jupyter kernel, modules the program writes into its folder are importable
            # (the kernel runs with `python -I`, which leaves the current folder out of sys.path).
            "import sys as _ptc_sys\n_ptc_sys.path.insert(0, '')\ndel _ptc_sys\n")


PRELUDE_FILENAME = "<ptc-tools>"


PRELOAD_SPECS_CODE = "tools._load()\n"

OUTPUT_GUARD = r'''
def __ptc_guard(limit):
    import sys
    from ipykernel.iostream import OutStream

    state = {"seen": 0, "tail": [], "tail_len": 0}
    original = OutStream.write

    def write(self, string):
        if not isinstance(string, str):
            return original(self, string)
        seen = state["seen"]
        state["seen"] = seen + len(string)
        if seen + len(string) <= limit:
            return original(self, string)
        keep = max(0, limit - seen)
        rest = string[-limit:] if len(string) - keep > limit else string[keep:]  # no copy of a huge string
        if keep:
            original(self, string[:keep])
        state["tail"].append(rest)
        state["tail_len"] += len(rest)
        if state["tail_len"] > 4 * limit:  # trim now and then, not on every write
            joined = "".join(state["tail"])[-limit:]
            state["tail"], state["tail_len"] = [joined], len(joined)
        return len(string)

    def start(*_):
        state["seen"], state["tail"], state["tail_len"] = 0, [], 0

    def finish(*_):
        if state["seen"] > limit:
            tail = "".join(state["tail"])[-limit:]
            dropped = state["seen"] - limit - len(tail)
            original(sys.stdout, f"\\n[... {dropped} characters of output cut ...]\\n" + tail)
        start()

    OutStream.write = write
    shell = get_ipython()
    # IPython >= 9 copies every write into shell.history_manager.outputs (kept for the whole
    # session, ~10 us per write); nothing here reads that history, so switch the copy off.
    import contextlib
    if hasattr(shell, "_tee"):
        shell._tee = lambda channel: contextlib.nullcontext()
    shell.events.register("pre_run_cell", start)
    shell.events.register("post_run_cell", finish)
'''


def output_guard_code(limit: int) -> str:
    """Cell that bounds what a program's prints send to the host: the first and last `limit` characters.

    The host bounds the output again (a program can undo this guard), so this only spares the
    channel and the host's memory from megabytes that would be cut anyway.
    """
    return (f"exec(compile({OUTPUT_GUARD!r}, {PRELUDE_FILENAME!r}, 'exec'))\n"
            f"__ptc_guard({int(limit)})\ndel __ptc_guard\n")
