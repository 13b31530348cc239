"""The tool bridge: `tools.<name>(...)` in the kernel runs the tool on the host, over socketpairs.

The host keeps one end of a unix socketpair and passes the other to the kernel process as an
inherited file descriptor, so the channel needs no path, no port and no network (it works inside the
kernel's empty network namespace) and no other process can connect to it. Frames are a 4-byte
big-endian length and a JSON body: requests `{"id", "name", "arguments"}` (or `{"id", "op": "specs"}`),
replies `{"id", "result"}` or `{"id", "error"}`.

Requests go on that socketpair, replies on a second one: its kernel end is the first thing the host
writes into the first pair (one byte, the descriptor passed as SCM_RIGHTS), and the kernel's install
takes it before anything else. One socket both ways cost a wakeup on each side per call: a thread
asleep in `recv` on a unix socket is also woken when the peer reads what that socket wrote (its write
space comes back), finds nothing and sleeps again; so the kernel reading a reply woke the host's
serving thread for nothing, and the host reading a request woke the kernel.

The kernel writes whatever it likes into its end, so every frame is untrusted: its size, its JSON,
its nesting, its types. A bad frame gets an error reply and the bridge goes on serving; nothing a
frame holds can end the serving thread. Calls run only while a program runs, each by the program's
deadline, and what the host keeps of each (`BridgeCall`) is bounded.

What one frame may cost the host is bounded before its JSON is parsed: a frame over MAX_FRAME is
read off in pieces and refused, never held whole, and the bytes of a frame are scanned for the
number of values (MAX_VALUES) and the nesting (MAX_DEPTH) they can make. Parsed objects cost far
more than their bytes (`[{},{},...]` is 3 bytes a value and some 70 bytes a value once parsed), so
the count bound is what keeps a frame's memory within a small multiple of its size.

Every call pays for the bridge's path, so it is kept short: a frame normally comes in with one
`recv_into` on a reused buffer and no socket timeout is set unless a frame arrives in pieces; the
scan is a few `bytes.count` calls unless the counts come near a bound; JSON is read and written by
the C scanner and encoder directly. The result of one of the environment's own tools is encoded once:
`Environment.call_tool_json` writes it (the call log measures it by that text) and the reply frame is
built around that text.

The kernel side is `kernel_side/tools_proxy.py`, imported in the kernel from the sandbox's copy of
`kernel_side` (the kernel cannot import progagent_lib: the sandbox hides the project tree).
"""

from __future__ import annotations

import inspect
import json
import re
import socket
import struct
import threading
import time
from dataclasses import dataclass
from json.decoder import JSONDecoder
from typing import Any, Iterable, Protocol, cast

from ..task import ToolError
from ..task.environment import Environment, loggable_arguments
from ..task.tool_replies import MAX_ERROR_CHARS, bounded_text, result_json
from .error_modes import ERROR_MODES, check_error_mode, looks_like_error
from .kernel_side import call_code

# Bytes of one request frame; larger frames are read off in pieces, discarded and refused. Tool
# arguments are small records in practice (ids, filters, a page number); the large ones are texts for
# the workspace (`write_file`'s content), which programs can as well write into their folder directly.
# 4 MiB lets a text of a few MiB through to its tool while, with the value bound below, one frame costs
# the host a few times its size at most (the frame, its decoded text, the parsed strings, the call
# log's digest of a long argument).
MAX_FRAME = 4 << 20
MAX_DEPTH = 32  # nesting of a request's JSON (arguments are flat records in practice)
# Values (containers and scalars) of one request, counted before parsing as the `[`, `{` and `,` outside
# strings, plus one (an upper bound: each value opens a container, follows a comma, or is the first).
# A record of arguments holds a few dozen; 100 000 parsed values cost the host some 20 MB at most (an
# object of 100 000 keys and numbers), and the rest of a frame can only be strings, about their size.
MAX_VALUES = 100_000
READ_BUFFER = 1 << 16  # bytes read at once: an ordinary frame, header and body, in one read
MAX_CALL_RECORDS = 10_000  # tool calls kept per program; beyond that they are only counted
CALL_GRACE = 2.0  # seconds a program's end waits for a tool call still running on the host
FRAME_IDLE = 2.0  # seconds a started frame may pause; longer and the stream is out of step for good


class ToolSource(Protocol):
    """Anything besides the episode's environment that offers tools (e.g. an MCP server)."""

    tool_specs: dict  # name -> object with .name, .description, .parameters (JSON schema)

    def call(self, name: str, arguments: dict) -> tuple[Any, bool]:  # (result, is_error)
        ...


