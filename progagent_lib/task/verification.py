"""Verification: the task's criteria() judge an episode's final answer and state, within a budget.

`Verification` is a base class of `Environment`: `verify(final_response)` runs the criteria on a frozen copy of the
workspace, in a child process (see `verify_worker`) or a thread, and turns what came back into a `VerifyResult`, or
into a `VerifierError` where the task's verifier is at fault. What the verifier reads was written by the program, so
every budget here is bounded.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from .safe_fs import WorkspaceFS, deadline_check
from .tool_replies import bounded_text
from .tools import ToolError
from .verifier import Criterion, VerifyResult
from .verify_worker import Budget, Judgement, run_in_child

# Bounds on what the verifier is given: a program wrote what it reads, so none of these may be unbounded.
VERIFY_TIMEOUT = 60.0  # seconds the verifier may take, on the clock and in CPU time
VERIFY_MEMORY = 1 << 30  # bytes of memory the verifier's process may take beyond what it starts with
MAX_ANSWER_CHARS = 20_000  # characters of a final answer a verifier reads (the pool's oracles write <= 136)

VERIFIER_FAILED = "verifier_ran"  # the one criterion of a verification that could not judge the episode
ANSWER_BOUND = "answer_within_bound"  # the one criterion of a verification refused for a too long answer
MAX_VERIFIER_ERROR_CHARS = 500  # characters of the exception's message kept in that criterion's detail
_COPY_STAGE = "copying the workspace for the verifier"


class VerifierError(Exception):
    """A defect of the task's verifier: `criteria()` returned something that is not a list of Criterion,
    or raised on the very state the episode began from, or ran past its budget with nothing of the
    episode's to read (that state, and an empty answer)."""


def answer_too_long(chars: int) -> str:
    """What a model and a verdict are told of a final answer past MAX_ANSWER_CHARS."""
    return (
        f"the final answer has {chars:,} characters, more than the {MAX_ANSWER_CHARS:,} a verifier reads; "
        "it was not judged"
    )


def describe_exception(exc: BaseException, limit: int = MAX_VERIFIER_ERROR_CHARS) -> str:
    """`Type: message` of an exception, the message cut to `limit` characters (it may quote hostile input)."""
    kind = (
        type(exc).__qualname__
        if type(exc).__module__ == "builtins"
        else f"{type(exc).__module__}.{type(exc).__qualname__}"
    )
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001 - a message that cannot be shown is left out
        message = "(the message could not be shown)"
    return f"{kind}: {bounded_text(message, limit)}"


def _same_files(left: Path, right: Path) -> bool:
    """Whether two host-private folders hold the same regular files (relative paths and bytes).

    Empty folders are not compared, as `state_fingerprint` leaves them out of a state."""

    def files(root: Path) -> dict[str, Path]:
        found = {}
        for folder, _, names in os.walk(root):
            for name in names:
                path = Path(folder, name)
                if path.is_file() and not path.is_symlink():
                    found[str(path.relative_to(root))] = path
        return found

    ours, theirs = files(left), files(right)
    return ours.keys() == theirs.keys() and all(_same_bytes(ours[k], theirs[k]) for k in ours)


def _same_bytes(left: Path, right: Path) -> bool:
    if left.stat().st_size != right.stat().st_size:
        return False
    with left.open("rb") as a, right.open("rb") as b:
        while True:
            chunk = a.read(1 << 20)
            if chunk != b.read(1 << 20):
                return False
            if not chunk:
                return True


