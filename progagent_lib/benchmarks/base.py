"""The small core every external suite uses: the registry of suites, the error for bad input, and the adapter that
makes an external task look like one of ours to `Episode`.

An external task answers what `Episode` asks of a `Task` (`id`, `limits`, `instantiate(scale, seed)`), and its
environment is an `Environment` whose tools are the suite's own functions. The PTC kernel reaches them through the
same tool bridge as our tools (`runtime.bridge.ToolRouter` -> `Environment.call_tool_json`), host side: a model's
program never runs on the host, and its arguments reach the suite's function as JSON values, never `eval`ed.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import shutil
import sqlite3
import tempfile
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from ..task import Environment, ToolDefinitionError, ToolSpec
from ..task.task import episodes_root, sweep_episode_copies


class BenchmarkError(ValueError):
    """Bad input to a benchmark: an unknown suite or task id, or a suite whose package is not installed."""


@dataclass(frozen=True)
class SuiteInfo:
    """One external suite: where its adapter lives and which pip package it needs."""

    name: str
    module: str  # the adapter module, imported only when the suite is used
    import_name: str  # the suite's own package (checked before importing the adapter)
    pip_package: str  # what to install: `pip install <pip_package>`
    description: str

    @property
    def installed(self) -> bool:
        return importlib.util.find_spec(self.import_name) is not None


SUITES: dict[str, SuiteInfo] = {
    "agentdojo": SuiteInfo(
        "agentdojo",
        "progagent_lib.benchmarks.agentdojo",
        "agentdojo",
        "agentdojo==0.1.35",
        "AgentDojo v1.2.2 user tasks (workspace, travel, banking, slack), scored by its own checker",
    ),
    # BFCL pins numpy/networkx/filelock below ours: installed with --no-deps (the Makefile's install rule).
    "bfcl": SuiteInfo(
        "bfcl",
        "progagent_lib.benchmarks.bfcl",
        "bfcl_eval",
        "--no-deps bfcl-eval==2026.3.23 mpmath",
        "BFCL v4 multi-turn (base, miss_func, miss_param, long_context; 800 tasks), scored by its own "
        "multi_turn_checker",
    ),
}


def list_suites() -> list[dict]:
    """One row per registered suite: name, whether its package is installed, the pip package, a description."""
    return [
        {"suite": s.name, "installed": s.installed, "pip_package": s.pip_package, "description": s.description}
        for s in SUITES.values()
    ]


def load_suite(name: str, **options: Any) -> "Benchmark":
    """The suite `name` (`SUITES`), built with `options` (e.g. `suites=["workspace"]`). BenchmarkError if the suite
    is unknown or its package is not installed (the message says what to install)."""
    info = SUITES.get(name)
    if info is None:
        raise BenchmarkError(
            f"unknown benchmark suite {name!r}; known: {', '.join(SUITES)} (see `progagent bench list`)"
        )
    if not info.installed:
        raise BenchmarkError(
            f"the suite {name!r} needs the package {info.import_name!r}, which is not installed: "
            f"run `.venv/bin/pip install {info.pip_package}` (`make install` installs it)"
        )
    return importlib.import_module(info.module).load(**options)


# --- the adapter ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExternalTool:
    """One tool of an external suite: its JSON schema as the suite gives it, and how to run it against an episode."""

    name: str
    description: str
    parameters: dict  # JSON schema of the arguments object (the suite's own)


@dataclass
class Reference:
    """A suite's own reference solution of one task: the calls, in order, and the final answer to hand in.

    A task with several scripted user turns (BFCL multi-turn) gives the calls of each user turn in `turns`
    (`calls` is then all of them, in order); a turn may have none (the model should answer without a call)."""

    calls: list[tuple[str, dict]]
    answer: str = ""
    turns: list[list[tuple[str, dict]]] | None = None

    def user_turns(self) -> list[list[tuple[str, dict]]]:
        return self.turns if self.turns is not None else [self.calls]


def _signature(parameters: dict) -> inspect.Signature:
    """A Python signature for a JSON schema's properties (for positional calls through `env.tools`): required ones
    without a default; a required one after an optional one becomes keyword-only."""
    required = set(parameters.get("required", []))
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    keyword_only = False
    for name, schema in (parameters.get("properties") or {}).items():
        if name in required:
            kind = inspect.Parameter.KEYWORD_ONLY if keyword_only else inspect.Parameter.POSITIONAL_OR_KEYWORD
            params.append(inspect.Parameter(name, kind))
        else:
            keyword_only = True
            params.append(
                inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=schema.get("default"))
            )
    params.sort(key=lambda p: p.kind)  # keyword-only last, as Python requires
    return inspect.Signature(params)


def tool_spec(tool: ExternalTool) -> ToolSpec:
    parameters = {"type": "object", "properties": {}, "required": [], **tool.parameters}
    return ToolSpec(tool.name, tool.description, parameters, _signature(parameters))


class ExternalEnvironment(Environment):
    """An `Environment` whose tools are an external suite's functions.

    The episode gets a private folder as every episode does (an empty workspace, where the PTC kernel is
    confined, and an empty database the base class needs): the suite's state lives in Python objects the subclass
    holds. `call_tool_json` (locking, deadlines, argument checks against the suite's schema, the call log, error
    messages) is the base class's; it runs the tool through `run_tool(name, arguments)`. `criteria` is the suite's
    own checker.
    """

    def __init__(self, tools: list[ExternalTool], *, task: Any = None, instruction: str = ""):
        sweep_episode_copies()
        label = (getattr(task, "id", "external") or "external").replace("/", "_")
        episode = Path(tempfile.mkdtemp(prefix=f"{label}-p{os.getpid()}-", dir=episodes_root()))
        try:
            (episode / "workspace").mkdir()
            sqlite3.connect(episode / "data.db").close()
            super().__init__(episode / "data.db", episode / "workspace", task=task, episode_dir=episode)
        except BaseException:
            shutil.rmtree(episode, ignore_errors=True)
            raise
        self.instruction = instruction
        # The suite's tools, on this instance: the base class finds a tool's spec in `tool_specs` and runs
        # `getattr(self, name)(**arguments)`.
        self.tool_specs = {}  # type: ignore[misc]  # per instance: each external task has its own tools
        for tool in tools:
            if hasattr(Environment, tool.name) or tool.name.startswith("_") or tool.name in vars(self):
                self.close()
                raise ToolDefinitionError(f"the suite's tool {tool.name!r} has the name of an Environment attribute")
            self.tool_specs[tool.name] = tool_spec(tool)
            setattr(self, tool.name, _runner(self, tool.name))

    @abstractmethod
    def run_tool(self, name: str, arguments: dict) -> Any:
        """Run the suite's function `name`; return a JSON-compatible value, raise ToolError on failure."""


