"""`KernelPool`: confined kernels started ahead of time, so an episode starts without waiting.

A pooled kernel starts in a sandbox whose writable workspace is an empty slot folder. `acquire`
bind-mounts the episode's workspace onto that slot; Landlock's rule on the slot then covers the
workspace, and nothing else of the episode (its database, its parent folders) becomes reachable.
A kernel serves one episode only: it is never returned to the pool.
"""

from __future__ import annotations

import threading
from pathlib import Path

from ..task.closeable import Closeable
from .kernel import KernelSession
from .kernel_side import call_code
from .sandbox import ProcessLimits, Sandbox, confinement_for


REFILL_DELAY = 0.3  # seconds


class KernelPool(Closeable):
    """`size` ready kernels; `acquire(workspace)` hands one out and a background thread refills."""

    def __init__(self, size: int = 2, *, limits: ProcessLimits | None = None, unsafe_no_sandbox: bool = False):
        if size < 1:
            raise ValueError("a KernelPool needs size >= 1")
        self.size = size
        self.limits = limits or ProcessLimits()
        self.unsafe_no_sandbox = unsafe_no_sandbox
        self._ready: list[KernelSession] = []
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._closed = False
        self.errors: list[str] = []
        # Start the first kernel here so that a machine that cannot confine fails loudly at once.
        self._ready.append(self._start_one())
        self._filler = threading.Thread(target=self._fill, name="kernel-pool-filler", daemon=True)
        self._filler.start()

    def _start_one(self) -> KernelSession:
        sandbox = Sandbox(workspace=None, limits=self.limits, confinement=confinement_for(self.unsafe_no_sandbox))
        session = KernelSession(sandbox)
        try:
            session.start()
        except BaseException:
            session.close()
            raise
        return session

    def _fill(self) -> None:
        while True:
            with self._lock:
                while not self._closed and len(self._ready) >= self.size:
                    self._wake.wait()
                if self._closed:
                    return
                # Acquires often come in bursts (a batch of episodes): let the burst finish before
                # starting a kernel, whose start-up would otherwise compete with it for the CPU.
                self._wake.wait(timeout=REFILL_DELAY)
                if self._closed:
                    return
            try:
                session = self._start_one()
            except Exception as exc:  # noqa: BLE001 - keep the reason; acquire falls back to a synchronous start
                self.errors.append(f"{type(exc).__name__}: {exc}")
                with self._lock:
                    self._wake.wait(timeout=5.0)
                continue
            with self._lock:
                if self._closed:
                    session.close()
                    return
                self._ready.append(session)

    @property
    def ready(self) -> int:
        with self._lock:
            return len(self._ready)

    def acquire(self, workspace: str | Path) -> KernelSession:
        """A started kernel whose working folder is now `workspace`; it belongs to the caller."""
        with self._lock:
            if self._closed:
                raise RuntimeError("this KernelPool is closed")
            session = self._ready.pop(0) if self._ready else None
            self._wake.notify()
        if session is None or not session.alive():
            if session is not None:
                session.close()
            session = self._start_one()
        session.sandbox.bind_workspace(Path(workspace).resolve())
        session.send_silent(call_code("startup", "enter_workspace", str(session.sandbox.slot)))
        return session

    def close(self) -> None:
        with self._lock:
            self._closed = True
            ready, self._ready = self._ready, []
            self._wake.notify_all()
        for session in ready:
            session.close()
        self._filler.join(timeout=10)
