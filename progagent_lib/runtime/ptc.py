"""`PTCRuntime`: one episode's persistent, confined Python kernel with the episode's tools inside it."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..task.closeable import Closeable
from . import kernel_side
from .bridge import PRELOAD_SPECS_CODE, BridgeCall, ToolRouter, output_guard_code
from .kernel import KernelSession, KernelStartError
from .sandbox import GiB, ProcessLimits, Sandbox, SandboxUnavailable, confinement_for
from .terminal import TerminalResult, clean_bounded, run_terminal

DEFAULT_MAX_OUTPUT_CHARS = 20_000
# With no output bound (max_output_chars=None) a program's whole output comes back, up to this ceiling: the kernel is
# untrusted, and what it prints must still fit the host's memory and one socket message (kernel.MAX_MESSAGE_BYTES,
# 8 MiB: the kernel's guard sends at most this many characters from the head and as many from the tail, which stay
# under it even where each is a 6-byte JSON escape).
UNBOUNDED_OUTPUT_CEILING = 500_000
NO_SPACE = "No space left on device"  # strerror(ENOSPC), in the OSError a write to a full filesystem raises
TRACEBACK_LINES = 12


@dataclass
class ErrorInfo:
    """An exception the program raised and did not catch."""

    name: str
    message: str
    traceback: str  # the last frames only, control characters removed or escaped (textsafe.clean_text)

    def __str__(self) -> str:
        return f"{self.name}: {self.message}"


@dataclass
class ExecutionResult:
    """What one program produced. `observation` is the text a model should see.

    Every text in it has been through `textsafe.clean_text` (and is cut again if escaping lengthened it past
    the runtime's `output_limit`): nothing a program prints can move a reader's cursor, reverse text or send a terminal
    command, here or in the trajectory that records it.
    """

    output: str
    error: ErrorInfo | None = None
    timed_out: bool = False
    truncated: bool = False
    tool_calls: list[BridgeCall] = field(default_factory=list)
    kernel_restarted: bool = False  # the kernel died or was killed: every variable is gone
    seconds: float = 0.0
    tool_calls_not_recorded: int = 0  # calls beyond the bridge's bound of records per program
    storage_note: str = ""  # set when a write failed because the sandbox's bounded storage is full

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out and not self.kernel_restarted

    @property
    def observation(self) -> str:
        parts = [self.output.rstrip("\n")] if self.output.strip() else []
        if self.error is not None:
            parts.append(self.error.traceback or str(self.error))
        if self.timed_out:
            parts.append(f"[the program timed out after {self.seconds:.0f} s and was interrupted]")
        if self.kernel_restarted:
            parts.append("[the kernel was restarted: all variables and imports from earlier programs are lost]")
        if self.storage_note:
            parts.append(self.storage_note)
        return "\n".join(parts) if parts else "[no output]"


def _short_traceback(error: dict, limit: int) -> str:
    text = "\n".join(error.get("traceback") or [])
    # Frames of the kernel-side modules (the tools proxy) and of IPython's own wrappers say nothing about the program's bug.
    blocks = [b for b in text.split("\n\n") if kernel_side.FRAMES not in b and "site-packages/IPython/" not in b]
    lines = "\n".join(b for b in blocks if b.strip()).splitlines()
    if len(lines) > TRACEBACK_LINES:
        lines = ["Traceback (most recent call last, shortened):", *lines[-TRACEBACK_LINES:]]
    text = "\n".join(lines) or f"{error.get('ename')}: {error.get('evalue')}"
    if len(text) > limit:  # one line can carry the whole message
        text = f"{text[: limit // 2]}\n[... {len(text) - 2 * (limit // 2)} characters of the error cut ...]\n{text[-(limit // 2) :]}"
    return text


class PTCRuntime(Closeable):
    """A confined persistent IPython kernel bound to `env`'s workspace, with `tools` inside it.

    Args:
        env: the episode's Environment (tools run on the host against it; None for tools from
            `extra_tool_sources` / `mcp_servers` only, with `workspace` given).
        error_mode: "is_error" (failing tools raise ToolError in the kernel), "off" (the failure text
            comes back as an ordinary value), "detect" (also raise on error-shaped results).
        timeout: default seconds per program; on expiry the program is interrupted, state is kept.
        max_output_chars: bound of the output returned per program (head and tail are kept), the harness's
            `output_bound`; None: the whole output, up to UNBOUNDED_OUTPUT_CEILING. The one limit every cut of
            this runtime applies (`output_limit`): the kernel's guard, the host's reading, errors, the terminal.
        pool: a KernelPool to take a pre-started kernel from.
        mcp_servers: specs of MCP servers whose tools join `tools` (through MCPToolSource).
        extra_tool_sources: objects with `tool_specs` and `call(name, arguments) -> (result, is_error)`.
        unsafe_no_sandbox: run the kernel unconfined (only where the sandbox cannot be set up).
        memory_limit, cpu_limit, max_processes, file_size_limit: the sandbox's bounds.
    """

    def __init__(
        self,
        env: Any,
        error_mode: str = "is_error",
        timeout: float = 30.0,
        max_output_chars: int | None = DEFAULT_MAX_OUTPUT_CHARS,
        pool: Any = None,
        mcp_servers: Iterable[Any] = (),
        extra_tool_sources: Iterable[Any] = (),
        unsafe_no_sandbox: bool = False,
        memory_limit: int = 4 * GiB,
        cpu_limit: int = 3600,
        max_processes: int = 64,
        file_size_limit: int = 512 << 20,
        workspace: str | Path | None = None,
    ):
        self.env = env
        self.timeout = timeout
        if max_output_chars is not None and (
            isinstance(max_output_chars, bool) or not isinstance(max_output_chars, int) or max_output_chars < 1
        ):
            raise ValueError(f"max_output_chars must be characters >= 1 or None (no cut), got {max_output_chars!r}")
        self.max_output_chars = max_output_chars
        self.output_limit = UNBOUNDED_OUTPUT_CEILING if max_output_chars is None else max_output_chars
        self.unsafe_no_sandbox = unsafe_no_sandbox
        self.limits = ProcessLimits(
            memory_bytes=memory_limit, cpu_seconds=cpu_limit, file_bytes=file_size_limit, max_processes=max_processes
        )
        workspace = workspace if workspace is not None else getattr(env, "workspace", None)
        if workspace is None:
            raise ValueError("PTCRuntime needs a workspace: pass an Environment or workspace=PATH")
        self.workspace = Path(workspace).resolve()
        self._owned_sources = []
        try:
            for spec in mcp_servers:
                # Imported lazily: the MCP client is optional and lives in its own module.
                mcp_client = importlib.import_module(".mcp_client", __package__)
                self._owned_sources.append(mcp_client.MCPToolSource(spec))
            self.router = ToolRouter(env, [*extra_tool_sources, *self._owned_sources], error_mode)
            self.session = self._open_session(pool)
        except BaseException:
            for source in self._owned_sources:
                source.close()
            raise
        self.closed = False
        self._restart_pending = False

    @property
    def error_mode(self) -> str:
        return self.router.error_mode

    def _open_session(self, pool: Any) -> KernelSession:
        if pool is not None:
            if pool.unsafe_no_sandbox != self.unsafe_no_sandbox:
                raise ValueError(
                    f"the pool's unsafe_no_sandbox={pool.unsafe_no_sandbox} differs from this runtime's "
                    f"unsafe_no_sandbox={self.unsafe_no_sandbox}"
                )
            session = pool.acquire(self.workspace)
            session.bind(self.router)
        else:
            sandbox = Sandbox(
                workspace=self.workspace, limits=self.limits, confinement=confinement_for(self.unsafe_no_sandbox)
            )
            session = KernelSession(sandbox, router=self.router)
            try:
                session.start()
            except BaseException:
                session.close()
                raise
        self._prepare(session)
        return session

    def _prepare(self, session: KernelSession) -> None:
        """Code every (re)started kernel runs before the first program: tool docs, the output guard."""
        session.extra_setup = PRELOAD_SPECS_CODE + output_guard_code(self.output_limit)
        session.send_silent(session.extra_setup)

    # --- the public surface ------------------------------------------------------------------------------
    def execute(self, code: str, timeout: float | None = None) -> ExecutionResult:
        """Run one program in the episode's kernel; variables persist between calls."""
        if self.closed:
            raise RuntimeError("this PTCRuntime is closed; start a new one for a new episode")
        session, limit = self.session, self.output_limit
        try:
            outcome = session.run_cell(code, timeout if timeout is not None else self.timeout, limit)
        except KernelStartError:
            # The kernel died while a setup cell was pending, or cannot come back: start over once.
            session.restart()
            outcome = session.run_cell(code, timeout if timeout is not None else self.timeout, limit)
            outcome.restarted_before = True
        error = None
        if outcome.error is not None:  # its fields arrive bounded (kernel.bounded_error)
            name, message = (clean_bounded(outcome.error[key], limit)[0] for key in ("ename", "evalue"))
            error = ErrorInfo(name, message, clean_bounded(_short_traceback(outcome.error, limit), limit)[0])
        elif outcome.kernel_died and not outcome.timed_out:
            error = ErrorInfo(
                "KernelDied",
                "the kernel process died while running the program (out of memory, a crash, or it was killed)",
                "",
            )
        not_recorded = session.calls_not_recorded
        output, cut = clean_bounded(outcome.output, limit)
        full = any(NO_SPACE in text for text in (output, str(error or "")))
        return ExecutionResult(
            output=output,
            error=error,
            timed_out=outcome.timed_out,
            truncated=outcome.truncated or cut,
            tool_calls=session.take_calls(),
            kernel_restarted=outcome.kernel_died or outcome.restarted_before,
            seconds=outcome.seconds,
            tool_calls_not_recorded=not_recorded,
            storage_note=self.storage_note() if full else "",
        )

    def storage_note(self) -> str:
        """What the model reads when a write hit the sandbox's bounds (ENOSPC from either bounded filesystem)."""
        quota = getattr(self.env, "workspace_quota", None)
        workspace = f"the workspace holds at most {quota >> 20} MiB, " if quota else ""
        return (
            f"[the sandbox's storage is full: {workspace}its tmp folder at most {self.limits.tmp_bytes >> 20} MiB "
            f"and {self.limits.tmp_files} files; delete files you no longer need]"
        )

    def terminal(self, command: str, timeout: float | None = None) -> TerminalResult:
        """Run a shell command in the workspace, under the same confinement as the kernel."""
        if self.closed:
            raise RuntimeError("this PTCRuntime is closed")
        return run_terminal(
            self.workspace,
            command,
            timeout=timeout if timeout is not None else self.timeout,
            max_output_chars=self.output_limit,
            limits=self.limits,
            unsafe_no_sandbox=self.unsafe_no_sandbox,
            identity=self.session.sandbox.identity,
        )

    def close(self) -> None:
        if getattr(self, "closed", True):
            return
        self.closed = True
        try:
            self.session.close()
        finally:
            for source in self._owned_sources:
                try:
                    source.close()
                except Exception:  # noqa: BLE001 - closing one tool source must not keep the others open
                    pass


__all__ = ["PTCRuntime", "ExecutionResult", "ErrorInfo", "SandboxUnavailable", "KernelStartError"]