def _runner(env: ExternalEnvironment, name: str) -> Callable[..., Any]:
    def run(**arguments: Any) -> Any:
        return env.run_tool(name, arguments)

    run.__name__ = name
    return run


class ExternalTask(ABC):
    """An external suite's task, as `Episode` sees a task: `id`, `limits`, `instantiate(scale, seed)`.

    External suites have one state per task: `scale` and `seed` are recorded in the trajectory but do not change it.
    """

    id: str
    group: str = ""  # the part of the suite it belongs to (AgentDojo: workspace, travel, ...)
    limits: dict | None = None

    @abstractmethod
    def instantiate(self, scale: str = "v0", seed: int = 0) -> ExternalEnvironment:
        """A fresh environment for one episode (nothing shared with another episode)."""

    def reference(self) -> Reference:
        """The suite's own reference calls and answer (for `--policy ground-truth`)."""
        raise NotImplementedError(f"{type(self).__name__} has no reference solution")


@dataclass
class Benchmark:
    """A loaded suite: its tasks by id, and the system prompts its episodes use (None: the harness's own)."""

    name: str
    tasks: dict[str, ExternalTask]
    system_prompts: Mapping[str, str | None] = field(default_factory=dict)  # harness -> prompt file
    skipped: dict[str, str] = field(default_factory=dict)  # task id -> why the suite offers it no episode

    def select(self, task_ids: list[str] | None = None, limit: int | None = None) -> list[ExternalTask]:
        """The tasks named (all by default); with `limit`, the first `limit` of each group. BenchmarkError for an
        unknown id."""
        if task_ids:
            unknown = [t for t in task_ids if t not in self.tasks]
            if unknown:
                sample = ", ".join(list(self.tasks)[:5])
                raise BenchmarkError(f"unknown task id(s) {unknown} in {self.name}; ids look like {sample}, ...")
            chosen = [self.tasks[t] for t in task_ids]
        else:
            chosen = list(self.tasks.values())
        if limit is not None:
            if limit < 1:
                raise BenchmarkError(f"--limit must be at least 1, got {limit}")
            taken: dict[str, int] = {}
            kept = []
            for task in chosen:
                taken[task.group] = taken.get(task.group, 0) + 1
                if taken[task.group] <= limit:
                    kept.append(task)
            chosen = kept
        return chosen


__all__ = [
    "BenchmarkError",
    "Benchmark",
    "ExternalEnvironment",
    "ExternalTask",
    "ExternalTool",
    "Reference",
    "SUITES",
    "SuiteInfo",
    "list_suites",
    "load_suite",
    "tool_spec",
]
