"""One confined IPython kernel: start it, run a cell with a deadline, interrupt it, restart it.

The kernel talks zmq over ipc sockets (unix socket files in the sandbox's `ipc/` folder): TCP
loopback does not exist inside the kernel's own network namespace.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import zmq
from jupyter_client.blocking import BlockingKernelClient

from .bridge import BridgeServer, ToolRouter, install_code
from .kernel_side import call_code, import_path_code
from .sandbox import Sandbox

if TYPE_CHECKING:
    from jupyter_client.connect import KernelConnectionInfo

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[@-Z\\-_]")
STARTUP_TIMEOUT = 30.0
INTERRUPT_GRACE = 2.0  # seconds a program has to stop after SIGINT before the next escalation
EXIT_GRACE = 1.0  # seconds from a kernel's death to its sandbox's waiter's exit (milliseconds, unless loaded)


_LIVE_SESSIONS: "weakref.WeakSet[KernelSession]" = weakref.WeakSet()


@atexit.register
def _close_live_sessions() -> None:
    """A host that exits without closing its runtimes must not leave kernels (or mounts) behind."""
    for session in list(_LIVE_SESSIONS):
        try:
            session.close()
        except Exception:  # noqa: BLE001 - at exit, one session that cannot close must not keep the others open
            pass


class KernelStartError(RuntimeError):
    """The kernel process did not come up; the message includes its log."""


class IOPubCut(Exception):
    """The host's iopub connection to the kernel dropped: the kernel died, or it sent an oversized message."""


class KernelProtocolError(RuntimeError):
    """The kernel sent a Jupyter message the host cannot read: it is treated as dead and restarted.

    The kernel holds the connection key, so it can write anything into its own sockets; the host
    never trusts a message's shape.
    """


MAX_ENAME_CHARS = 200
# What the host's zmq sockets accept from a kernel. The kernel-side guard keeps an honest program's
# messages far below these (its prints, its last value and its traceback are bounded there); a larger
# message can only be forged, and zmq drops the connection that carries it before reading it whole.
MAX_MESSAGE_BYTES = 8 << 20
IOPUB_QUEUE = 32  # messages held for the host while it does not read (zmq RCVHWM): memory <= 32 x 8 MiB
PROGRAM_MESSAGE_BYTES = 64 << 20  # bytes of iopub messages one program (or the pause before it) may send
# Messages of no running program. ipykernel's iopub socket drops what it sends once 1000 messages wait for
# the host (zmq's SNDHWM), and a thread left running by an earlier program can fill it so: the running
# program's own output is then lost, or its `idle` status (the host waited for it until the deadline).
# Every such loss comes after ~1000 messages of no running program, which the host reads; an honest kernel
# sends a handful (setup cells' status, a subscription's welcome). More than this many in one program:
# a flood, and the kernel is restarted.
STRAY_MESSAGES = 256
DELIMITER = b"<IDS|MSG>"
SEND_TIMEOUT_MS = 5000

_host_context: zmq.Context | None = None


def host_context() -> zmq.Context:
    """One zmq context for every kernel client of this host, whose sockets carry the bounds above."""
    global _host_context
    if _host_context is None or _host_context.closed:
        context = zmq.Context()
        context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
        context.setsockopt(zmq.RCVHWM, IOPUB_QUEUE)
        # A kernel that forged an oversized message has lost its connection and takes no more requests;
        # a send must then fail (and the kernel be restarted), not block for ever.
        context.setsockopt(zmq.SNDTIMEO, SEND_TIMEOUT_MS)
        _host_context = context
    return _host_context


OVERSIZED = f"a message over the host's {MAX_MESSAGE_BYTES >> 20} MiB bound, which cut the kernel's output channel"
STRAYS = (
    f"more than {STRAY_MESSAGES} messages of no running program while this one ran, enough to crowd out its own output"
)


