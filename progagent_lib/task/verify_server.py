"""Verification as untrusted work, the server's side: the fork server and each verification's child.

The server (`serve`) is a fresh interpreter that the host starts once (`verify_worker`), single-threaded, with the
library, the modules task verifiers import and each task it has been asked about loaded, so that a fork finds them
compiled. Per request it forks a child, kills it once past its wall-clock budget, reaps it and writes how it ended.
The child sets its limits (RLIMIT_CPU with SIGXCPU as an exception, then the hard limit; RLIMIT_AS; no core file),
rebuilds the task's environment on the episode's database opened read-only and the frozen workspace copy, runs
criteria() and writes a bounded JSON reply. The protocol's framing and bounds are `verify_worker`'s.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import select
import signal
import socket
import time
from dataclasses import dataclass
from typing import Any, NoReturn

from .tool_replies import bounded_text
from .verification import describe_exception
from .task import TASK_FILES, load_task
from .verifier import Criterion
from .verify_worker import (
    CONTROL,
    EXIT_CPU,
    EXIT_MEMORY,
    EXIT_UNREPORTED,
    FRAME,
    MAX_CRITERIA,
    MAX_DETAIL_CHARS,
    MAX_NAME_CHARS,
    MAX_REPLY_BYTES,
    MAX_REQUEST_BYTES,
    MAX_TASK_ROOT_BYTES,
    Budget,
    cpu_limit,
    read_frame,
)

PR_SET_PDEATHSIG = 1
# What the server imports once, so that a fork finds it loaded: the library and what task verifiers import.
PRELOAD = (
    "progagent_lib",
    "progagent_lib.task",
    "csv",
    "io",
    "json",
    "re",
    "math",
    "datetime",
    "statistics",
    "collections",
    "decimal",
    "fnmatch",
    "sqlite3",
    "typing",
)


@dataclass
class _Child:
    pid: int
    pidfd: int
    status_fd: int
    deadline: float
    killed: str | None = None


def serve(control_fd: int) -> None:
    """The fork server's loop: one child per request on `control_fd`, until the host closes it."""
    control = socket.socket(fileno=control_fd)
    for name in PRELOAD:
        __import__(name)
    control.send(b"ready")
    children: dict[int, _Child] = {}  # by pidfd
    poller = select.poll()
    poller.register(control.fileno(), select.POLLIN)
    try:
        while True:
            soonest = min((c.deadline for c in children.values() if c.killed is None), default=None)
            wait = None if soonest is None else max(0.0, soonest - time.monotonic()) * 1000
            for fd, _ in poller.poll(wait):
                if fd == control.fileno():
                    if not _accept(control, children, poller):
                        return  # the host closed its end: it is gone
                elif fd in children:
                    poller.unregister(fd)
                    _reap(children.pop(fd))
            _kill_overdue(children)
    finally:
        for child in children.values():
            try:
                signal.pidfd_send_signal(child.pidfd, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _accept(control: socket.socket, children: dict[int, _Child], poller: Any) -> bool:
    try:
        message, fds, _, _ = socket.recv_fds(control, CONTROL.size + MAX_TASK_ROOT_BYTES, 2)
    except OSError:
        return False
    if not message:
        return False
    if len(message) < CONTROL.size or len(fds) != 2:
        for fd in fds:
            os.close(fd)
        return True
    wall, cpu, memory = CONTROL.unpack_from(message)
    _preload_task(os.fsdecode(message[CONTROL.size :]))
    job_fd, status_fd = fds
    server = os.getpid()
    try:
        pid = os.fork()
    except OSError as exc:
        _write_frame(status_fd, {"error": f"fork failed: {exc}"})
        os.close(job_fd)
        os.close(status_fd)
        return True
    if pid == 0:
        _child(job_fd, Budget(wall, cpu, memory), server)
    os.close(job_fd)  # the host sees the reply end when the child's copy closes: it exits
    pidfd = os.pidfd_open(pid)
    children[pidfd] = _Child(pid, pidfd, status_fd, time.monotonic() + wall)
    poller.register(pidfd, select.POLLIN)
    return True


# Tasks the server has loaded, by folder, with the (mtime, size) of their files then: a fork finds them ready.
_tasks: dict[str, tuple[tuple, Any]] = {}


def _task_files_stamp(root: str) -> tuple:
    stamp = []
    for name in TASK_FILES:
        info = os.stat(os.path.join(root, name))
        stamp.append((info.st_mtime_ns, info.st_size))
    return tuple(stamp)


def _preload_task(root: str) -> None:
    """Load the task at `root` in the server, once per version of its files; any failure is left to the child,
    which loads the task itself and says what went wrong."""
    try:
        stamp = _task_files_stamp(root)
        if root not in _tasks or _tasks[root][0] != stamp:
            task = load_task(root)
            task.env_class  # noqa: B018 - environment.py compiled and run once, here
            _tasks[root] = (stamp, task)
    except Exception:  # noqa: BLE001 - a task that does not load is loaded again, and reported, by the request
        _tasks.pop(root, None)


def _reap(child: _Child) -> None:
    _, status = os.waitpid(child.pid, 0)
    said: dict[str, int | str] = {"exit": os.waitstatus_to_exitcode(status)}
    if child.killed:
        said["killed"] = child.killed
    try:
        _write_frame(child.status_fd, said)
    except OSError:
        pass  # the host stopped waiting
    os.close(child.status_fd)
    os.close(child.pidfd)


def _kill_overdue(children: dict[int, _Child]) -> None:
    now = time.monotonic()
    for child in children.values():
        if child.killed is None and now > child.deadline:
            signal.pidfd_send_signal(child.pidfd, signal.SIGKILL)
            child.killed = "time"


def _write_frame(fd: int, value: Any) -> None:
    data = json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")
    view = memoryview(FRAME.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


# --- the child ----------------------------------------------------------------------------------------------------
class _CpuBudgetSpent(BaseException):
    """Raised by SIGXCPU (the soft RLIMIT_CPU) where criteria() runs Python code; C code that never returns to
    the interpreter meets the hard limit (SIGKILL) a second later."""


def _child(job_fd: int, budget: Budget, server: int) -> NoReturn:
    """A fork of the server: judge one request and exit, whatever happens (it never returns to the server's loop)."""
    code = EXIT_UNREPORTED
    try:
        os.closerange(3, job_fd)  # the control socket, other children's pidfds and status sockets
        os.closerange(job_fd + 1, 2**31 - 1)
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # gone with the server ...
        if os.getppid() != server:  # ... or already gone before that was asked
            os._exit(code)
        _limit(budget)
        job = socket.socket(fileno=job_fd)
        reply = _encoded_reply(judge(_read_request(job)))
        job.sendall(FRAME.pack(len(reply)) + reply)
        code = 0
    except _CpuBudgetSpent:
        code = EXIT_CPU
    except MemoryError:
        code = EXIT_MEMORY
    except BaseException:  # noqa: BLE001 - the exit status says it: no verdict
        code = EXIT_UNREPORTED
    finally:
        os._exit(code)


def _limit(budget: Budget) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    cpu = cpu_limit(budget.cpu_seconds)
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    signal.signal(signal.SIGXCPU, _cpu_spent)
    with open("/proc/self/statm") as statm:  # the fork's own address space, before anything is judged
        mapped = int(statm.read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (mapped + budget.memory_bytes, mapped + budget.memory_bytes))


def _cpu_spent(signum: int, frame: Any) -> None:
    raise _CpuBudgetSpent()


def _read_request(job: socket.socket) -> dict:
    data = bytearray()
    while len(data) <= FRAME.size + MAX_REQUEST_BYTES:
        chunk = job.recv(1 << 16)
        if not chunk:
            break
        data += chunk
    request = read_frame(bytes(data))
    if not isinstance(request, dict):
        raise ValueError("the verification request is not a JSON object in one frame")
    return request


def judge(request: dict) -> dict:
    """Rebuild the task's environment on the episode's database (read-only) and its frozen workspace, and run
    criteria(answer). The reply is one of {"criteria": [[name, passed, weight, detail], ...]}, {"raised": ...},
    {"budget": "time" | "cpu" | "memory"} or {"defect": ...} (see Judgement)."""
    deadline = request["deadline"]
    try:
        env = _environment(request)
    except (MemoryError, _CpuBudgetSpent) as exc:
        return {"budget": "memory" if isinstance(exc, MemoryError) else "cpu"}
    except Exception as exc:  # noqa: BLE001 - the task's files, not the episode's state: a defect
        return {"defect": f"the verifier's environment could not be rebuilt in its process: {describe_exception(exc)}"}
    try:
        env._deadline = deadline  # the task's queries are stopped past it (the progress handler)
        criteria = env.run_criteria(request["answer"])
    except MemoryError:
        return {"budget": "memory"}
    except _CpuBudgetSpent:
        return {"budget": "cpu"}
    except Exception as exc:  # noqa: BLE001 - what the program wrote may break any parser
        return {"budget": "time"} if time.monotonic() > deadline else {"raised": describe_exception(exc)}
    if not isinstance(criteria, list) or not criteria or not all(isinstance(c, Criterion) for c in criteria):
        return {"defect": f"criteria() must return a non-empty list of Criterion, got {_short_repr(criteria)}"}
    if len(criteria) > MAX_CRITERIA:
        return {"defect": f"criteria() returned {len(criteria)} criteria, more than {MAX_CRITERIA}"}
    return {
        "criteria": [
            [
                str(c.name)[:MAX_NAME_CHARS],
                bool(c.passed),
                float(c.weight),
                bounded_text(str(c.detail), MAX_DETAIL_CHARS),
            ]
            for c in criteria
        ]
    }


def _environment(request: dict) -> Any:
    root = request["task_root"]
    loaded = _tasks.get(root)
    task = loaded[1] if loaded is not None and loaded[0] == _task_files_stamp(root) else load_task(root)
    env = task.env_class(request["db_path"], request["workspace"], task=task, workspace_quota=None, read_only=True)
    env.scale, env.seed, env.params = request["scale"], request["seed"], request["params"]
    env.instruction = request["instruction"]
    return env


def _short_repr(value: Any) -> str:
    try:
        return repr(value)[:200]
    except Exception:  # noqa: BLE001 - a verifier's return value may have a __repr__ that raises anything
        return f"a {type(value).__name__}"


def _encoded_reply(reply: dict) -> bytes:
    data = json.dumps(reply, ensure_ascii=False).encode("utf-8", "surrogatepass")
    if len(data) > MAX_REPLY_BYTES:
        data = json.dumps({"budget": "reply"}).encode()
    return data
