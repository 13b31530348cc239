"""The oracle teacher: a task's reference solution played out as a DTC, PTC or Hybrid agent.

The trajectories are genuine: every observation comes from the real environment through the harness,
and the teacher decides its next step from what it observed, never from the environment directly.

- DTC: the oracle runs in a worker thread on a proxy of the task's tools. Each tool call on the proxy
  becomes one model turn; the episode loop runs it and the teacher hands the observation, decoded,
  back to the oracle. When the oracle returns, its answer goes to `claim_done`.
- PTC: a first program inspects (the workspace files and a sample of each listing tool), a second
  defines the oracle's code in the session (variables persist), a third runs it and prints the answer,
  then `claim_done`. The kernel cannot import this project, so the oracle's
  `from progagent_lib.task.oracle_kit import ...` line is replaced by that module's source.
- Hybrid: the single look-ups of the inspection as direct calls, the looping work as one program.
"""
from __future__ import annotations

import ast
import inspect
import json
import queue
import threading
from pathlib import Path
from typing import Any, Callable

from ..harness.episode import Limits, PolicyError
from ..harness.session import ToolCall
from ..harness.spec import CLAIM_DONE, PROGRAMMATIC_TOOL_CALL, get_harness
from ..task import ToolError, oracle_kit
from .base import PolicyTurn

ORACLE_KIT_MODULE = "progagent_lib.task.oracle_kit"
# How long the teacher waits for its own oracle thread between two tool calls.
ORACLE_STEP_TIMEOUT = 300.0


class OracleTeacher:
    """`OracleTeacher("dtc" | "ptc" | "hybrid")`: renders each task's oracle under that harness."""

    # The reference solution is not an agent under budget: under DTC at large scales it needs more than
    # the paper's 100 calls (one per page, per file, per order). Pass `limits=` to cut it anyway.
    default_limits = Limits(max_tool_calls=None, max_turns=None, max_context_tokens=None)
    name = "oracle"

    def __init__(self, harness: str = "ptc", tokenizer: Any = None):
        self.harness = get_harness(harness).name
        self.tokenizer = tokenizer  # only for counting tokens in the episode loop

    def start_episode(self, task) -> "_OracleEpisode":
        episode_class = {"dtc": DirectOracleEpisode, "ptc": ProgramOracleEpisode, "hybrid": HybridOracleEpisode}[self.harness]
        return episode_class(task, self.harness)

    def act(self, messages: list[dict], tools: list[dict]) -> PolicyTurn:
        raise TypeError("OracleTeacher plays one task at a time: run it through run_episode, which calls start_episode(task)")


class _OracleEpisode:
    """Shared pieces of the three episode players."""

    def __init__(self, task, harness: str):
        self.task = task
        self.harness = harness
        self.specs = task.env_class.tool_specs
        self.step = 0

    def check_tools(self, tools: list[dict]) -> None:
        """Refuse to play a harness other than ours (its first call would be refused, silently wasting the episode)."""
        offered = {t["function"]["name"] for t in tools}
        needs = ({PROGRAMMATIC_TOOL_CALL} if get_harness(self.harness).programmatic else set()) | \
            (set(self.specs) if get_harness(self.harness).direct_task_tools else set())
        if not needs <= offered:
            raise PolicyError(f"OracleTeacher({self.harness!r}) cannot play this harness: it does not offer "
                              f"{sorted(needs - offered)}; use OracleTeacher(<the episode's harness>)")

    def _call(self, name: str, arguments: dict, thinking: str) -> PolicyTurn:
        self.step += 1
        self.pending_id = f"oracle_{self.step}"
        return PolicyTurn(reasoning=thinking, tool_calls=[ToolCall(name, arguments, self.pending_id)])

    def _observation(self, messages: list[dict]) -> str:
        """The content of the tool message that answered our last call."""
        for message in reversed(messages):
            if message.get("role") == "tool" and message.get("tool_call_id") == self.pending_id:
                return message["content"]
        raise PolicyError(f"the oracle teacher found no observation for its call {self.pending_id}")

    def _decode(self, name: str, text: str) -> Any:
        """An observation back into the Python value the oracle expects, using the tool's return type."""
        returns = self.specs[name].signature.return_annotation
        if returns in (str, "str"):
            return text
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            raise ToolError(f"the observation of {name} is not JSON: {text[:200]}") from None

    def close(self) -> None:
        pass