class IOPubReader:
    """Reads a kernel's iopub socket with budgets, decoding only the messages of one program.

    A message whose parent header does not name the program is dropped on its raw bytes, before its
    signature is checked or its JSON parsed: a thread left running by an earlier program (or a forger)
    can flood the socket, and decoding every message of the flood is what made the next program late.

    A message over MAX_MESSAGE_BYTES never arrives at all: zmq drops the connection that carries it, and
    every message the kernel sends until the host has reconnected is lost with it, the next program's
    `idle` status among them (the host then waited for it until the program's deadline). The socket's
    monitor reports each disconnect; only a kernel that died or forged such a message causes one.
    """

    def __init__(self, client: BlockingKernelClient):
        self.socket = client.iopub_channel.socket
        self.session = client.session
        self.monitor = self.socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)
        self.poller = zmq.Poller()
        self.poller.register(self.socket, zmq.POLLIN)
        self.poller.register(self.monitor, zmq.POLLIN)
        self.disconnected = False
        self.follow("")

    def close(self) -> None:
        """Before the client closes the iopub socket: the monitor is a socket of its own."""
        try:
            self.socket.disable_monitor()
        except zmq.ZMQError:
            pass
        self.monitor.close(linger=0)

    def connection_lost(self) -> bool:
        """Whether the kernel's output channel has dropped since it started (it stays so: restart the kernel)."""
        while not self.disconnected:
            try:
                self.monitor.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                break
            self.disconnected = True  # the monitor reports disconnects only
        return self.disconnected

    def drain(self, budget: int = PROGRAM_MESSAGE_BYTES) -> int:
        """Discard what arrived while no program ran (undecoded); raise if it is more than `budget` bytes."""
        used = 0
        while True:
            try:
                frames = self.socket.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return used
            used += sum(len(frame) for frame in frames)
            if used > budget:
                raise KernelProtocolError(f"more than {budget >> 20} MiB of messages between two programs")

    def follow(self, msg_id: str) -> None:
        """Read program `msg_id`'s messages from now on, with fresh budgets."""
        self.wanted, self.spent, self.strays = msg_id.encode(), 0, 0

    def get(self, timeout: float) -> dict | None:
        """The next message of the program followed, or None for a message of anyone else (raises queue.Empty)."""
        ready = dict(self.poller.poll(int(timeout * 1000)))
        if self.monitor in ready and self.connection_lost():
            raise IOPubCut
        if self.socket not in ready:
            raise queue.Empty
        frames = self.socket.recv_multipart()
        self.spent += sum(len(frame) for frame in frames)
        if self.spent > PROGRAM_MESSAGE_BYTES:
            raise KernelProtocolError(f"more than {PROGRAM_MESSAGE_BYTES >> 20} MiB of messages in one program")
        try:
            start = frames.index(DELIMITER) + 1
        except ValueError:
            raise KernelProtocolError("a message without the Jupyter delimiter") from None
        if len(frames) < start + 5:
            raise KernelProtocolError("a message with too few frames")
        if self.wanted not in frames[start + 2]:  # the parent header's raw JSON: not this program's message
            self.strays += 1
            if self.strays > STRAY_MESSAGES:
                raise KernelProtocolError(STRAYS)
            return None
        try:
            msg = self.session.deserialize(frames[start:])
        except Exception as exc:  # noqa: BLE001 - the parser's errors on bytes the kernel chose
            raise KernelProtocolError(f"unreadable message ({type(exc).__name__})") from None
        return _checked(msg)


def _read_message(get, timeout: float) -> dict:
    """One message from a channel, checked for the shape the host relies on.

    Raises queue.Empty when none came, KernelProtocolError when what came cannot be used.
    """
    try:
        msg = get(timeout=timeout)
    except queue.Empty:
        raise
    except Exception as exc:  # noqa: BLE001 - the message parser's errors on bytes the kernel chose
        raise KernelProtocolError(f"unreadable message ({type(exc).__name__})") from None
    return _checked(msg)


def _checked(msg: object) -> dict:
    if (
        not isinstance(msg, dict)
        or not isinstance(msg.get("parent_header"), dict)
        or not isinstance(msg.get("msg_type"), str)
        or not isinstance(msg.get("content"), dict)
    ):
        raise KernelProtocolError("a message without the Jupyter shape")
    return msg


def _text(value: object, limit: int) -> str:
    text = value if isinstance(value, str) else ("" if value is None else repr(value)[:limit])
    if len(text) > limit:
        text = f"{text[: limit // 2]}\n[... {len(text) - 2 * (limit // 2)} characters cut ...]\n{text[-(limit // 2) :]}"
    return text


