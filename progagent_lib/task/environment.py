"""The `Environment` base class a task author subclasses: tools, verifier, episode state."""
from __future__ import annotations

import json
import shutil
from abc import abstractmethod
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterator, Mapping

from .closeable import Closeable
from .pagination import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from .tools import ToolDefinitionError, ToolError, ToolSpec, build_spec, is_tool, validate_arguments
from .verifier import Criterion, VerifyResult


class VerifierError(Exception):
    """The task's `criteria()` raised or returned something that is not a list of Criterion."""


@dataclass
class ToolCallRecord:
    """One call to a task tool, as the environment saw it."""

    name: str
    arguments: dict
    ok: bool
    seconds: float
    result_chars: int
    error: str | None = None


class ToolBox(Mapping[str, Callable[..., Any]]):
    """`tools.name(...)` and `tools["name"](...)`: the task's tools as plain functions.

    It is also a read-only mapping name -> callable, which is the authors' `tools` dict interface.
    """

    def __init__(self, env: "Environment"):
        self._env = env

    def __getitem__(self, name: str) -> Callable[..., Any]:
        if name not in self._env.tool_specs:
            raise KeyError(f"no tool named {name!r}; available: {sorted(self._env.tool_specs)}")
        env = self._env

        def call(**kwargs: Any) -> Any:
            return env.call_tool(name, kwargs)

        call.__name__ = name
        call.__doc__ = env.tool_specs[name].description
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


class Environment(Closeable):
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

    def __init__(self, db_path: str | Path, workspace: str | Path, *, task: Any = None, episode_dir: str | Path | None = None):
        self.db_path = Path(db_path)
        self.workspace = Path(workspace)
        self.task = task
        self.episode_dir = Path(episode_dir) if episode_dir else None
        self.db = sqlite3.connect(self.db_path, check_same_thread=False)
        # An episode's database is a throwaway copy: no fsync per commit (writes get ~100x cheaper).
        self.db.execute("PRAGMA synchronous = OFF")
        self.db.row_factory = sqlite3.Row
        self.call_log: list[ToolCallRecord] = []
        self.closed = False
        self.done = False
        self.tools = ToolBox(self)

    # --- tools -----------------------------------------------------------------------------------
    def tool_schemas(self) -> list[dict]:
        """OpenAI-style function schemas of the task's tools."""
        return [spec.openai_schema() for spec in self.tool_specs.values()]

    def call_tool(self, name: str, arguments: dict | None = None) -> Any:
        """Run one tool by name with validated arguments. Raises ToolError on any failure."""
        if self.closed:
            raise ToolError("the episode is closed; no more tool calls are accepted")
        arguments = dict(arguments or {})
        started = time.perf_counter()
        try:
            spec = self.tool_specs.get(name)
            if spec is None:
                raise ToolError(f"no tool named {name!r}; available tools: {', '.join(sorted(self.tool_specs))}")
            validate_arguments(spec, arguments)
            result = getattr(self, name)(**arguments)
            self.db.commit()
        except ToolError as exc:
            self.db.rollback()
            self._record(name, arguments, False, started, 0, str(exc))
            raise
        except Exception as exc:  # a crashing tool must not take the episode down
            self.db.rollback()
            message = f"{name} failed with {type(exc).__name__}: {exc}"
            self._record(name, arguments, False, started, 0, message)
            raise ToolError(message) from exc
        size = len(json.dumps(result, default=str))
        self._record(name, arguments, True, started, size, None)
        return result

    def _record(self, name: str, arguments: dict, ok: bool, started: float, size: int, error: str | None) -> None:
        self.call_log.append(ToolCallRecord(name, arguments, ok, time.perf_counter() - started, size, error))

    # --- verifier --------------------------------------------------------------------------------
    @abstractmethod
    def criteria(self, final_response: str) -> list[Criterion]:
        """The verifier: named, weighted checks of the final response and the final environment state."""

    def verify(self, final_response: str) -> VerifyResult:
        """Score the final response and the current environment state."""
        where = f"task {self.task.id!r} (environment.py)" if self.task is not None else type(self).__name__
        try:
            criteria = self.criteria(final_response if isinstance(final_response, str) else str(final_response))
        except Exception as exc:
            raise VerifierError(f"{where}: criteria() raised {type(exc).__name__}: {exc}") from exc
        if not isinstance(criteria, list) or not criteria or not all(isinstance(c, Criterion) for c in criteria):
            raise VerifierError(f"{where}: criteria() must return a non-empty list of Criterion, got {criteria!r:.200}")
        return VerifyResult(criteria)

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
        try:
            return 0.0, {"done": False, "observation": self.call_tool(name, arguments), "is_error": False}
        except ToolError as exc:
            return 0.0, {"done": False, "observation": str(exc), "is_error": True}

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

    def read_workspace(self, relative: str) -> str:
        """Read a text file from the workspace, refusing paths that leave it."""
        path = (self.workspace / relative).resolve()
        if not path.is_relative_to(self.workspace.resolve()):
            raise ToolError(f"path {relative!r} is outside the workspace")
        if not path.is_file():
            raise ToolError(f"no file {relative!r} in the workspace")
        return path.read_text()

    # --- lifecycle -------------------------------------------------------------------------------
    def close(self) -> None:
        """Close the database and remove the episode's private copy of the state."""
        if self.closed:
            return
        self.closed = True
        self.db.close()
        if self.episode_dir is not None:
            shutil.rmtree(self.episode_dir, ignore_errors=True)



__all__ = ["Environment", "ToolBox", "ToolCallRecord", "VerifierError", "ToolDefinitionError"]
