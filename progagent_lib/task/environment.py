"""The `Environment` base class a task author subclasses: tools, verifier, episode state."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import threading
import time
import urllib.parse
from abc import abstractmethod
from dataclasses import dataclass
from json.encoder import c_make_encoder, encode_basestring_ascii
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterator, Mapping

from ..textsafe import clean_text, clean_value
from .closeable import Closeable
from .pagination import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from .safe_fs import WorkspaceFS, deadline_check, unmount
from .tools import ToolDefinitionError, ToolError, ToolSpec, build_spec, is_tool, validate_arguments
from .criteria import ReferenceCriteria
from .verifier import Criterion, VerifyResult
from .verify_worker import Budget, Judgement, VerifierUnavailable, run_in_child

# Bounds on what the host keeps and waits for. A program controls the arguments and, through the
# files it writes, much of what tools and the verifier read, so none of these may be unbounded.
TOOL_TIMEOUT = 30.0          # seconds one host-side tool call may take (a program's own deadline can be shorter)
VERIFY_TIMEOUT = 60.0        # seconds the verifier may take, on the clock and in CPU time
VERIFY_MEMORY = 1 << 30      # bytes of memory the verifier's process may take beyond what it starts with
MAX_ANSWER_CHARS = 20_000    # characters of a final answer a verifier reads (the pool's oracles write <= 136)
MAX_ERROR_CHARS = 2_000      # characters of a tool's error message that reach the model
MAX_LOGGED_ARGUMENT_CHARS = 1_000  # a logged argument longer than this (as JSON) is kept as its size and digest
WORKSPACE_QUOTA = 256 << 20  # bytes one episode's workspace may hold (a tmpfs bound where the host may mount)
WORKSPACE_MAX_FILES = 20_000  # files and folders one workspace may hold (the tmpfs's inodes)


VERIFIER_FAILED = "verifier_ran"  # the one criterion of a verification that could not judge the episode
ANSWER_BOUND = "answer_within_bound"  # the one criterion of a verification refused for a too long answer
MAX_VERIFIER_ERROR_CHARS = 500     # characters of the exception's message kept in that criterion's detail
_COPY_STAGE = "copying the workspace for the verifier"


class VerifierError(Exception):
    """A defect of the task's verifier: `criteria()` returned something that is not a list of Criterion,
    or raised on the very state the episode began from, or ran past its budget with nothing of the
    episode's to read (that state, and an empty answer)."""


def answer_too_long(chars: int) -> str:
    """What a model and a verdict are told of a final answer past MAX_ANSWER_CHARS."""
    return (f"the final answer has {chars:,} characters, more than the {MAX_ANSWER_CHARS:,} a verifier reads; "
            "it was not judged")


@dataclass
class ToolCallRecord:
    """One call to a task tool, as the environment saw it."""

    name: str
    arguments: dict
    ok: bool
    seconds: float
    result_chars: int
    error: str | None = None