def bounded_error(content: dict, limit: int) -> dict:
    """An `error` message's fields, each bounded: a program can raise an exception with any text."""
    lines = content.get("traceback")
    lines = lines[-200:] if isinstance(lines, list) else []
    traceback: list[str] = []
    used = 0
    for line in reversed(lines):  # the last frames matter most
        line = strip_ansi(_text(line, limit))
        if used + len(line) > limit:
            break
        traceback.insert(0, line)
        used += len(line)
    return {
        "ename": _text(content.get("ename", ""), MAX_ENAME_CHARS),
        "evalue": _text(content.get("evalue", ""), limit),
        "traceback": traceback,
    }


def _collect(msg: dict, output: BoundedText, outcome: CellOutcome) -> bool:
    """Add one message of the running program to its output or outcome; True for its final `idle` status."""
    kind, content = msg["msg_type"], msg["content"]
    if kind == "stream":
        text = content.get("text")
        if isinstance(text, str):
            output.add(text)
    elif kind in ("execute_result", "display_data"):
        data = content.get("data")
        text = data.get("text/plain") if isinstance(data, dict) else None
        if isinstance(text, str):
            output.add(text + "\n")
    elif kind == "error":
        outcome.error = bounded_error(content, output.limit)
    return kind == "status" and content.get("execution_state") == "idle"


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text)


