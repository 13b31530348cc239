"""`terminal(command)`: a shell command in the episode's workspace, under the kernel's confinement."""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ..textsafe import clean_text
from .identity import Identity
from .sandbox import ProcessLimits, Sandbox, confinement_for


@dataclass
class TerminalResult:
    """What a shell command printed (stdout and stderr interleaved), and how it ended."""

    output: str
    exit_code: int | None  # None when it was killed at the timeout
    timed_out: bool = False
    truncated: bool = False
    seconds: float = 0.0

    @property
    def observation(self) -> str:
        text = self.output.rstrip("\n") or "[no output]"
        if self.timed_out:
            return text + f"\n[the command timed out after {self.seconds:.0f} s and was killed]"
        return text + (f"\n[exit code {self.exit_code}]" if self.exit_code else "")


def clean_bounded(text: str, limit: int) -> tuple[str, bool]:
    """`text` cleaned (textsafe.clean_text) and cut again (head and tail kept) if its escapes made it longer
    than `limit`, so an output bound holds for what the model reads; and whether it was cut."""
    from .kernel import BoundedText

    text = clean_text(text)
    if len(text) <= limit:
        return text, False
    bounded = BoundedText(limit)
    bounded.add(text)
    return bounded.text(), True


def run_terminal(
    workspace: str | Path,
    command: str,
    *,
    timeout: float = 30.0,
    max_output_chars: int = 20_000,
    limits: ProcessLimits | None = None,
    unsafe_no_sandbox: bool = False,
    identity: Identity | None = None,
) -> TerminalResult:
    """Run `command` with bash in `workspace`; every process it starts is killed when it ends or times out.

    `identity`: the uid/gid to run as, that of the episode's kernel (`PTCRuntime.terminal` passes it), so
    that both own the workspace; without it the command gets a uid of its own, and the workspace with it.

    The output is cleaned (textsafe.clean_text: escape sequences removed, other control characters escaped)."""
    from .kernel import BoundedText

    sandbox = Sandbox(
        workspace=Path(workspace).resolve(),
        limits=limits or ProcessLimits(),
        confinement=confinement_for(unsafe_no_sandbox),
        identity=identity,
    )
    started = time.monotonic()
    output = BoundedText(max_output_chars)
    timed_out = False
    try:
        process = sandbox.popen(
            ["/bin/bash", "--noprofile", "--norc", "-c", command],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        stdout = process.stdout
        assert stdout is not None  # stdout=PIPE
        selector = selectors.DefaultSelector()
        selector.register(stdout, selectors.EVENT_READ)
        deadline = started + timeout
        fd = stdout.fileno()
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            if not selector.select(timeout=min(remaining, 0.1)):
                if process.poll() is not None:  # done; a background job may still hold the pipe open
                    break
                continue
            chunk = os.read(fd, 65536)
            if not chunk:  # every writer closed its end
                break
            output.add(chunk.decode(errors="replace"))
        selector.close()
        if not timed_out:  # output ended: let the command itself finish before stragglers are killed
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                timed_out = True
        sandbox.kill_all(process)  # the command itself if it timed out, and (confined) its background jobs
        try:
            exit_code = process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            exit_code = process.wait()
        stdout.close()
    finally:
        sandbox.cleanup()
    text, cut = clean_bounded(output.text(), max_output_chars)
    return TerminalResult(
        text, None if timed_out else exit_code, timed_out, output.truncated or cut, time.monotonic() - started
    )