class _SourceWithDeadline(ToolSource, Protocol):
    """A ToolSource whose `call` also takes the program's deadline (time.monotonic), as MCPToolSource's does."""

    def call(self, name: str, arguments: dict, deadline: float | None = None) -> tuple[Any, bool]: ...


@dataclass
class BridgeCall:
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
        self._takes_deadline: dict[int, bool] = {}  # id(source) -> whether its call() takes a deadline
        # The environment's call that also gives the result's JSON text, which the bridge then sends as
        # it is; not where a subclass changed `call_tool` (its override must run).
        self._env_call_json = None
        if env is not None and isinstance(env, Environment) and type(env).call_tool is Environment.call_tool:
            self._env_call_json = env.call_tool_json
        if env is not None:
            for name, spec in env.tool_specs.items():
                self.sources[name] = None
                self.specs[name] = spec
        for source in extra_sources:
            for name, spec in source.tool_specs.items():
                if name in self.sources:
                    raise ValueError(
                        f"tool name {name!r} is offered twice (by the environment or another source); "
                        "rename it in one of the sources"
                    )
                self.sources[name] = source
                self.specs[name] = spec
            self._takes_deadline[id(source)] = _accepts_deadline(source)  # once: inspect.signature is slow

    def spec_payload(self) -> list[dict]:
        return [
            {
                "name": name,
                "description": getattr(spec, "description", "") or "",
                "parameters": getattr(spec, "parameters", None) or {"type": "object", "properties": {}},
            }
            for name, spec in self.specs.items()
        ]

    def call(self, name: str, arguments: dict, deadline: float | None = None) -> tuple[Any, str | None]:
        """Run one call by `deadline` (time.monotonic). Returns (result, error message or None) after error_mode.

        Error messages are cut to MAX_ERROR_CHARS: a tool (or a program through its arguments) can
        make them as long as it likes.
        """
        result, _, error = self.call_json(name, arguments, deadline)
        return result, error

    def call_json(
        self, name: str, arguments: dict, deadline: float | None = None
    ) -> tuple[Any, str | None, str | None]:
        """`call`, as (result, the result's JSON text or None, error message or None).

        The text (compact, ASCII, what `Environment.call_tool_json` writes) comes with results of the
        environment's own tools, which encode their result anyway; None where it must still be encoded.
        """
        if name not in self.sources:
            return None, None, f"no tool named {name!r:.100}; available tools: {', '.join(sorted(self.sources))}"
        source = self.sources[name]
        text = None
        if source is None:
            try:
                if self._env_call_json is not None:
                    result, text = self._env_call_json(name, arguments, deadline=deadline)
                else:
                    result = self.env.call_tool(name, arguments, deadline=deadline)
                is_error = False
            except ToolError as exc:
                result, is_error = str(exc), True
        else:
            try:
                takes_deadline = self._takes_deadline.get(id(source))
                if takes_deadline is None:  # a source put in after the router was made
                    takes_deadline = self._takes_deadline[id(source)] = _accepts_deadline(source)
                if deadline is not None and takes_deadline:
                    timed_source = cast(_SourceWithDeadline, source)  # _accepts_deadline saw the parameter
                    result, is_error = timed_source.call(name, arguments, deadline=deadline)
                else:
                    result, is_error = source.call(name, arguments)
            except Exception as exc:  # noqa: BLE001 - a broken source must not take the episode down
                result, is_error = f"{name} failed with {type(exc).__name__}: {exc}", True
        if is_error:
            message = bounded_text(result if isinstance(result, str) else json.dumps(result, default=str))
            if self.error_mode == "off":  # the paper's ablation: the failure is an ordinary value
                return message, None, None
            return None, None, message
        if self.error_mode == "detect":
            detected = looks_like_error(result)
            if detected is not None:
                return None, None, bounded_text(detected)
        return result, text, None


# A JSON string in a frame's bytes: to its closing quote, or to the end for one never closed (so that
# every quote starts a match and the search never rescans a tail: linear time on any bytes). In UTF-8
# the bytes `"`, `\\`, `[`, `{`, `,` occur only as those characters, so this finds exactly the
# strings of any frame that decodes and parses; other frames are refused by the parser anyway.
_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)', re.DOTALL)
_ONE_BRACKET = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


class BadFrame(Exception):
    """A request frame the bridge refuses; the message goes back to the kernel."""


