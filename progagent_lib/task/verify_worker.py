"""Verification as untrusted work, the host's side: a task's criteria() run in a child process with CPU-time,
memory and wall-clock budgets, forked from a small server that holds no thread and no episode (the server and
the child are `verify_server`; this module starts the server, hands it work and reads the replies).

Why a child: criteria() parse what the program wrote and the final answer it gave. In the host's own
process a regex or a parser fed hostile input holds the GIL, so every other episode and the tool bridge
stop (a 200,000-character answer held it 92-123 s), and it grows the host's memory (a 32 MiB report of
short rows took 932 MiB). A child can be stopped, and its memory is bounded; the host only waits on a socket.

Why a server: forking the host itself would copy a multithreaded process (with locks other threads
hold) and all its memory, and a fresh interpreter per verification costs ~100 ms. The server is a fresh
interpreter started once per host process, single-threaded, with the library and the modules verifiers
import preloaded; each verification is a fork of it.

One verification (`run_in_child`):
1. The host makes two socket pairs, `job` and `status`, and hands their far ends with the budgets to the
   server over its control socket (SCM_RIGHTS).
2. The server forks. The child sets RLIMIT_CPU, RLIMIT_AS and RLIMIT_CORE, reads its request on `job`
   (bounded JSON: the task folder, scale, seed, parameters, the episode's database, the frozen workspace
   copy, the answer), builds the task's environment on them (the database opened read-only), runs
   criteria() and writes a bounded JSON reply on `job`.
3. The server, the child's parent, kills it once past its wall-clock budget, reaps it and writes how it
   ended on `status`.
4. The host reads both with bounds on size and time and checks the reply's shape (`Judgement`).
"""

from __future__ import annotations

import atexit
import json
import math
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .verifier import Criterion

MAX_REQUEST_BYTES = 4 << 20  # a request: paths, parameters and an answer of at most MAX_ANSWER_CHARS
MAX_REPLY_BYTES = 1 << 20  # the child's reply: the criteria, details cut to MAX_DETAIL_CHARS
MAX_STATUS_BYTES = 4_096  # the server's word on how the child ended
MAX_CRITERIA = 1_000  # criteria in one reply
MAX_NAME_CHARS = 200
MAX_DETAIL_CHARS = 2_000  # a criterion's detail, cut by the child with a visible marker
_DETAIL_BOUND = MAX_DETAIL_CHARS + 100  # what the host keeps of one: the child's cut, marker included
SERVER_START_TIMEOUT = 60.0  # seconds the server may take to import the library
STATUS_GRACE = 10.0  # seconds past the wall-clock budget the host waits for the server's word

# One verification, as the server is told of it: wall-clock seconds, CPU seconds, bytes of address space, then
# the task's folder (the server loads each task once, so that a fork finds its modules compiled: ~3 ms each).
CONTROL = struct.Struct("!ddQ")
MAX_TASK_ROOT_BYTES = 4_096
FRAME = struct.Struct("!I")  # the length of a JSON frame on `job` and `status`
EXIT_UNREPORTED = 70  # the child could not even write why it failed
EXIT_CPU, EXIT_MEMORY = 71, 72  # ... because its CPU time or its memory ran out meanwhile


class VerifierUnavailable(RuntimeError):
    """The verification server could not be started or reached: an infrastructure failure, not the episode's
    doing and not the task's (the harness records the episode as errored)."""


@dataclass(frozen=True)
class Budget:
    """What one verification may spend: wall-clock seconds, CPU seconds and bytes of memory (address space
    beyond what the forked child starts with)."""

    wall_seconds: float
    cpu_seconds: float
    memory_bytes: int

    def sentence(self, kind: str) -> str:
        """How a verdict names the budget of `kind` ("time", "cpu", "memory", "reply") that was exceeded."""
        return {
            "time": f"ran past the verifier's time budget of {self.wall_seconds:g} s and was stopped",
            "cpu": f"ran past the verifier's CPU-time budget of {cpu_limit(self.cpu_seconds)} s and was stopped",
            "memory": f"needed more than the verifier's memory budget of {self.memory_bytes >> 20} MiB and was stopped",
            "reply": f"gave a reply larger than the verifier's reply budget of {MAX_REPLY_BYTES} bytes",
        }[kind]


@dataclass
class Judgement:
    """What became of one verification: exactly one of the first five fields is set.

    criteria: the verdict. raised: `Type: message` of what criteria() raised (or how its process died).
    budget: the sentence naming the budget it ran past. defect: the task's verifier is at fault whatever the
    episode did (its result is not a non-empty list of Criterion; its environment could not be rebuilt).
    failed: a step before criteria() failed (the episode could not be held still, its workspace not copied,
    the verifier's process not started), as the detail of a failed criterion. `unchanged`, filled in by the
    host where it matters, says whether the state is byte for byte the one the episode began from.
    """

    criteria: list[Criterion] | None = None
    raised: str | None = None
    budget: str | None = None
    defect: str | None = None
    failed: str | None = None
    unchanged: bool = False


