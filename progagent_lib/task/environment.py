"""The `Environment` base class a task author subclasses: tools, verifier, episode state.

Beside it: `toolbox` (the tools as plain functions), `tool_replies` (a tool's result as JSON text, an error message cut
to a bound) and `verification` (`verify()` and its budgets, a base class of `Environment`)."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import threading
import time
import urllib.parse
from abc import abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..textsafe import clean_text, clean_value
from .closeable import Closeable
from .pagination import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from .safe_fs import WorkspaceFS, unmount
from .tools import ToolDefinitionError, ToolError, ToolSpec, build_spec, is_tool, validate_arguments
from .criteria import ReferenceCriteria
from .toolbox import ToolBox
from .tool_replies import MAX_ERROR_CHARS, bounded_text, result_json
from .verifier import Criterion
from .verification import ANSWER_BOUND, MAX_ANSWER_CHARS, VERIFIER_FAILED, Verification, VerifierError
from .verify_worker import VerifierUnavailable

# Bounds on what the host keeps and waits for. A program controls the arguments and, through the
# files it writes, much of what tools and the verifier read, so none of these may be unbounded.
TOOL_TIMEOUT = 30.0  # seconds one host-side tool call may take (a program's own deadline can be shorter)
MAX_LOGGED_ARGUMENT_CHARS = 1_000  # a logged argument longer than this (as JSON) is kept as its size and digest
WORKSPACE_QUOTA = 256 << 20  # bytes one episode's workspace may hold (a tmpfs bound where the host may mount)
WORKSPACE_MAX_FILES = 20_000  # files and folders one workspace may hold (the tmpfs's inodes)


@dataclass
class ToolCallRecord:
    """One call to a task tool, as the environment saw it."""

    name: str
    arguments: dict
    ok: bool
    seconds: float
    result_chars: int
    error: str | None = None


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


class Environment(ReferenceCriteria, Verification, Closeable):
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

    def __init__(
        self,
        db_path: str | Path,
        workspace: str | Path,
        *,
        task: Any = None,
        episode_dir: str | Path | None = None,
        workspace_quota: int | None = WORKSPACE_QUOTA,
        quota_mounted: bool = False,
        read_only: bool = False,
    ):
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

    def call_tool_json(
        self, name: str, arguments: dict | None = None, *, deadline: float | None = None
    ) -> tuple[Any, str]:
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
        except Exception as exc:  # noqa: BLE001 - a crashing tool must not take the episode down
            self.db.rollback()
            if isinstance(exc, ToolError):
                message = str(exc)
            elif time.monotonic() > deadline:
                message = (
                    f"{name} ran past its time limit ({allowed:.1f} s) and was stopped; "
                    "ask for less per call (a page, a filter) or leave the program more time"
                )
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
        self.call_log.append(
            ToolCallRecord(name, loggable_arguments(arguments), ok, time.perf_counter() - started, size, error)
        )

    # --- verifier: criteria() here; verify() and its budgets in `Verification` (verification.py) --------------
    @abstractmethod
    def criteria(self, final_response: str) -> list[Criterion]:
        """The verifier: named, weighted checks of the final response and the final environment state."""

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
        name: Any = action.get("name")  # any JSON value the agent sent: call_tool refuses a name it has no tool for
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

    @property
    def facts(self) -> dict[str, Any]:
        """What the generator recorded for the verifier alone with `ctx.facts(...)` (the `_verifier_facts` table, which
        no tool shows and no export ships): {key: value}, {} when there is none."""
        if not self.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name = '_verifier_facts'"):
            return {}
        return {row["key"]: json.loads(row["value"]) for row in self.query("SELECT key, value FROM _verifier_facts")}

    def query_page(
        self, sql: str, params: tuple | dict = (), page: int = 1, page_size: int = DEFAULT_PAGE_SIZE
    ) -> dict:
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
        limit_params = (
            {**params, "_limit": page_size, "_offset": (page - 1) * page_size}
            if isinstance(params, dict)
            else (*params, page_size, (page - 1) * page_size)
        )
        return {
            "items": self.query(limit_sql, limit_params),
            "page": page,
            "page_size": page_size,
            "total": total,
            "total_pages": total_pages,
            "has_more": page < total_pages,
        }

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


__all__ = [
    "MAX_ERROR_CHARS",
    "Environment",
    "ToolBox",
    "ToolCallRecord",
    "VerifierError",
    "VerifierUnavailable",
    "ToolDefinitionError",
    "VERIFIER_FAILED",
    "ANSWER_BOUND",
    "MAX_ANSWER_CHARS",
]