def check_shape(body: bytes | bytearray) -> None:
    """BadFrame if `body`'s JSON would hold more than MAX_VALUES values or nest deeper than MAX_DEPTH.

    Scans the bytes only, before they are parsed, in time and memory linear in their length. The
    counts over the raw bytes are upper bounds of the real ones (brackets and commas in strings count
    too), so an ordinary request is cleared by four `bytes.count` calls; only one whose counts come
    near a bound has its strings cut out (at most 2 * MAX_VALUES + 2 of them: every string is a value or
    a key, and keys are fewer than values) and is counted exactly.
    """
    opens = body.count(b"[") + body.count(b"{")
    if opens <= MAX_DEPTH and opens + body.count(b",") + 1 <= MAX_VALUES:
        return
    limit = 2 * MAX_VALUES + 2
    skeleton, strings = _STRING.subn(b"", body, count=limit) if b'"' in body else (body, 0)
    opens = skeleton.count(b"[") + skeleton.count(b"{")
    if strings >= limit or opens + skeleton.count(b",") + 1 > MAX_VALUES:
        raise BadFrame(f"malformed bridge request: more than {MAX_VALUES} values (lists, objects, strings, numbers)")
    if opens <= MAX_DEPTH:
        return
    brackets = skeleton.translate(_ONE_BRACKET, _NOT_BRACKET)
    if brackets.count(b"[") * 2 != len(brackets):
        raise BadFrame("malformed bridge request: not JSON (unbalanced brackets)")
    # Each pass removes every innermost pair (`replace` does not look again at what it joined), so
    # after MAX_DEPTH passes only containers nested deeper than MAX_DEPTH are left.
    for _ in range(MAX_DEPTH):
        brackets = brackets.replace(b"[]", b"")
        if not brackets:
            return
    raise BadFrame(f"malformed bridge request: nested deeper than {MAX_DEPTH} levels")


_scan_once = JSONDecoder().scan_once  # type: ignore[attr-defined]  # not in typeshed; the C scanner (json.loads adds ~5 us of Python around it)


def _loads(text: str) -> Any:
    try:
        value, end = _scan_once(text, 0)
    except StopIteration:  # no value at the start (space before it, or nothing): json.loads says which
        return json.loads(text)
    if end != len(text):  # space after the value is allowed, anything else an error: json.loads decides
        del value
        return json.loads(text)
    return value