def bounded_text(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """`text` cut to `limit` characters (head and tail kept) with a visible marker."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters cut ...]\n{text[-half:]}"


# A tool's result as JSON, by the C encoder directly (json.dumps builds an encoder object per call):
# compact, ASCII only, `str()` of any value JSON has no form for, NaN and infinities as Python's json
# writes them. No cycle check (a cycle in the checker's dict would outlive an encoding that failed): a
# result that contains itself ends in RecursionError instead, which fails the call.
_result_encoder = (c_make_encoder(None, str, encode_basestring_ascii, None, ":", ",", False, False, True)
                   if c_make_encoder is not None else None)


def result_json(value: Any) -> str:
    """`value` as compact ASCII JSON text (`str()` of what JSON cannot hold), the form the tool bridge sends."""
    if _result_encoder is None:
        return json.dumps(value, default=str, separators=(",", ":"))
    return "".join(_result_encoder(value, 0))


def describe_exception(exc: BaseException, limit: int = MAX_VERIFIER_ERROR_CHARS) -> str:
    """`Type: message` of an exception, the message cut to `limit` characters (it may quote hostile input)."""
    kind = type(exc).__qualname__ if type(exc).__module__ == "builtins" else \
        f"{type(exc).__module__}.{type(exc).__qualname__}"
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


def loggable_arguments(arguments: Any, limit: int = MAX_LOGGED_ARGUMENT_CHARS) -> Any:
    """The arguments as a call log keeps them: a value longer than `limit` as JSON becomes its size and digest.

    A program may pass megabytes per call; the log must not keep them all (11 calls x 50 MB ...).
    """
    if not isinstance(arguments, dict):
        return _digest(arguments, limit)
    return {str(key)[:200]: _digest(value, limit) for key, value in list(arguments.items())[:64]}


def _digest(value: Any, limit: int) -> Any:
    if isinstance(value, (int, float, bool)) or value is None:
        return value
    if isinstance(value, str) and len(value) <= limit:
        return value
    try:
        text = json.dumps(value, default=str, ensure_ascii=False)
    except (ValueError, RecursionError):
        text = repr(type(value))
    if len(text) <= limit:
        return value
    data = text.encode("utf-8", errors="surrogatepass")
    return {"omitted": True, "chars": len(text), "sha256": hashlib.sha256(data).hexdigest()}


class ToolBox(Mapping[str, Callable[..., Any]]):
    """`tools.name(...)` and `tools["name"](...)`: the task's tools as plain functions.

    It is also a read-only mapping name -> callable, which is the authors' `tools` dict interface.
    `observe(name, result)`, when given, sees each call's result (e.g. to keep sample observations).
    """

    def __init__(self, env: "Environment", observe: Callable[[str, Any], None] | None = None):
        self._env, self._observe = env, observe

    def __getitem__(self, name: str) -> Callable[..., Any]:
        if name not in self._env.tool_specs:
            raise KeyError(f"no tool named {name!r}; available: {sorted(self._env.tool_specs)}")
        env = self._env
        spec = env.tool_specs[name]
        names = [p for p in spec.signature.parameters if p != "self"]

        def call(*args: Any, **kwargs: Any) -> Any:
            # Positional arguments as Python binds them (the kernel's proxy does the same); the
            # environment then validates the named arguments against the schema.
            if len(args) > len(names):
                raise ToolError(f"{name}() takes {len(names)} positional argument(s) ({', '.join(names)}), "
                                f"{len(args)} given")
            arguments = dict(zip(names, args))
            repeated = sorted(set(arguments) & set(kwargs))
            if repeated:
                raise ToolError(f"{name}() got multiple values for {', '.join(repeated)}")
            result = env.call_tool(name, {**arguments, **kwargs})
            if self._observe is not None:
                self._observe(name, result)
            return result

        call.__name__ = name
        call.__doc__ = spec.description
        call.__signature__ = spec.signature.replace(
            parameters=[p for p in spec.signature.parameters.values() if p.name != "self"])
        return call

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError as exc:
            raise AttributeError(str(exc)) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._env.tool_specs)

    def __len__(self) -> int:
        return len(self._env.tool_specs)

    def __dir__(self) -> list[str]:
        return sorted(self._env.tool_specs)


class Environment(ReferenceCriteria, Closeable):
    """Base class of every task's environment.

    Subclasses define tools (methods under `@tool`) and `criteria(final_response)`. An instance holds
    one episode's private state: `self.db` (sqlite3 connection to its copy of data.db) and
    `self.workspace` (its copy of the workspace folder).
    """

    tool_specs: ClassVar[dict[str, ToolSpec]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        specs: dict[str, ToolSpec] = {}
        for klass in reversed(cls.__mro__):
            for attr, value in vars(klass).items():
                if is_tool(value):
                    specs[attr] = build_spec(value, owner=cls.__name__)
        cls.tool_specs = specs

    tool_timeout: float = TOOL_TIMEOUT
    verify_timeout: float = VERIFY_TIMEOUT
    verify_memory: int = VERIFY_MEMORY
    # criteria() run in a child process (see verify_worker) where one can rebuild this environment from files;
    # False keeps them in a thread of the host (bounded in time only), as for state held in Python objects.
    verify_in_child: bool = True

    def __init__(self, db_path: str | Path, workspace: str | Path, *, task: Any = None, episode_dir: str | Path | None = None,
                 workspace_quota: int | None = WORKSPACE_QUOTA, quota_mounted: bool = False, read_only: bool = False):
        self.db_path = Path(db_path)
        self.workspace = Path(workspace)
        self.task = task
        self.episode_dir = Path(episode_dir) if episode_dir else None
        if read_only:  # the verifier's process reads the episode's database as the episode left it
            uri = f"file:{urllib.parse.quote(str(self.db_path.resolve()))}?mode=ro"
            self.db = sqlite3.connect(uri, uri=True, check_same_thread=False)
        else:
            self.db = sqlite3.connect(self.db_path, check_same_thread=False)
            # An episode's database is a throwaway copy: no fsync per commit (writes get ~100x cheaper).
            self.db.execute("PRAGMA synchronous = OFF")
        self.db.row_factory = sqlite3.Row
        # Every query checks the current call's deadline now and then: a slow query is stopped.
        self._deadline: float | None = None
        self.db.set_progress_handler(self._past_deadline, 20_000)
        # The host's only way into the workspace: no symlink followed, no FIFO opened (see safe_fs).
        self.workspace_quota = workspace_quota
        self.quota_mounted = quota_mounted
        self.fs = WorkspaceFS(self.workspace, workspace_quota, enforced_by_mount=quota_mounted)
        self._busy = threading.RLock()  # one tool call or verification at a time
        self.call_log: list[ToolCallRecord] = []
        self.closed = False
        self.done = False
        self.tools = ToolBox(self)
        # The instance: its parameters (generator.params, for the criteria) and its rendered instruction.
        # Task.instantiate sets both; an environment built by hand has none.
        self.params: dict = {}
        self.instruction: str = getattr(task, "prompt", "") if task is not None else ""

    def _past_deadline(self) -> int:
        return 1 if self._deadline is not None and time.monotonic() > self._deadline else 0

    def check_deadline(self) -> None:
        """Raise ToolError if the current tool call or verification is past its time limit.

        Long loops in tools (over files, rows, pages) call this; queries are stopped automatically.
        """
        if self._past_deadline():
            raise ToolError("the call ran past its time limit and was stopped")

    def _acquire(self, deadline: float, what: str) -> None:
        if not self._busy.acquire(timeout=max(0.0, deadline - time.monotonic())):
            raise ToolError(f"{what} could not start: an earlier call is still running past its time limit")

    # --- tools -----------------------------------------------------------------------------------
    def tool_schemas(self) -> list[dict]:
        """OpenAI-style function schemas of the task's tools."""
        return [spec.openai_schema() for spec in self.tool_specs.values()]

    def call_tool(self, name: str, arguments: dict | None = None, *, deadline: float | None = None) -> Any:
        """Run one tool by name with validated arguments. Raises ToolError on any failure.

        The call ends by `deadline` (a `time.monotonic()` value; default: `tool_timeout` seconds
        from now): queries and workspace walks past it are stopped with a ToolError saying so.
        Error messages are cut to MAX_ERROR_CHARS.
        """
        return self.call_tool_json(name, arguments, deadline=deadline)[0]

    def call_tool_json(self, name: str, arguments: dict | None = None, *,
                       deadline: float | None = None) -> tuple[Any, str]:
        """`call_tool`, also returning the result as JSON text: compact, ASCII, `str()` of what JSON has no form for.

        The call log measures the result by this text, and the tool bridge sends it to the kernel as
        it is (the result is encoded once per call). A result JSON cannot hold (one that contains
        itself) fails the call with a ToolError, as any failing tool does.
        """
        if self.closed:
            raise ToolError("the episode is closed; no more tool calls are accepted")
        started = time.perf_counter()
        now = time.monotonic()
        limit = now + self.tool_timeout
        deadline = limit if deadline is None or deadline > limit else deadline
        allowed = max(0.0, deadline - now)
        if not isinstance(arguments, dict) and arguments is not None:
            raise ToolError(f"{name}: arguments must be an object of named parameters, got {type(arguments).__name__}")
        arguments = dict(arguments or {})
        self._acquire(deadline, f"the call of {name!r:.100}")
        self._deadline = deadline
        try:
            spec = self.tool_specs.get(name)
            if spec is None:
                raise ToolError(f"no tool named {name!r:.100}; available tools: {', '.join(sorted(self.tool_specs))}")
            validate_arguments(spec, arguments)
            if time.monotonic() > deadline:
                raise ToolError(f"{name} was not run: the program's time limit has passed")
            result = getattr(self, name)(**arguments)
            self.db.commit()
            text = result_json(result)
        except Exception as exc:  # a crashing tool must not take the episode down
            self.db.rollback()
            if isinstance(exc, ToolError):
                message = str(exc)
            elif time.monotonic() > deadline:
                message = (f"{name} ran past its time limit ({allowed:.1f} s) and was stopped; "
                           "ask for less per call (a page, a filter) or leave the program more time")
            else:
                message = f"{name} failed with {type(exc).__name__}: {exc}"
            message = bounded_text(message)
            self._record(name, arguments, False, started, 0, message)
            raise ToolError(message) from (None if isinstance(exc, ToolError) else exc)
        finally:
            self._deadline = None
            self._busy.release()
        self._record(name, arguments, True, started, len(text), None)
        return result, text

    def _record(self, name: str, arguments: dict, ok: bool, started: float, size: int, error: str | None) -> None:
        self.call_log.append(ToolCallRecord(name, loggable_arguments(arguments), ok, time.perf_counter() - started,
                                            size, error))

    # --- verifier --------------------------------------------------------------------------------
    @abstractmethod
    def criteria(self, final_response: str) -> list[Criterion]:
        """The verifier: named, weighted checks of the final response and the final environment state."""

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
        return type(self) is task.env_class and \
            Path(getattr(module, "__file__", "")) == Path(task.root) / "environment.py"

    def _judge_in_child(self, response: str, deadline: float, budget: Budget) -> Judgement:
        def judge(snapshot: Path) -> Judgement:
            request = {"task_root": str(self.task.root), "scale": self.scale, "seed": self.seed, "params": self.params,
                       "instruction": self.instruction, "db_path": str(self.db_path), "workspace": str(snapshot),
                       "answer": response}
            try:
                return run_in_child(request, budget, deadline)
            except OSError as exc:  # the host's sockets (EMFILE): said, like a copy that could not be made
                return Judgement(failed=f"starting the verifier's process raised {describe_exception(exc)}")

        return self._judge_frozen(deadline, judge)

    def _judge_in_thread(self, response: str, deadline: float, budget: Budget) -> Judgement:
        """criteria() in a thread of this process; past the time budget the thread is left running (holding the
        episode: no tool call starts until it ends) and the verdict says so."""
        judged: list[Judgement] = []
        worker = threading.Thread(target=lambda: judged.append(self._judge_frozen(
            deadline, lambda snapshot: self._criteria_on(snapshot, response, deadline, budget))),
            name="progagent-verify", daemon=True)
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
                threading.Thread(target=shutil.rmtree, args=(snapshot, True), name="progagent-verify-cleanup",
                                 daemon=True).start()

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
                raise VerifierError(f"{where}: criteria() {judgement.budget}, on the untouched state and an empty answer")
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

    # --- the authors' released interface -------------------------------------------------------------
    def get_assistant_tools(self) -> list[dict]:
        """The tool schemas in the authors' format (OpenAI function schemas)."""
        return self.tool_schemas()

    def step(self, action: dict | str) -> tuple[float, dict]:
        """One agent action: `{"name": tool, "arguments": {...}}`, or `claim_done` / a plain string to finish.

        Returns (reward, info). A tool call gives reward 0 and its observation; finishing gives the
        binary reward and the criteria.
        """
        if isinstance(action, str):
            action = {"name": "claim_done", "arguments": {"action": action}}
        name = action.get("name")
        arguments = action.get("arguments") or {}
        if isinstance(arguments, str):
            arguments = json.loads(arguments)
        if name == "claim_done":
            result = self.verify(arguments.get("action", ""))
            self.done = True
            return result.reward, {"done": True, "score": result.score, **result.to_dict()}
        # What a model reads: control characters and bidirectional overrides shown as visible escapes.
        try:
            return 0.0, {"done": False, "observation": clean_value(self.call_tool(name, arguments)), "is_error": False}
        except ToolError as exc:
            return 0.0, {"done": False, "observation": clean_text(str(exc)), "is_error": True}

    # --- helpers for task authors ------------------------------------------------------------------
    def query(self, sql: str, params: tuple | dict = ()) -> list[dict]:
        """Run a SELECT and return rows as dicts."""
        return [dict(row) for row in self.db.execute(sql, params).fetchall()]

    def query_page(self, sql: str, params: tuple | dict = (), page: int = 1, page_size: int = DEFAULT_PAGE_SIZE) -> dict:
        """One page of a SELECT, in `paginate`'s shape, fetched with LIMIT/OFFSET (large tables stay cheap).

        `sql` should end with an ORDER BY so that pages are stable.
        """
        if not isinstance(page, int) or page < 1:
            raise ToolError(f"page must be an integer >= 1, got {page!r}")
        page_size = min(page_size, MAX_PAGE_SIZE)
        total = self.db.execute(f"SELECT count(*) FROM ({sql})", params).fetchone()[0]
        total_pages = max(1, -(-total // page_size))
        if page > total_pages:
            raise ToolError(f"page {page} is past the last page ({total_pages}; {total} items)")
        named = isinstance(params, dict)
        limit_sql = f"{sql} LIMIT {':_limit' if named else '?'} OFFSET {':_offset' if named else '?'}"
        limit_params = {**params, "_limit": page_size, "_offset": (page - 1) * page_size} if named else \
            (*params, page_size, (page - 1) * page_size)
        return {"items": self.query(limit_sql, limit_params), "page": page, "page_size": page_size, "total": total,
                "total_pages": total_pages, "has_more": page < total_pages}

    def require_row(self, table: str, row_id: Any, hint: str = "", what: str | None = None) -> dict:
        """The row of `table` with this id, or a ToolError naming what is missing (and how to find it)."""
        rows = self.query(f'SELECT * FROM "{table}" WHERE id = ?', (row_id,))
        if not rows:
            noun = what or (table[:-1] if table.endswith("s") else table).replace("_", " ")
            raise ToolError(f"no {noun} with id {row_id!r}" + (f"; {hint}" if hint else ""))
        return rows[0]

    def read_workspace(self, relative: str, max_chars: int = 1 << 20) -> str:
        """Read a text file from the workspace: no link followed, only a regular file (see safe_fs)."""
        return self.fs.read_text(relative, max_chars)

    # --- lifecycle -------------------------------------------------------------------------------
    def close(self) -> None:
        """Close the database and remove the episode's private copy of the state."""
        if self.closed:
            return
        self.closed = True
        self.close_reference()
        self.db.close()
        self.fs.close()
        if self.quota_mounted:
            unmount(self.workspace)
        if self.episode_dir is not None:
            shutil.rmtree(self.episode_dir, ignore_errors=True)



__all__ = ["Environment", "ToolBox", "ToolCallRecord", "VerifierError", "VerifierUnavailable", "ToolDefinitionError",
           "VERIFIER_FAILED", "ANSWER_BOUND", "MAX_ANSWER_CHARS"]