class Verification:
    """`verify()` and the budgets it runs under, for an `Environment`: it reads the environment's `task`, `scale`,
    `seed`, `params`, `instruction`, `db_path`, `workspace`, `fs`, `episode_dir` and `workspace_quota`, holds the
    episode still with `_acquire` and `_busy`, builds the reference state with `prepare_reference` and runs the
    criteria through `run_criteria` (both `ReferenceCriteria`)."""

    verify_timeout: float = VERIFY_TIMEOUT
    verify_memory: int = VERIFY_MEMORY
    # criteria() run in a child process (see verify_worker) where one can rebuild this environment from files;
    # False keeps them in a thread of the host (bounded in time only), as for state held in Python objects.
    verify_in_child: bool = True

    # Given by `Environment` (annotations only: nothing is set here).
    task: Any
    scale: str | None
    seed: int | None
    params: dict
    instruction: str
    db_path: Path
    workspace: Path
    fs: WorkspaceFS
    episode_dir: Path | None
    workspace_quota: int | None
    _busy: threading.RLock
    _deadline: float | None

    if TYPE_CHECKING:  # given by `Environment` and `ReferenceCriteria`; declared here for the type checker only

        def _acquire(self, deadline: float, what: str) -> None: ...
        def prepare_reference(self) -> Path: ...
        def run_criteria(self, final_answer: str) -> list[Criterion]: ...

    def verify(self, final_response: str, timeout: float | None = None) -> VerifyResult:
        """Score the final response and the current environment state, within `timeout` seconds.

        An answer longer than MAX_ANSWER_CHARS is not read: it scores 0, with the one failed criterion
        ANSWER_BOUND saying why. Otherwise no tool call runs meanwhile, and the verifier reads a frozen
        copy of the workspace, made through the safe file layer (regular files and folders only; no link
        followed, no FIFO opened), so nothing the kernel still runs can change or redirect what it reads.

        criteria() run in a child process (see `verify_worker`) with `timeout` seconds of wall-clock and
        CPU time and `verify_memory` bytes of memory, so that a verifier kept busy by hostile input cannot
        hold the host's GIL or memory; the child reads the episode's database (read-only) and the copy.
        An environment that a child cannot rebuild from its task's files (`verify_in_child`) is judged in
        a thread of the host instead, bounded in time only.

        What the verifier reads was written by the program, so it may be built to break a parser (a CSV
        field past `csv.field_size_limit()`, invalid UTF-8, JSON nested past the recursion limit) or to
        exhaust a budget. Either scores the episode 0: the whole list becomes one failed criterion
        VERIFIER_FAILED whose detail names the exception or the budget. It is a task defect instead,
        raised as VerifierError, when the database and workspace are byte for byte the state the episode
        began from: for an exception, since a verifier must take any answer; for a budget, when the answer
        is empty too. A result that is not a non-empty list of Criterion is a VerifierError always.
        """
        timeout = self.verify_timeout if timeout is None else timeout
        response = final_response if isinstance(final_response, str) else str(final_response)
        if len(response) > MAX_ANSWER_CHARS:
            return VerifyResult([Criterion(ANSWER_BOUND, False, 1.0, answer_too_long(len(response)))])
        self._build_reference()
        budget = Budget(timeout, timeout, self.verify_memory)
        deadline = time.monotonic() + timeout
        judge = self._judge_in_child if self._verifies_in_child() else self._judge_in_thread
        return self._verdict(judge(response, deadline, budget), response)

    def _build_reference(self) -> None:
        """The reference state built here, before the verifier's budget starts (criteria that compare with it find it
        in the cache). Where it cannot be built, criteria that read it raise, and the verdict says so."""
        if getattr(self, "seed", None) is not None and hasattr(self.task, "source_bytes"):
            try:
                self.prepare_reference()
            except Exception:  # noqa: BLE001 - reported by the criteria that need it
                pass

    def _verifies_in_child(self) -> bool:
        """Whether a child can rebuild this environment from files: a task loaded from its folder whose
        environment.py defines this very class, instantiated at a scale and seed (`Task.instantiate`)."""
        task = self.task
        if not self.verify_in_child or getattr(task, "root", None) is None or getattr(self, "seed", None) is None:
            return False
        module = sys.modules.get(type(self).__module__)
        return (
            type(self) is task.env_class and Path(getattr(module, "__file__", "")) == Path(task.root) / "environment.py"
        )

    def _judge_in_child(self, response: str, deadline: float, budget: Budget) -> Judgement:
        def judge(snapshot: Path) -> Judgement:
            request = {
                "task_root": str(self.task.root),
                "scale": self.scale,
                "seed": self.seed,
                "params": self.params,
                "instruction": self.instruction,
                "db_path": str(self.db_path),
                "workspace": str(snapshot),
                "answer": response,
            }
            try:
                return run_in_child(request, budget, deadline)
            except OSError as exc:  # the host's sockets (EMFILE): said, like a copy that could not be made
                return Judgement(failed=f"starting the verifier's process raised {describe_exception(exc)}")

        return self._judge_frozen(deadline, judge)

    def _judge_in_thread(self, response: str, deadline: float, budget: Budget) -> Judgement:
        """criteria() in a thread of this process; past the time budget the thread is left running (holding the
        episode: no tool call starts until it ends) and the verdict says so."""
        judged: list[Judgement] = []
        worker = threading.Thread(
            target=lambda: judged.append(
                self._judge_frozen(deadline, lambda snapshot: self._criteria_on(snapshot, response, deadline, budget))
            ),
            name="progagent-verify",
            daemon=True,
        )
        worker.start()
        worker.join(budget.wall_seconds + 1.0)
        return judged[0] if judged else Judgement(budget=budget.sentence("time"))

    def _criteria_on(self, snapshot: Path, response: str, deadline: float, budget: Budget) -> Judgement:
        """criteria(response) in this process, with the workspace pointed at its frozen copy meanwhile."""
        real_workspace, real_fs = self.workspace, self.fs
        self.workspace, self.fs = snapshot, WorkspaceFS(snapshot)
        self._deadline = deadline
        try:
            criteria = self.run_criteria(response)
        except Exception as exc:  # noqa: BLE001 - what the program wrote may break any parser
            late = time.monotonic() > deadline
            return Judgement(budget=budget.sentence("time")) if late else Judgement(raised=describe_exception(exc))
        except BaseException as exc:  # noqa: BLE001 - KeyboardInterrupt, SystemExit: not the episode's doing
            return Judgement(defect=f"criteria() raised {describe_exception(exc)}")
        finally:
            self._deadline = None
            self.fs.close()
            self.workspace, self.fs = real_workspace, real_fs
        if not isinstance(criteria, list) or not criteria or not all(isinstance(c, Criterion) for c in criteria):
            return Judgement(defect=f"criteria() must return a non-empty list of Criterion, got {criteria!r:.200}")
        return Judgement(criteria=criteria)

    def _judge_frozen(self, deadline: float, judge: Callable[[Path], Judgement]) -> Judgement:
        """Hold the episode still (no tool call runs), copy its workspace, and `judge` the copy. A copy that
        cannot be made is said in the verdict; where criteria() raised or ran out of budget, whether the
        state is the one the episode began from is told before the copy goes (in the background: ~20k
        folders take seconds to remove)."""
        try:
            self._acquire(deadline, "the verification")
        except ToolError as exc:
            return Judgement(failed=f"the verification raised {describe_exception(exc)}")
        snapshot: Path | None = None
        try:
            try:
                snapshot = Path(tempfile.mkdtemp(prefix="verify-", dir=self.episode_dir))
                self.fs.copy_to(snapshot, deadline_check(deadline, _COPY_STAGE), max_bytes=self.workspace_quota)
            except Exception as exc:  # noqa: BLE001 - what the program left may stop the copy: said, scored 0
                late = " (it ran past its time limit)" if time.monotonic() > deadline else ""
                return Judgement(failed=f"{_COPY_STAGE} raised {describe_exception(exc)}{late}")
            judgement = judge(snapshot)
            if judgement.raised is not None or judgement.budget is not None:
                judgement.unchanged = self._unchanged_since_start(snapshot)
            return judgement
        finally:
            self._busy.release()
            if snapshot is not None:
                threading.Thread(
                    target=shutil.rmtree, args=(snapshot, True), name="progagent-verify-cleanup", daemon=True
                ).start()

    def _verdict(self, judgement: Judgement, response: str) -> VerifyResult:
        """The VerifyResult of a judgement, or VerifierError where the task's verifier is at fault."""
        where = f"task {self.task.id!r} (environment.py)" if self.task is not None else type(self).__name__
        if judgement.criteria is not None:
            return VerifyResult(judgement.criteria)
        if judgement.defect is not None:
            raise VerifierError(bounded_text(f"{where}: {judgement.defect}"))
        if judgement.failed is not None:
            return VerifyResult([Criterion(VERIFIER_FAILED, False, 1.0, judgement.failed)])
        if judgement.budget is not None:
            if judgement.unchanged and not response:  # nothing of the episode's reached the verifier
                raise VerifierError(
                    f"{where}: criteria() {judgement.budget}, on the untouched state and an empty answer"
                )
            return VerifyResult([Criterion(VERIFIER_FAILED, False, 1.0, f"criteria() {judgement.budget}")])
        if judgement.unchanged:
            raise VerifierError(bounded_text(f"{where}: criteria() raised {judgement.raised}"))
        return VerifyResult([Criterion(VERIFIER_FAILED, False, 1.0, f"criteria() raised {judgement.raised}")])

    def _unchanged_since_start(self, snapshot: Path) -> bool:
        """Whether the database and the workspace (its frozen copy) are byte for byte the generated state
        this episode was instantiated from. False where that cannot be told (no task, a missing state)."""
        scale, seed = getattr(self, "scale", None), getattr(self, "seed", None)
        if self.task is None or scale is None or seed is None:
            return False
        try:
            source = self.task.state_dir(scale, seed)
            return _same_bytes(source / "data.db", self.db_path) and _same_files(source / "workspace", snapshot)
        except Exception:  # noqa: BLE001 - not provably unchanged: the episode's input is blamed, not the task
            return False