def parse_request(body: bytes | bytearray) -> dict:
    """A request frame's JSON as a dict; BadFrame saying what is wrong otherwise."""
    opens = body.count(b"[") + body.count(b"{")
    if opens > MAX_DEPTH or opens + body.count(b",") >= MAX_VALUES:  # check_shape's first test, inline
        check_shape(body)
    try:
        request = _loads(body.decode())  # UTF-8 only (the scan relies on it; the kernel sends ASCII)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise BadFrame(f"malformed bridge request: not JSON ({type(exc).__name__})") from None
    if not isinstance(request, dict):
        raise BadFrame(f"malformed bridge request: expected an object, got {type(request).__name__}")
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
        self.reply_sock, kernel_replies = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:  # queued for the kernel's install, which reads it first (see the module's docstring)
            socket.send_fds(self.host_sock, [b"R"], [kernel_replies.fileno()])
        finally:
            kernel_replies.close()
        self.calls: list[BridgeCall] = []
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

    def take_calls(self) -> list[BridgeCall]:
        with self._lock:
            calls, self.calls = self.calls, []
            self.calls_not_recorded = 0
        return calls

    # --- serving -------------------------------------------------------------------------------------
    def _serve(self) -> None:
        replies, reader = self.reply_sock, _FrameReader(self.host_sock)
        while True:
            try:
                body = reader.next_frame()
            except TimeoutError:
                self.broken = f"a request frame stopped short (no byte for {FRAME_IDLE:g} s inside a frame)"
                self.close()
                return
            except (ConnectionError, OSError):
                return  # the kernel's end is closed: the kernel is gone
            except Exception as exc:  # noqa: BLE001 - e.g. no memory for a large frame: the stream is out of step
                self.broken = f"a request frame could not be read ({type(exc).__name__})"
                self.close()
                return
            try:
                if isinstance(body, int):
                    self.bad_frames += 1
                    frame = _encode(
                        {
                            "id": None,
                            "error": f"malformed bridge request: a frame of {body} bytes (at most {MAX_FRAME})",
                        }
                    )
                else:
                    frame = self._answer(body)
                del body
                replies.sendall(frame)
            except (ConnectionError, OSError):
                return  # the kernel's end is closed: the kernel is gone
            except Exception:  # noqa: BLE001 - nothing a frame holds may end the serving thread
                self.bad_frames += 1

    def _answer(self, body: bytes | bytearray) -> bytes:
        """The reply frame to one request frame (never raises for anything the frame holds)."""
        try:
            request = parse_request(body)
        except BadFrame as exc:
            self.bad_frames += 1
            return _encode({"id": None, "error": str(exc)})
        request_id = request.get("id")
        if type(request_id) is not int:  # the proxy's ids are ints; anything else is checked
            request_id = _request_id(request)
        try:
            return self._handle(request, request_id)
        except Exception as exc:  # noqa: BLE001 - a host-side bug in one call must not stop the others
            return _encode(
                {
                    "id": request_id,
                    "error": bounded_text(f"the host failed to run the call: {type(exc).__name__}: {exc}"),
                }
            )

    def _handle(self, request: dict, request_id: int | str | None) -> bytes:
        router = self.router
        if router is None:
            return _encode({"id": request_id, "error": "this kernel is not bound to an episode yet"})
        if request.get("op") == "specs":
            return _encode({"id": request_id, "result": router.spec_payload()})
        name, arguments = request.get("name"), request.get("arguments")
        if not isinstance(name, str) or not isinstance(arguments, dict):
            return _encode(
                {
                    "id": request_id,
                    "error": "a tool call needs a tool name (a string) and its arguments (an object of named values)",
                }
            )
        with self._in_call:
            if not self._gate.is_set():
                return _encode(
                    {
                        "id": request_id,
                        "error": "tools can only be called while a program runs "
                        "(not from a thread left running after it ended)",
                    }
                )
            started = time.perf_counter()
            result, text, error = router.call_json(name, arguments, deadline=self._deadline)
            seconds = time.perf_counter() - started
            # Encoded and recorded before the lock is let go: when close_gate returns, every call of the
            # program is in its records (none can land in the next program's).
            if error is not None:
                frame = _encode({"id": request_id, "error": error})
                error = error[:MAX_ERROR_CHARS]
                self._record(BridgeCall(name[:200], loggable_arguments(arguments), len(error), seconds, True, error))
            elif text is not None:  # the environment's JSON text of the result, framed as it is
                body = (
                    f'{{"id":{request_id if type(request_id) is int else _dumps(request_id)},"result":{text}}}'.encode()
                )
                frame = _HEADER.pack(len(body)) + body
                self._record(BridgeCall(name[:200], loggable_arguments(arguments), len(text), seconds, False))
            else:
                frame = _encode({"id": request_id, "result": result})
                self._record(BridgeCall(name[:200], loggable_arguments(arguments), len(frame), seconds, False))
        return frame

    def _record(self, call: BridgeCall) -> None:
        with self._lock:
            if len(self.calls) < MAX_CALL_RECORDS:
                self.calls.append(call)
            else:
                self.calls_not_recorded += 1

    def close(self) -> None:
        for sock in (self.host_sock, self.kernel_sock, self.reply_sock):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


_HEADER = struct.Struct("!I")