class _QueueTools:
    """The tools proxy the oracle calls in its worker thread: each call waits for the episode loop."""

    def __init__(self, names: set[str], call: Callable[[str, dict], Any]):
        self._names, self._call = names, call

    def __getitem__(self, name: str) -> Callable[..., Any]:
        if name not in self._names:
            raise KeyError(f"no tool named {name!r}")
        return lambda **kwargs: self._call(name, kwargs)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError as exc:
            raise AttributeError(str(exc)) from None

    def __iter__(self):
        return iter(self._names)


class _Stopped(BaseException):
    """Unwinds the oracle thread when the episode ends before the oracle does."""


class DirectOracleEpisode(_OracleEpisode):
    """DTC: one oracle tool call per turn."""

    def __init__(self, task, harness: str):
        super().__init__(task, harness)
        self.requests: queue.Queue = queue.Queue()    # oracle thread -> teacher: ("call", name, args) | ("done", answer) | ("failed", exc)
        self.replies: queue.Queue = queue.Queue()     # teacher -> oracle thread: (is_error, text) | None to stop
        self.thread: threading.Thread | None = None
        self.pending_name = ""

    def _proxy_call(self, name: str, arguments: dict) -> Any:
        self.requests.put(("call", name, arguments))
        reply = self.replies.get()
        if reply is None:
            raise _Stopped()
        is_error, text = reply
        if is_error:
            raise ToolError(text.removeprefix("Error: "))
        return self._decode(name, text)

    def _run_oracle(self) -> None:
        try:
            answer = self.task.oracle(_QueueTools(set(self.specs), self._proxy_call))
            self.requests.put(("done", answer))
        except _Stopped:
            pass
        except Exception as exc:  # reported to the episode loop as a policy failure
            self.requests.put(("failed", exc))

    def act(self, messages: list[dict], tools: list[dict]) -> PolicyTurn:
        if self.thread is None:
            self.check_tools(tools)
            self.thread = threading.Thread(target=self._run_oracle, name=f"oracle-{self.task.id}", daemon=True)
            self.thread.start()
        else:
            text = self._observation(messages)
            self.replies.put((text.startswith("Error: "), text))
        try:
            event = self.requests.get(timeout=ORACLE_STEP_TIMEOUT)
        except queue.Empty:
            raise PolicyError(f"the oracle of {self.task.id} made no progress for {ORACLE_STEP_TIMEOUT:g} s") from None
        if event[0] == "call":
            _, name, arguments = event
            return self._call(name, arguments, describe_call(name, arguments, self.step == 0))
        if event[0] == "done":
            return self._call(CLAIM_DONE, {"action": str(event[1])}, "Everything the request needs is done; I report the result.")
        raise PolicyError(f"the oracle of {self.task.id} failed: {type(event[1]).__name__}: {event[1]}")

    def close(self) -> None:
        if self.thread is not None and self.thread.is_alive():
            self.replies.put(None)
            self.thread.join(timeout=5)


class ProgramOracleEpisode(_OracleEpisode):
    """PTC: inspect, define, run, claim_done."""

    def __init__(self, task, harness: str):
        super().__init__(task, harness)
        self.plan = self._plan()

    def _plan(self) -> list[tuple[str, Any]]:
        return [
            ("program", (inspection_program(self.specs),
                         "Before writing the solution I look at the data: which documents the workspace holds and "
                         "what one page of each listing tool returns.")),
            ("program", (oracle_program(self.task) + "\n\nprint('Defined solve(tools).')",
                         "I now know the shape of the records. I define the whole procedure as functions in the "
                         "session: read every document for rules and notices, read all pages, decide, act, and "
                         "write the report.")),
            ("program", ("answer = solve(tools)\nprint(answer)",
                         "The functions are defined; I run them and print only the short summary.")),
            ("claim", None),
        ]

    def act(self, messages: list[dict], tools: list[dict]) -> PolicyTurn:
        if self.step == 0:
            self.check_tools(tools)
        else:
            observation = self._observation(messages)
            last_kind = self.plan[self.step - 1][0]
            if last_kind == "program" and self.step > 1 and _looks_failed(observation):
                raise PolicyError(f"the oracle program failed under {self.task.id}: {observation[-2000:]}")
            self.last_output = observation
        if self.step >= len(self.plan):
            raise PolicyError("the oracle teacher has no step left; claim_done should have ended the episode")
        kind, payload = self.plan[self.step]
        if kind == "program":
            code, thinking = payload
            return self._call(PROGRAMMATIC_TOOL_CALL, {"code": code}, thinking)
        if kind == "direct":
            name, arguments, thinking = payload
            return self._call(name, arguments, thinking)
        return self._call(CLAIM_DONE, {"action": self.last_output.strip()},
                          "The program placed everything and printed the summary; I hand it in.")