class BoundedText:
    """Keeps the first and the last `limit // 2` characters of an unbounded stream, and its full length."""

    def __init__(self, limit: int):
        self.limit = limit
        self.head: list[str] = []
        self.head_len = 0
        self.tail = ""
        self.total = 0

    def add(self, text: str) -> None:
        self.total += len(text)
        half = self.limit - self.limit // 2
        if self.head_len < half:
            take = text[: half - self.head_len]
            self.head.append(take)
            self.head_len += len(take)
            text = text[len(take) :]
        if text:
            self.tail = (self.tail + text)[-(self.limit // 2) :] if self.limit // 2 else ""

    @property
    def truncated(self) -> bool:
        return self.total > self.limit

    def text(self) -> str:
        head = "".join(self.head)
        if not self.truncated:
            return head + self.tail
        dropped = self.total - len(head) - len(self.tail)
        return (
            f"{head}\n[... {dropped} characters of output cut; print less, e.g. a summary or a slice ...]\n{self.tail}"
        )


@dataclass
class CellOutcome:
    """What one cell produced, before the runtime turns it into an ExecutionResult."""

    output: str = ""
    truncated: bool = False
    error: dict | None = None  # ename, evalue, traceback (list of lines, ANSI stripped)
    timed_out: bool = False
    kernel_died: bool = False  # while this program ran
    restarted_before: bool = False  # the kernel had died since the last program; restarted first
    protocol_error: str | None = None  # the kernel sent unreadable messages and was restarted
    seconds: float = 0.0


@dataclass(eq=False)  # identity semantics: sessions live in a WeakSet
class KernelSession:
    """A sandboxed ipykernel with its bridge. `start()` blocks until the kernel answers."""

    sandbox: Sandbox
    python: str = field(default_factory=lambda: sys.executable)
    router: ToolRouter | None = None

    def __post_init__(self) -> None:
        _LIVE_SESSIONS.add(self)
        self.process: subprocess.Popen | None = None
        self.client: BlockingKernelClient | None = None
        self.iopub: IOPubReader | None = None
        self.bridge: BridgeServer | None = None
        self._pending: list[str] = []  # silent cells sent but whose replies are not read yet
        self._dead_calls: list = []
        self.extra_setup = ""  # code every (re)started kernel runs before the first program
        self._main_pids: tuple[int, ...] = ()
        self._shell_broken = False  # a reply that never came: the channel lost its connection
        self.generation = 0

    # --- lifecycle -------------------------------------------------------------------------------------
    def start(self) -> None:
        self.generation += 1
        self._shell_broken = False
        for stale in self.sandbox.ipc.iterdir():
            stale.unlink()
        info: KernelConnectionInfo = {
            "transport": "ipc",
            "ip": str(self.sandbox.ipc / "k"),
            "shell_port": 1,
            "iopub_port": 2,
            "stdin_port": 3,
            "control_port": 4,
            "hb_port": 5,
            "key": secrets.token_hex(32),
            "signature_scheme": "hmac-sha256",
            "kernel_name": "",
        }
        connection_file = self.sandbox.ipc / "kernel.json"
        connection_file.write_text(json.dumps(info))
        self.bridge = bridge = BridgeServer(self.router)
        kernel_fd = bridge.kernel_fd
        argv = [
            self.python,
            "-I",
            "-m",
            "ipykernel_launcher",
            "-f",
            str(connection_file),
            "--HistoryManager.enabled=False",
            "--IPKernelApp.log_level=ERROR",
            "--colors=NoColor",
            "--InteractiveShell.xmode=Plain",
            "--InteractiveShell.cache_size=0",
            "--InteractiveShell.banner1=''",
        ]
        # Something must end the kernel when this host process goes away: confined, the sandbox's waiter
        # does (`kernel_side/launcher.py`; ipykernel's own poller would take the sandbox's init for a lost parent).
        env = self.sandbox.environment(self.sandbox.confinement.kernel_environment())
        self.process = process = self.sandbox.popen(
            argv,
            env=env,
            pass_fds=(kernel_fd,),
            deny_unix_sockets=False,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        # The kernel's own stdout/stderr (start-up errors, and an echo of what programs write to
        # file descriptors 1 and 2) is drained at once, keeping only its end: a full pipe would block
        # the kernel, a file would grow without bound.
        self._log: deque[bytes] = deque(maxlen=64)
        threading.Thread(target=_drain, args=(process.stdout, self._log), name="ptc-kernel-log", daemon=True).start()
        bridge.release_kernel_end()
        client = BlockingKernelClient(context=host_context())
        client.load_connection_info(info)
        client.start_channels()
        self.client = client
        self.iopub = IOPubReader(client)
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            if process.poll() is not None:
                self._stop_client()
                raise KernelStartError(
                    f"the kernel exited with code {process.returncode} during start-up:\n{self.log_tail()}"
                )
            try:
                client.wait_for_ready(timeout=0.5)
                break
            except RuntimeError:
                if time.monotonic() > deadline:
                    self.kill()
                    raise KernelStartError(
                        f"the kernel did not answer within {STARTUP_TIMEOUT:.0f} s:\n{self.log_tail()}"
                    ) from None
        deny_unix_sockets = self.sandbox.confinement.kernel_deny_unix_sockets()
        self.send_silent(
            import_path_code(self.sandbox.lib) + install_code(kernel_fd, deny_unix_sockets) + self.extra_setup
        )

    def log_tail(self, chars: int = 3000) -> str:
        time.sleep(0.05)  # let the drain thread catch the last words of a kernel that just exited
        return b"".join(self._log).decode(errors="replace")[-chars:] or "(the kernel wrote nothing)"

    def bind(self, router: ToolRouter) -> None:
        self.router = router
        if self.bridge is not None:
            self.bridge.router = router

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def _stop_client(self) -> None:
        if self.iopub is not None:
            self.iopub.close()
            self.iopub = None
        if self.client is not None:
            try:
                self.client.stop_channels()
            except Exception:  # noqa: BLE001 - channels of a dead kernel may fail to stop; the client is dropped
                pass
            self.client = None

    def kill(self) -> None:
        """Kill the kernel and everything it started; the sandbox's folders stay."""
        self._stop_client()
        self.sandbox.kill_all()
        if self.process is not None:
            if self.process.poll() is None:
                try:
                    os.killpg(self.process.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            try:
                self.process.wait(timeout=5)
            except Exception:  # noqa: BLE001 - killed above; a wait that fails leaves nothing more to do
                pass
        if self.bridge is not None:
            self._dead_calls.extend(self.bridge.take_calls())
            self.bridge.close()
            self.bridge = None
        self._pending.clear()

    def restart(self) -> None:
        self.kill()
        self.start()
        assert self.bridge is not None  # start() made one
        self.bridge.open_gate()  # a restart happens while a program runs; run_cell closes it

    def close(self) -> None:
        self.kill()
        self.sandbox.cleanup()
        _LIVE_SESSIONS.discard(self)

    # --- running code --------------------------------------------------------------------------------
    def send_silent(self, code: str) -> None:
        """Queue a setup cell without waiting; its reply is checked before the next real cell runs."""
        self._pending.append(self._execute(code, silent=True, store_history=False, allow_stdin=False))

    def _execute(self, code: str, **kwargs) -> str:
        assert self.client is not None, "the kernel is not started"
        try:
            return self.client.execute(code, **kwargs)
        except zmq.Again:
            self._shell_broken = True
            raise KernelProtocolError("the kernel's shell channel takes no more requests") from None

    def _drain_pending(self, deadline: float) -> None:
        while self._pending:
            reply = self._shell_reply(self._pending[0], deadline)
            self._pending.pop(0)
            if reply is None:
                raise KernelStartError(f"a setup cell got no reply:\n{self.log_tail()}")
            if reply["content"].get("status") != "ok":
                content = reply["content"]
                raise KernelStartError(f"a setup cell failed: {content.get('ename')}: {content.get('evalue')}")

    def _shell_reply(self, msg_id: str, deadline: float) -> dict | None:
        assert self.client is not None, "the kernel is not started"
        while time.monotonic() < deadline and self.alive():
            try:
                msg = _read_message(self.client.get_shell_msg, max(0.01, min(0.5, deadline - time.monotonic())))
            except queue.Empty:
                continue
            if msg["parent_header"].get("msg_id") == msg_id:
                return msg
        return None

    def run_cell(self, code: str, timeout: float, max_output_chars: int) -> CellOutcome:
        """Run `code`; on timeout interrupt it (escalating to a restart), keeping state when possible.

        Tool calls are open from the start until the program's deadline; a kernel whose messages
        cannot be read is restarted (its state is lost, and the outcome says so).
        """
        started = time.monotonic()
        if self.bridge is not None:
            self.bridge.open_gate(started + timeout)
        try:
            try:
                return self._run_cell(code, timeout, max_output_chars, started)
            except KernelProtocolError as exc:
                self.restart()
                outcome = CellOutcome(kernel_died=True, protocol_error=str(exc), seconds=time.monotonic() - started)
                outcome.error = {
                    "ename": "KernelProtocolError",
                    "traceback": [],
                    "evalue": f"the kernel sent messages the host could not read ({exc}); it was restarted",
                }
                return outcome
        finally:
            if self.bridge is not None:
                self.bridge.close_gate()

    def take_calls(self) -> list:
        """Tool calls since the last take, including those of a kernel that died meanwhile."""
        calls, self._dead_calls = self._dead_calls, []
        return calls + (self.bridge.take_calls() if self.bridge is not None else [])

    @property
    def calls_not_recorded(self) -> int:
        """Calls of the current program beyond the bridge's record bound (counted, not kept)."""
        return self.bridge.calls_not_recorded if self.bridge is not None else 0

    def _run_cell(self, code: str, timeout: float, max_output_chars: int, started: float) -> CellOutcome:
        restarted_for = self._ready_for_program(started + max(timeout, 30.0))
        msg_id = self._execute(code, store_history=True, allow_stdin=False, stop_on_error=False)
        output = BoundedText(max_output_chars)
        outcome = CellOutcome()
        self._follow(msg_id, timeout, output, outcome)
        if not outcome.kernel_died:
            if self._shell_reply(msg_id, time.monotonic() + 5.0) is None and self.alive():
                self._shell_broken = True  # e.g. a reply over MAX_MESSAGE_BYTES: zmq dropped the connection
            self.reap_strays()
        outcome.restarted_before = restarted_for is not None
        outcome.output = strip_ansi(output.text())
        if restarted_for:
            note = (
                "[the kernel was restarted before this program ran: what an earlier program left running sent "
                f"{restarted_for}]"
            )
            outcome.output += note if outcome.output.endswith("\n") or not outcome.output else "\n" + note
        outcome.truncated = output.truncated
        outcome.seconds = time.monotonic() - started
        return outcome

    def _follow(self, msg_id: str, timeout: float, output: BoundedText, outcome: CellOutcome) -> None:
        """Read program `msg_id`'s messages until its `idle` status, or its deadline (interrupt, then restart)."""
        iopub = self.iopub  # the same reader until a restart, after which this returns
        assert iopub is not None, "the kernel is not started"
        iopub.follow(msg_id)
        deadline = time.monotonic() + timeout  # the program's own time, not the set-up's
        if self.bridge is not None:
            self.bridge.open_gate(deadline)  # host-side tool calls end by the program's deadline too
        interrupts = 0
        while True:
            now = time.monotonic()
            if now >= deadline:
                if interrupts == 0:
                    outcome.timed_out = True
                if interrupts < 2 and self.alive():
                    self.interrupt()
                    interrupts += 1
                    deadline = now + INTERRUPT_GRACE
                    continue
                # The program ignores interrupts (or is stuck in C code): the state cannot be kept.
                self.restart()
                outcome.kernel_died = True
                return
            try:
                msg = iopub.get(min(0.25, deadline - now))
            except queue.Empty:
                if not self.alive():
                    self.restart()
                    outcome.kernel_died = True
                    return
                continue
            except IOPubCut:
                if not self._exits_within(EXIT_GRACE):
                    raise KernelProtocolError(OVERSIZED) from None
                self.restart()
                outcome.kernel_died = True
                return
            if msg is not None and msg["parent_header"].get("msg_id") == msg_id and _collect(msg, output, outcome):
                return

    def _ready_for_program(self, deadline: float) -> str | None:
        """Restart the kernel first where it cannot take a program.

        Returns None if it was not restarted, else why: the flood it sent, or "" where the observation
        needs no reason (it had died, or a channel of it broke).
        """
        why = self._why_restart()
        if why is None:
            self.reap_strays()  # started by a thread an earlier program left running
            self._drain_pending(deadline)
            why = self._pause_flood()
        if why is not None:
            self.restart()
            self._drain_pending(deadline)
            assert self.iopub is not None  # restart() made one
            self.iopub.drain()
        return why

    def _why_restart(self) -> str | None:
        # Killed (e.g. by a thread of an earlier program), or a tool channel the kernel put out of step,
        # which cannot carry calls again: start afresh, as before.
        if not self.alive() or (self.bridge is not None and self.bridge.broken is not None) or self._shell_broken:
            return ""
        return self._pause_flood()  # before waiting for setup cells' replies, which a flooding kernel delays

    def _pause_flood(self) -> str | None:
        """What the kernel sent while no program ran, if it calls for a restart; the rest is dropped undecoded."""
        iopub = self.iopub
        assert iopub is not None, "the kernel is not started"
        try:
            iopub.drain()
        except KernelProtocolError as exc:
            return str(exc)
        if not iopub.connection_lost():
            return None
        return "" if self._exits_within(EXIT_GRACE) else OVERSIZED  # a kernel that died drops it too

    def _exits_within(self, seconds: float) -> bool:
        assert self.process is not None, "the kernel is not started"
        try:
            self.process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return False
        return True

    def main_pids(self) -> tuple[int, ...]:
        """Host pids of the kernel's sandbox that are not strays: the launcher's waiter, pid 1, the kernel."""
        if self.process is None:
            return ()
        confinement = self.sandbox.confinement
        if len(self._main_pids) < confinement.main_pid_count or self._main_pids[0] != self.process.pid:
            self._main_pids = confinement.main_pids(self.process)
        return self._main_pids

    @property
    def kernel_pid(self) -> int | None:
        """The kernel's own host pid (the waiter forwards signals to it; this is what uses memory)."""
        pids = self.main_pids()
        return pids[-1] if len(pids) == self.sandbox.confinement.main_pid_count else None

    def interrupt(self) -> None:
        assert self.process is not None, "the kernel is not started"
        try:
            os.kill(self.process.pid, signal.SIGINT)
        except ProcessLookupError:
            pass

    def reap_strays(self) -> None:
        """A program may not leave processes behind (fork bombs, forgotten servers): kill them."""
        if self.process is not None:
            keep = self.main_pids()
            if self.sandbox.stray_pids(keep):
                self.sandbox.kill_all(except_pids=keep)
                # Killed children stay zombies, counted against the process limit, until their
                # parent waits for them; the kernel's own children are reaped by this cell.
                self.send_silent(call_code("reaper", "reap_children"))


def _drain(stream, log: deque) -> None:
    try:
        while chunk := stream.read1(65536):
            log.append(chunk[-4096:])
    except (OSError, ValueError):
        pass
    finally:
        stream.close()