class _FrameReader:
    """Reads request frames off the host's end of the bridge into one buffer, reused for every frame.

    An ordinary frame (the kernel sends header and body with one `sendall`) comes in with one
    `recv_into` while the socket blocks without a timeout, as it may between frames. Only a frame
    that arrives in pieces sets one (FRAME_IDLE, for the rest of that frame); one larger than the
    buffer gets a buffer of its own size (at most MAX_FRAME), and one over MAX_FRAME is read off in
    buffer-sized pieces and dropped, so no frame is ever held whole beyond MAX_FRAME. Bytes read past
    a frame (a kernel may send several at once) stay in the buffer for the next one.
    """

    def __init__(self, sock: socket.socket, size: int = READ_BUFFER):
        self.sock = sock
        self.buffer = bytearray(size)
        self.view = memoryview(self.buffer)
        self.start = self.end = 0  # bytes read and not yet taken: buffer[start:end]

    def next_frame(self) -> bytes | bytearray | int:
        """The next frame's body, or its length when it was over MAX_FRAME (then it was read off and dropped).

        Waits as long as the kernel is quiet; TimeoutError when a started frame pauses for FRAME_IDLE,
        ConnectionError when the kernel's end is closed.
        """
        start = self.start
        if start == self.end:  # no frame started: wait without a timeout
            start = self.start = self.end = 0
            got = self.sock.recv_into(self.view)
            if not got:
                raise ConnectionError("bridge closed")
            self.end = got
        available = self.end - start
        if available >= 4:
            (length,) = _HEADER.unpack_from(self.buffer, start)
            if length <= available - 4:  # the whole frame is in: the path of every ordinary call
                self.start = start + 4 + length
                return bytes(self.view[start + 4 : self.start])
        self.sock.settimeout(FRAME_IDLE)
        try:
            return self._rest_of_frame()
        finally:
            self.sock.settimeout(None)

    def _recv(self) -> None:
        got = self.sock.recv_into(self.view[self.end :])
        if not got:
            raise ConnectionError("bridge closed")
        self.end += got

    def _fill(self, n: int) -> None:
        """Read until buffer[start:] holds `n` bytes (n <= the buffer's size)."""
        while self.end - self.start < n:
            if self.start + n > len(self.buffer):  # move what is pending to the front to make room
                pending = bytes(self.view[self.start : self.end])
                self.buffer[: len(pending)] = pending
                self.start, self.end = 0, len(pending)
            self._recv()

    def _take(self, length: int) -> bytes:
        start = self.start + 4
        self.start = start + length
        return bytes(self.view[start : self.start])

    def _rest_of_frame(self) -> bytes | bytearray | int:
        self._fill(4)
        (length,) = _HEADER.unpack_from(self.buffer, self.start)
        if length > MAX_FRAME:
            self.start += 4
            self._drop(length)
            return length
        if 4 + length <= len(self.buffer):
            self._fill(4 + length)
            return self._take(length)
        body = bytearray(length)
        have = self.end - self.start - 4  # less than `length`: the frame is larger than the buffer
        body[:have] = self.view[self.start + 4 : self.end]
        self.start = self.end = 0
        view = memoryview(body)
        while have < length:  # into the frame's own buffer, and no further: what follows stays in the socket
            got = self.sock.recv_into(view[have:])
            if not got:
                raise ConnectionError("bridge closed")
            have += got
        view.release()
        return body

    def _drop(self, length: int) -> None:
        pending = min(self.end - self.start, length)
        self.start += pending
        length -= pending
        if length:  # nothing is pending any more
            self.start = self.end = 0
        while length:
            got = self.sock.recv_into(self.view, min(length, len(self.buffer)))
            if not got:
                raise ConnectionError("bridge closed")
            length -= got


# Replies are written by the C encoder directly (json.dumps builds a new encoder around it per call).
# It is made without a cycle check: a result that holds itself ends in RecursionError instead, still
# an error reply. Compact separators: the kernel reads fewer bytes.
# Replies are written by the same encoder as the environment's results (one JSON form for both).
_dumps = result_json


def _encode(reply: dict) -> bytes:
    """A reply frame; a result JSON cannot carry (a cycle, a NaN in strict JSON) becomes an error reply."""
    try:
        body = _dumps(reply).encode()
    except Exception as exc:  # noqa: BLE001 - also a result whose str() raises: the kernel must get a reply
        body = _dumps(
            {
                "id": reply.get("id"),
                "error": bounded_text(f"the tool's result cannot be sent as JSON: {type(exc).__name__}: {exc}"),
            }
        ).encode()
    return _HEADER.pack(len(body)) + body


# --- the kernel side: calls into the kernel_side modules ---------------------------------------------------
def install_code(fd: int, deny_unix_sockets: bool) -> str:
    """Cell that installs `tools` and `ToolError` in the kernel's namespace (run once per kernel), after the
    kernel's own seccomp filter if `deny_unix_sockets` (see `kernel_side/startup.py`)."""
    return call_code("startup", "start", int(fd), int(MAX_FRAME), bool(deny_unix_sockets), result="tools, ToolError")


PRELOAD_SPECS_CODE = "tools._load()\n"


def output_guard_code(limit: int) -> str:
    """Cell that bounds what a program's prints send to the host (see `kernel_side/output_guard.py`)."""
    return call_code("output_guard", "install", int(limit))


__all__ = [
    "BridgeServer",
    "ToolRouter",
    "BridgeCall",
    "ToolSource",
    "ERROR_MODES",
    "looks_like_error",
    "parse_request",
    "BadFrame",
    "check_shape",
    "MAX_FRAME",
    "MAX_DEPTH",
    "MAX_VALUES",
    "MAX_CALL_RECORDS",
    "install_code",
    "output_guard_code",
    "PRELOAD_SPECS_CODE",
]
