"""The tool bridge: `tools.<name>(...)` in the kernel runs the tool on the host, over a socketpair.

The host keeps one end of a unix socketpair and passes the other to the kernel process as an
inherited file descriptor, so the channel needs no path, no port and no network (it works inside the
kernel's empty network namespace) and no other process can connect to it. Frames are a 4-byte
big-endian length and a JSON body: requests `{"id", "name", "arguments"}` (or `{"id", "op": "specs"}`),
replies `{"id", "result"}` or `{"id", "error"}`.

The kernel writes whatever it likes into its end, so every frame is untrusted: its size, its JSON,
its nesting, its types. A bad frame gets an error reply and the bridge goes on serving; nothing a
frame holds can end the serving thread. Calls run only while a program runs, each by the program's
deadline, and what the host keeps of each (`ToolCall`) is bounded.

The kernel side is `kernel_side/tools_proxy.py`, sent to the kernel as source text: the kernel
cannot import progagent_lib (the sandbox hides the project tree), and it needs nothing of it.
"""
from __future__ import annotations

import inspect
import json
import socket
import struct
import threading
import time
from dataclasses import dataclass
from typing import Any, Iterable, Protocol

from ..task import ToolError
from ..task.environment import MAX_ERROR_CHARS, bounded_text, loggable_arguments
from .error_modes import ERROR_MODES, check_error_mode, looks_like_error
from .kernel_side import FILENAME as PRELUDE_FILENAME, source

MAX_FRAME = 64 << 20       # bytes of one request frame; larger frames are read, discarded and refused
MAX_DEPTH = 32             # nesting of a request's JSON (arguments are flat records in practice)
MAX_CALL_RECORDS = 10_000  # tool calls kept per program; beyond that they are only counted
CALL_GRACE = 2.0           # seconds a program's end waits for a tool call still running on the host
FRAME_IDLE = 2.0           # seconds a started frame may pause; longer and the stream is out of step for good


class ToolSource(Protocol):
    """Anything besides the episode's environment that offers tools (e.g. an MCP server)."""

    tool_specs: dict  # name -> object with .name, .description, .parameters (JSON schema)

    def call(self, name: str, arguments: dict) -> tuple[Any, bool]:  # (result, is_error)
        ...


@dataclass
class ToolCall:
    """One tool call a program made through the bridge, as the host saw it (arguments bounded)."""

    name: str
    arguments: dict
    result_chars: int
    seconds: float
    is_error: bool
    error: str | None = None


def _accepts_deadline(source: Any) -> bool:
    try:
        return "deadline" in inspect.signature(source.call).parameters
    except (TypeError, ValueError):
        return False


class ToolRouter:
    """Routes a tool name to the episode environment or to an extra source, and applies error_mode."""

    def __init__(self, env: Any, extra_sources: Iterable[ToolSource] = (), error_mode: str = "is_error"):
        check_error_mode(error_mode)
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

    def call(self, name: str, arguments: dict, deadline: float | None = None) -> tuple[Any, str | None]:
        """Run one call by `deadline` (time.monotonic). Returns (result, error message or None) after error_mode.

        Error messages are cut to MAX_ERROR_CHARS: a tool (or a program through its arguments) can
        make them as long as it likes.
        """
        if name not in self.sources:
            return None, f"no tool named {name!r:.100}; available tools: {', '.join(sorted(self.sources))}"
        source = self.sources[name]
        if source is None:
            try:
                result, is_error = self.env.call_tool(name, arguments, deadline=deadline), False
            except ToolError as exc:
                result, is_error = str(exc), True
        else:
            try:
                if deadline is not None and _accepts_deadline(source):
                    result, is_error = source.call(name, arguments, deadline=deadline)
                else:
                    result, is_error = source.call(name, arguments)
            except Exception as exc:  # a broken source must not take the episode down
                result, is_error = f"{name} failed with {type(exc).__name__}: {exc}", True
        if is_error:
            message = bounded_text(result if isinstance(result, str) else json.dumps(result, default=str))
            if self.error_mode == "off":  # the paper's ablation: the failure is an ordinary value
                return message, None
            return None, message
        if self.error_mode == "detect":
            detected = looks_like_error(result)
            if detected is not None:
                return None, bounded_text(detected)
        return result, None