class HybridOracleEpisode(ProgramOracleEpisode):
    """Hybrid: single look-ups as direct calls, the loops in one program."""

    def _plan(self) -> list[tuple[str, Any]]:
        plan: list[tuple[str, Any]] = []
        if "list_files" in self.specs:
            plan.append(("direct", ("list_files", {}, "First, which documents does the workspace hold?")))
        for name in listing_tools(self.specs)[:1]:
            plan.append(("direct", (name, {}, f"One page of {name} shows the shape of the records.")))
        plan.append(("program", (oracle_program(self.task) + "\n\nanswer = solve(tools)\nprint(answer)",
                                 "Reading every page and every document and placing each change takes many calls: "
                                 "one program does it all and prints only the summary.")))
        plan.append(("claim", None))
        return plan


def _looks_failed(observation: str) -> bool:
    return "Traceback" in observation or observation.startswith("Error:") or "[The program was interrupted" in observation


def listing_tools(specs: dict) -> list[str]:
    """Paginated listing tools a first look can call without arguments (list_files aside)."""
    return [name for name, spec in specs.items()
            if name.startswith("list_") and name != "list_files" and not spec.parameters.get("required")
            and "page" in spec.parameters.get("properties", {})]


def inspection_program(specs: dict) -> str:
    lines = []
    if "list_files" in specs:
        lines += ["files = tools.list_files()",
                  "print(files['total'], 'workspace files:', [f['path'] for f in files['items']])"]
    for name in listing_tools(specs)[:2]:
        lines += [f"sample = tools.{name}(page=1)",
                  f"print('{name}:', sample['total'], 'items in', sample['total_pages'], 'pages; first two:')",
                  "for item in sample['items'][:2]:",
                  "    print(item)"]
    return "\n".join(lines) or "print(help(tools))"


def kit_source() -> str:
    """oracle_kit's code without its module docstring (it is pasted into a program)."""
    source = inspect.getsource(oracle_kit)
    tree = ast.parse(source)
    if tree.body and isinstance(tree.body[0], ast.Expr) and isinstance(tree.body[0].value, ast.Constant):
        source = "\n".join(source.splitlines()[tree.body[0].end_lineno:])
    return source.strip()


def oracle_program(task) -> str:
    """The task's oracle.py as a program the sandboxed kernel can run (no imports of this project)."""
    path = Path(task.root) / "oracle.py"
    source = path.read_text()
    lines = source.splitlines()
    needs_kit = False
    for node in ast.walk(ast.parse(source)):
        modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
            [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        for module in modules:
            if module == ORACLE_KIT_MODULE and isinstance(node, ast.ImportFrom):
                needs_kit = True
                for line in range(node.lineno - 1, node.end_lineno):
                    lines[line] = ""
            elif module.split(".")[0] == "progagent_lib":
                raise PolicyError(f"{path}: the oracle imports {module}, which the sandboxed kernel cannot import; "
                                  f"oracles may import only from {ORACLE_KIT_MODULE} (it is inlined) and the standard library")
    body = "\n".join(lines).strip()
    return (kit_source() + "\n\n" + body) if needs_kit else body


_VERBS = (("list_", "Listing"), ("get_", "Looking up"), ("search_", "Searching"), ("find_", "Finding"))


def describe_call(name: str, arguments: dict, first: bool) -> str:
    """A short thinking line for one DTC step."""
    shown = ", ".join(f"{k}={v!r}" for k, v in arguments.items() if k != "content")
    if first:
        return f"I start by looking at what is there: {name}({shown})."
    if name == "read_file":
        return f"Reading {arguments.get('path')}: it may hold a rule or a notice that changes what to do."
    if name == "write_file":
        return f"Everything is decided; I write {arguments.get('path')}."
    if arguments.get("page", 1) != 1:
        return f"There are more pages; next is page {arguments['page']} of {name}."
    for prefix, verb in _VERBS:
        if name.startswith(prefix):
            return f"{verb} {name[len(prefix):].replace('_', ' ')}: {name}({shown})."
    return f"This case needs a change: {name}({shown})."