def cpu_limit(seconds: float) -> int:
    return max(1, math.ceil(seconds))


# --- the host's side ----------------------------------------------------------------------------------------------
class _Server:
    """The fork server of this host process: a fresh interpreter, reached over a SEQPACKET control socket."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        library_parent = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(p for p in (library_parent, os.environ.get("PYTHONPATH", "")) if p)
        try:
            # A new session: a Ctrl-C meant for the host's terminal does not reach the server; it leaves when
            # the host does (its control socket closes).
            self.process = subprocess.Popen(
                [sys.executable, "-c", f"from progagent_lib.task.verify_server import serve; serve({theirs.fileno()})"],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                env={**os.environ, "PYTHONPATH": path},
                start_new_session=True,
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self.control, self.owner = ours, os.getpid()
        self._send = threading.Lock()
        ours.settimeout(SERVER_START_TIMEOUT)
        try:
            ready = ours.recv(16)
        except OSError:
            ready = b""
        ours.settimeout(None)
        if ready != b"ready":
            self.close()
            raise VerifierUnavailable(
                f"the verification server did not start (exit status {self.process.poll()}); "
                "its error is on the host's standard error"
            )

    def usable(self) -> bool:
        return self.owner == os.getpid() and self.process.poll() is None

    def submit(self, budget: Budget, task_root: str, job_fd: int, status_fd: int) -> None:
        root = os.fsencode(task_root)[:MAX_TASK_ROOT_BYTES]
        message = CONTROL.pack(budget.wall_seconds, budget.cpu_seconds, budget.memory_bytes) + root
        with self._send:
            socket.send_fds(self.control, [message], [job_fd, status_fd])

    def close(self) -> None:
        """The server leaves once every copy of its control socket is closed; a process forked from the host
        closes only its own copy (the server is its parent's)."""
        self.control.close()
        if self.owner != os.getpid():
            return
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


_server: _Server | None = None
_server_lock = threading.Lock()


def _running_server() -> _Server:
    global _server
    with _server_lock:
        if _server is None or not _server.usable():
            if _server is not None:
                _server.close()
            _server = _Server()
        return _server


@atexit.register
def _stop_server() -> None:
    if _server is not None:
        _server.close()


def run_in_child(request: dict, budget: Budget, deadline: float) -> Judgement:
    """Judge `request` (see `verify_server.judge`) in a child of the fork server, within `budget`'s CPU time and memory and by
    `deadline` (`time.monotonic()`; the budget's wall-clock seconds name it in a verdict).

    Raises VerifierUnavailable where the server cannot be started or reached, and OSError where the host cannot
    make the sockets (out of descriptors); everything the child does or fails to do becomes a Judgement.
    """
    wall = deadline - time.monotonic()
    if wall <= 0:
        return Judgement(budget=budget.sentence("time"))
    request = {**request, "deadline": deadline}
    payload = json.dumps(request, ensure_ascii=False).encode("utf-8", "surrogatepass")
    if len(payload) > MAX_REQUEST_BYTES:
        raise ValueError(f"a verification request of {len(payload)} bytes is past {MAX_REQUEST_BYTES}")
    job, job_far = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    status, status_far = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        try:
            _submit(
                Budget(wall, budget.cpu_seconds, budget.memory_bytes),
                request["task_root"],
                job_far.fileno(),
                status_far.fileno(),
            )
        finally:
            job_far.close()
            status_far.close()
        wait_until = deadline + STATUS_GRACE
        job.settimeout(wall + STATUS_GRACE)
        try:
            job.sendall(FRAME.pack(len(payload)) + payload)
            job.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the child is gone already: the server says how it ended
        reply, said = _collect(job, status, wait_until)
    finally:
        job.close()
        status.close()
    return _judgement(reply, said, budget)


def _submit(budget: Budget, task_root: str, job_fd: int, status_fd: int) -> None:
    for attempt in (1, 2):  # a server that died since its last use is started once more
        server = _running_server()
        try:
            server.submit(budget, task_root, job_fd, status_fd)
            return
        except (BrokenPipeError, ConnectionResetError) as exc:
            if attempt == 2:
                raise VerifierUnavailable(f"the verification server went away: {exc}") from exc


def _collect(job: socket.socket, status: socket.socket, wait_until: float) -> tuple[bytes | None, bytes | None]:
    """The child's reply and the server's word on how it ended, read side by side (a reply larger than a socket's
    buffer must be drained while the child writes it), each up to its bound, until both have ended or time is up.

    A reply past its bound comes back as None (reading stops there, and the child's next write fails); the
    server's word is None where it did not come in time.
    """
    sockets = {job.fileno(): job, status.fileno(): status}
    buffers = {fd: bytearray() for fd in sockets}
    limits = {job.fileno(): FRAME.size + MAX_REPLY_BYTES, status.fileno(): MAX_STATUS_BYTES}
    poller = select.poll()  # not select(): a busy host's descriptors may be numbered past 1024
    for fd in sockets:
        poller.register(fd, select.POLLIN)
    reading, over = set(sockets), set()
    while reading and time.monotonic() < wait_until:
        for fd, _ in poller.poll(max(0.0, wait_until - time.monotonic()) * 1000):
            try:
                chunk = sockets[fd].recv(1 << 16)
            except OSError:  # reset by a writer that died: what came before is all there is
                chunk = b""
            buffers[fd] += chunk
            if chunk and len(buffers[fd]) <= limits[fd]:
                continue
            if chunk:
                over.add(fd)
                sockets[fd].shutdown(socket.SHUT_RD)
            poller.unregister(fd)
            reading.discard(fd)
    reply = None if job.fileno() in over else bytes(buffers[job.fileno()])
    ended = status.fileno() not in reading and status.fileno() not in over
    return reply, bytes(buffers[status.fileno()]) if ended else None


def read_frame(data: bytes | None) -> Any:
    """The JSON value in one length-prefixed frame, or None for anything else (cut short, not JSON)."""
    if not data or len(data) < FRAME.size:
        return None
    (size,) = FRAME.unpack_from(data)
    if size != len(data) - FRAME.size:
        return None
    try:
        return json.loads(data[FRAME.size :].decode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError):
        return None


def _judgement(reply_bytes: bytes | None, status_bytes: bytes | None, budget: Budget) -> Judgement:
    if reply_bytes is None:
        return Judgement(budget=budget.sentence("reply"))
    reply, status = read_frame(reply_bytes), read_frame(status_bytes)
    if isinstance(reply, dict) and len(reply) == 1:
        ((kind, value),) = reply.items()
        if kind == "criteria":
            criteria = _criteria(value)
            return (
                Judgement(criteria=criteria)
                if criteria is not None
                else Judgement(raised="the verifier's reply did not hold a list of criteria")
            )
        if kind == "budget" and value in ("time", "cpu", "memory", "reply"):
            return Judgement(budget=budget.sentence(value))
        if kind in ("raised", "defect") and isinstance(value, str):
            detail = value[:_DETAIL_BOUND]
            return Judgement(raised=detail) if kind == "raised" else Judgement(defect=detail)
    return _ended_without_a_verdict(status, budget)


def _ended_without_a_verdict(status: Any, budget: Budget) -> Judgement:
    """The child gave no (readable) reply: the server's word says why."""
    if not isinstance(status, dict):  # the server did not answer in time (or is gone)
        return Judgement(budget=budget.sentence("time"))
    if status.get("killed") == "time":
        return Judgement(budget=budget.sentence("time"))
    if "error" in status:
        raise VerifierUnavailable(f"the verification server could not start a child: {str(status['error'])[:500]}")
    code = status.get("exit")
    if code in (-signal.SIGXCPU, -signal.SIGKILL, EXIT_CPU):  # the soft, then the hard RLIMIT_CPU
        return Judgement(budget=budget.sentence("cpu"))
    if code == EXIT_MEMORY:
        return Judgement(budget=budget.sentence("memory"))
    how = (
        f"signal {signal.Signals(-code).name}"
        if isinstance(code, int) and code < 0 and -code in signal.valid_signals()
        else f"exit status {code}"
    )
    return Judgement(raised=f"the verifier's process ended without a verdict ({how})")


def _criteria(value: Any) -> list[Criterion] | None:
    """The reply's criteria as Criterion records, or None where it is not the shape the child writes."""
    if not isinstance(value, list) or not 0 < len(value) <= MAX_CRITERIA:
        return None
    criteria = []
    for item in value:
        if not (
            isinstance(item, list)
            and len(item) == 4
            and isinstance(item[0], str)
            and isinstance(item[1], bool)
            and isinstance(item[2], (int, float))
            and not isinstance(item[2], bool)
            and isinstance(item[3], str)
        ):
            return None
        name, passed, weight, detail = item
        if not (math.isfinite(weight) and weight > 0):
            return None
        criteria.append(Criterion(name[:MAX_NAME_CHARS], passed, float(weight), detail[:_DETAIL_BOUND]))
    return criteria