def _depth_exceeds(value: Any, limit: int) -> bool:
    """True if `value` nests lists/dicts deeper than `limit` (iteratively: no recursion on hostile input)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


class BadFrame(Exception):
    """A request frame the bridge refuses; the message goes back to the kernel."""


def parse_request(body: bytes) -> dict:
    """A request frame's JSON as a dict with a usable id; BadFrame saying what is wrong otherwise."""
    try:
        request = json.loads(body)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise BadFrame(f"malformed bridge request: not JSON ({type(exc).__name__})") from None
    if not isinstance(request, dict):
        raise BadFrame(f"malformed bridge request: expected an object, got {type(request).__name__}")
    if _depth_exceeds(request, MAX_DEPTH):
        raise BadFrame(f"malformed bridge request: nested deeper than {MAX_DEPTH} levels")
    return request


def _request_id(request: Any) -> int | str | None:
    rid = request.get("id") if isinstance(request, dict) else None
    if isinstance(rid, bool) or not isinstance(rid, (int, str)):
        return None
    return rid if isinstance(rid, int) or len(rid) <= 100 else None


class BridgeServer:
    """Host end of one kernel's bridge: a daemon thread answering tool calls from the kernel."""

    def __init__(self, router: ToolRouter | None = None):
        self.router = router
        self.host_sock, self.kernel_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.calls: list[ToolCall] = []
        self.calls_not_recorded = 0
        self.bad_frames = 0
        # Why the channel can no longer be read in step (a frame that never completes), or None. The
        # kernel must then be restarted: no frame boundary can be found again in the byte stream.
        self.broken: str | None = None
        self._lock = threading.Lock()
        # Tools run only while a program runs: a thread the program left behind must not touch the
        # environment while the host verifies it, nor be counted in the next program's calls.
        self._gate = threading.Event()
        self._deadline: float | None = None
        self._in_call = threading.Lock()
        self._thread = threading.Thread(target=self._serve, name="ptc-bridge", daemon=True)
        self._thread.start()

    @property
    def kernel_fd(self) -> int:
        return self.kernel_sock.fileno()

    @property
    def serving(self) -> bool:
        return self._thread.is_alive()

    def release_kernel_end(self) -> None:
        """Close the host's copy of the kernel's end once the kernel process holds it."""
        self.kernel_sock.close()

    def open_gate(self, deadline: float | None = None) -> None:
        """Accept calls until `close_gate`; each must end by `deadline` (time.monotonic), the program's own."""
        self._deadline = deadline
        self._gate.set()

    def close_gate(self, grace: float = CALL_GRACE) -> bool:
        """Refuse further calls and wait up to `grace` s for one in flight; False if it is still running."""
        self._gate.clear()
        if self._in_call.acquire(timeout=grace):
            self._in_call.release()
            return True
        return False

    def take_calls(self) -> list[ToolCall]:
        with self._lock:
            calls, self.calls = self.calls, []
            self.calls_not_recorded = 0
        return calls

    # --- serving -------------------------------------------------------------------------------------
    def _serve(self) -> None:
        sock = self.host_sock
        while True:
            try:
                first = sock.recv(1)  # waits as long as the kernel is quiet
                if not first:
                    return  # the kernel's end is closed: the kernel is gone
                (length,) = struct.unpack("!I", first + _recv_exact(sock, 3, FRAME_IDLE))
                if length > MAX_FRAME:
                    _discard(sock, length, FRAME_IDLE)
                    reply = {"id": None, "error": f"malformed bridge request: a frame of {length} bytes "
                                                  f"(at most {MAX_FRAME})"}
                    self.bad_frames += 1
                    frame = _encode(reply)
                else:
                    frame = self._answer(_recv_exact(sock, length, FRAME_IDLE))
                sock.sendall(frame)
            except TimeoutError:
                self.broken = f"a request frame stopped short (no byte for {FRAME_IDLE:g} s inside a frame)"
                self.close()
                return
            except (ConnectionError, OSError):
                return  # the kernel's end is closed: the kernel is gone
            except Exception:  # noqa: BLE001 - nothing a frame holds may end the serving thread
                self.bad_frames += 1
                continue

    def _answer(self, body: bytes) -> bytes:
        """The reply frame to one request frame (never raises for anything the frame holds)."""
        try:
            request = parse_request(body)
        except BadFrame as exc:
            self.bad_frames += 1
            return _encode({"id": None, "error": str(exc)})
        request_id = _request_id(request)
        call = None
        try:
            reply, call = self._handle(request)
        except Exception as exc:  # noqa: BLE001 - a host-side bug in one call must not stop the others
            reply = {"error": bounded_text(f"the host failed to run the call: {type(exc).__name__}: {exc}")}
        frame = _encode({"id": request_id, **reply})
        if call is not None:
            call.result_chars = len(call.error) if call.error is not None else len(frame)
            self._record(call)
        return frame

    def _handle(self, request: dict) -> tuple[dict, ToolCall | None]:
        if self.router is None:
            return {"error": "this kernel is not bound to an episode yet"}, None
        if request.get("op") == "specs":
            return {"result": self.router.spec_payload()}, None
        name, arguments = request.get("name"), request.get("arguments")
        if not isinstance(name, str) or not isinstance(arguments, dict):
            return {"error": "a tool call needs a tool name (a string) and its arguments (an object of named values)"}, None
        with self._in_call:
            if not self._gate.is_set():
                return {"error": "tools can only be called while a program runs "
                                 "(not from a thread left running after it ended)"}, None
            started = time.perf_counter()
            result, error = self.router.call(name, arguments, deadline=self._deadline)
            seconds = time.perf_counter() - started
        call = ToolCall(name[:200], loggable_arguments(arguments), 0, seconds, error is not None,
                        None if error is None else error[:MAX_ERROR_CHARS])
        return ({"error": error} if error is not None else {"result": result}), call

    def _record(self, call: ToolCall) -> None:
        with self._lock:
            if len(self.calls) < MAX_CALL_RECORDS:
                self.calls.append(call)
            else:
                self.calls_not_recorded += 1

    def close(self) -> None:
        for sock in (self.host_sock, self.kernel_sock):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


def _recv_exact(sock: socket.socket, n: int, idle: float) -> bytes:
    """`n` bytes; TimeoutError if none arrives for `idle` seconds (the rest of a frame must follow)."""
    chunks, got = [], 0
    sock.settimeout(idle)
    try:
        while got < n:
            chunk = sock.recv(min(n - got, 1 << 20))
            if not chunk:
                raise ConnectionError("bridge closed")
            chunks.append(chunk)
            got += len(chunk)
    finally:
        sock.settimeout(None)
    return b"".join(chunks)


def _discard(sock: socket.socket, n: int, idle: float) -> None:
    sock.settimeout(idle)
    try:
        while n > 0:
            chunk = sock.recv(min(n, 1 << 20))
            if not chunk:
                raise ConnectionError("bridge closed")
            n -= len(chunk)
    finally:
        sock.settimeout(None)


def _encode(reply: dict) -> bytes:
    """A reply frame; a result JSON cannot carry (a cycle, a NaN in strict JSON) becomes an error reply."""
    try:
        body = json.dumps(reply, default=str).encode()
    except (ValueError, TypeError, RecursionError) as exc:
        body = json.dumps({"id": reply.get("id"), "error": f"the tool's result cannot be sent as JSON: {exc}"}).encode()
    return struct.pack("!I", len(body)) + body


# --- the kernel side, sent as source ---------------------------------------------------------------------
def install_code(fd: int) -> str:
    """Cell that installs `tools` and `ToolError` in the kernel's namespace (run once per kernel)."""
    # Compiled under its own file name so that tracebacks can show the program's frames only.
    return (f"_ptc_ns = {{}}\nexec(compile({source('tools_proxy')!r}, {PRELUDE_FILENAME!r}, 'exec'), _ptc_ns)\n"
            f"tools, ToolError = _ptc_ns['install']({int(fd)})\ndel _ptc_ns\n"
            # As in any Jupyter kernel, modules the program writes into its folder are importable
            # (the kernel runs with `python -I`, which leaves the current folder out of sys.path).
            "import sys as _ptc_sys\n_ptc_sys.path.insert(0, '')\ndel _ptc_sys\n")


PRELOAD_SPECS_CODE = "tools._load()\n"


def output_guard_code(limit: int) -> str:
    """Cell that bounds what a program's prints send to the host (see `kernel_side/output_guard.py`)."""
    return (f"_ptc_ns = {{}}\nexec(compile({source('output_guard')!r}, {PRELUDE_FILENAME!r}, 'exec'), _ptc_ns)\n"
            f"_ptc_ns['install']({int(limit)})\ndel _ptc_ns\n")


__all__ = ["BridgeServer", "ToolRouter", "ToolCall", "ToolSource", "ERROR_MODES", "looks_like_error", "parse_request",
           "BadFrame", "MAX_FRAME", "MAX_DEPTH", "MAX_CALL_RECORDS", "install_code", "output_guard_code",
           "PRELOAD_SPECS_CODE", "PRELUDE_FILENAME"]
