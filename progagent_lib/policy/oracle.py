"""The oracle teacher: a task's reference solution played out as an agent under any harness.

The trajectories are genuine: every observation comes from the real environment through the harness,
and the teacher decides its next step from what it observed, never from the environment directly.

- DTC: the oracle runs in a worker thread on a proxy of the task's tools. Each tool call on the proxy
  becomes one model turn; the episode loop runs it and the teacher hands the observation, decoded,
  back to the oracle. When the oracle returns, its answer goes to `claim_done`.
- PTC: a first program inspects (the workspace files and a sample of each listing tool); then, with `reading=True`,
  from what that printed, programs read the documents and records the solution's rule strings, thresholds and keys
  come from (`policy.reading`: the solution's literals are then ones the student has seen); a program defines the
  oracle's code in the session (variables persist), another runs it and prints the answer, then `claim_done`. The
  program is the oracle compacted as a capable model would write it (`oracle_program`): no docstrings or comments,
  and of `progagent_lib.task.oracle_kit` (which the kernel cannot import) only the helpers the oracle uses.
- Hybrid: the single look-ups of the inspection and of the reading as direct calls, the looping work as one program.

Which of the three a harness gets is its row's `teacher_opening` (harness.spec), never its name.
"""

from __future__ import annotations

import ast
import inspect
import io
import json
import queue
import threading
import tokenize
from pathlib import Path
from typing import Any, Callable

from ..errors import PolicyError
from ..pyast import end_line
from ..pyast import parse as parse_python
from ..harness.episode import Limits
from ..harness.spec import (
    CLAIM_DONE,
    DEFAULT_HARNESS,
    DIRECT_CALLS,
    DIRECT_LOOKUPS,
    INSPECTION_PROGRAM,
    PROGRAMMATIC_TOOL_CALL,
    HarnessSpec,
    get_harness,
)
from ..task import ToolError, oracle_kit
from ..harness.turn import ToolCall, Turn
from .switches import fold_solve, near_miss_switches, switch_defaults

ORACLE_KIT_MODULE = "progagent_lib.task.oracle_kit"
# How long the teacher waits for its own oracle thread between two tool calls.
ORACLE_STEP_TIMEOUT = 300.0


class OracleTeacher:
    """`OracleTeacher(harness)` (a registered name or a HarnessSpec): renders each task's oracle under that harness,
    opened as the harness's `teacher_opening` says."""

    # The reference solution is not an agent under budget: under DTC at large scales it needs more than
    # the paper's 100 calls (one per page, per file, per order). Pass `limits=` to cut it anyway.
    default_limits = Limits(max_tool_calls=None, max_turns=None, max_context_tokens=None)
    name = "oracle"

    def __init__(self, harness: str | HarnessSpec = DEFAULT_HARNESS, tokenizer: Any = None, reading: bool = False):
        self.spec = get_harness(harness) if isinstance(harness, str) else harness
        self.harness = self.spec.name
        self.tokenizer = tokenizer  # only for counting tokens in the episode loop
        # True: reading turns (policy.reading) before the solution. Off by default until the shipped profiles' budgets
        # are sized for the longer episodes (`progagent train grounding` measures both).
        self.reading = reading

    def start_episode(
        self, task, params: dict | None = None, instance: tuple[str, int] | None = None
    ) -> "_OracleEpisode":
        """The player of one episode; `params` are the instance's parameters (the episode's `env.params`), `instance`
        its (scale, seed), on a private copy of which the teacher plans its reading (None: no reading turns)."""
        player = EPISODE_PLAYERS[self.spec.teacher_opening](task, self.spec, params)
        player.instance = instance if self.reading else None
        return player

    def act(self, messages: list[dict], tools: list[dict]) -> Turn:
        raise TypeError(
            "OracleTeacher plays one task at a time: run it through run_episode, which calls start_episode(task)"
        )


class _OracleEpisode:
    """Shared pieces of the three episode players."""

    def __init__(self, task, harness: str | HarnessSpec, params: dict | None = None):
        self.task = task
        self.spec = get_harness(harness) if isinstance(harness, str) else harness
        self.harness = self.spec.name
        if params is None:  # played outside an episode: the first instance's parameters
            params = task.params_for(0) if getattr(task, "parametrised", False) else {}
        self.params = dict(params)
        self.specs = task.env_class.tool_specs
        self.step = 0
        self.observed: Any = None  # the harness's Observation of our last call, when the episode hands it over
        self.instance: tuple[str, int] | None = None  # (scale, seed): where the reading is planned (None: no reading)

    def observe(self, observations: list) -> None:
        """The episode's Observations for the calls of our last turn (structured value, error and timeout flags).

        An episode loop that calls this lets the teacher use the tools' Python results and the runtime's flags;
        without it the teacher falls back to reading the tool message (see `_decode`, `_looks_failed`).
        """
        self.observed = observations[-1] if observations else None

    def check_tools(self, tools: list[dict]) -> None:
        """Refuse to play a harness other than ours (its first call would be refused, silently wasting the episode)."""
        offered = {t["function"]["name"] for t in tools}
        needs = ({PROGRAMMATIC_TOOL_CALL} if self.spec.programmatic else set()) | (
            set(self.specs) if self.spec.direct_task_tools else set()
        )
        if not needs <= offered:
            raise PolicyError(
                f"OracleTeacher({self.harness!r}) cannot play this harness: it does not offer "
                f"{sorted(needs - offered)}; use OracleTeacher(<the episode's harness>)"
            )

    def _call(self, name: str, arguments: dict, thinking: str) -> Turn:
        self.step += 1
        self.pending_id = f"oracle_{self.step}"
        return Turn(reasoning=thinking, tool_calls=[ToolCall(name, arguments, self.pending_id)])

    def _observation(self, messages: list[dict]) -> str:
        """The content of the tool message that answered our last call."""
        for message in reversed(messages):
            if message.get("role") == "tool" and message.get("tool_call_id") == self.pending_id:
                return message["content"]
        raise PolicyError(f"the oracle teacher found no observation for its call {self.pending_id}")

    def _decode(self, name: str, text: str) -> Any:
        """Fallback when no Observation was handed over: the tool message back into a Python value.

        `Session` shows a str result as itself and anything else as JSON; a result that is not JSON is text.
        """
        returns = self.specs[name].signature.return_annotation
        if returns in (str, "str"):
            return text
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return text

    def close(self) -> None:
        pass


class _QueueTools:
    """The tools proxy the oracle calls in its worker thread: each call waits for the episode loop."""

    def __init__(self, specs: dict, call: Callable[[str, dict], Any]):
        self._specs, self._call = specs, call
        self._names = set(specs)

    def __getitem__(self, name: str) -> Callable[..., Any]:
        if name not in self._names:
            raise KeyError(f"no tool named {name!r}")
        signature = self._specs[name].signature
        bound_method = next(iter(signature.parameters), None) == "self"  # the spec is the Environment's method

        def call(*args: Any, **kwargs: Any) -> Any:
            if not args:
                return self._call(name, kwargs)
            # Positional arguments are bound to their names, as Python would bind them in-process.
            arguments = dict(signature.bind(*((None,) if bound_method else ()), *args, **kwargs).arguments)
            if bound_method:
                del arguments["self"]
            return self._call(name, arguments)

        return call

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

    def __init__(self, task, harness: str | HarnessSpec, params: dict | None = None):
        super().__init__(task, harness, params)
        self.requests: queue.Queue = (
            queue.Queue()
        )  # oracle thread -> teacher: ("call", name, args) | ("done", answer) | ("failed", exc)
        self.replies: queue.Queue = queue.Queue()  # teacher -> oracle thread: (is_error, text) | None to stop
        self.thread: threading.Thread | None = None
        self.pending_name = ""

    def _proxy_call(self, name: str, arguments: dict) -> Any:
        self.requests.put(("call", name, arguments))
        reply = self.replies.get()
        if reply is None:
            raise _Stopped()
        is_error, text, observation = reply
        if is_error:
            raise ToolError(text.removeprefix("Error: "))
        if observation is not None and observation.kind == "task_tool":
            return observation.value  # the tool's own Python result, as the oracle would get it in-process
        return self._decode(name, text)

    def _run_oracle(self) -> None:
        try:
            tools = _QueueTools(self.specs, self._proxy_call)
            answer = self.task.oracle(tools, self.params) if self.params else self.task.oracle(tools)
            self.requests.put(("done", answer))
        except _Stopped:
            pass
        except Exception as exc:  # noqa: BLE001 - reported to the episode loop as a policy failure
            self.requests.put(("failed", exc))

    def act(self, messages: list[dict], tools: list[dict]) -> Turn:
        if self.thread is None:
            self.check_tools(tools)
            self.thread = threading.Thread(target=self._run_oracle, name=f"oracle-{self.task.id}", daemon=True)
            self.thread.start()
        else:
            text, observation = self._observation(messages), self.observed
            self.observed = None
            is_error = observation.is_error if observation is not None else text.startswith("Error: ")
            self.replies.put((is_error, text, observation))
        try:
            event = self.requests.get(timeout=ORACLE_STEP_TIMEOUT)
        except queue.Empty:
            raise PolicyError(f"the oracle of {self.task.id} made no progress for {ORACLE_STEP_TIMEOUT:g} s") from None
        if event[0] == "call":
            _, name, arguments = event
            return self._call(name, arguments, describe_call(name, arguments, self.step == 0))
        if event[0] == "done":
            return self._call(
                CLAIM_DONE, {"action": str(event[1])}, "Everything the request needs is done; I report the result."
            )
        raise PolicyError(f"the oracle of {self.task.id} failed: {type(event[1]).__name__}: {event[1]}")

    def close(self) -> None:
        if self.thread is not None and self.thread.is_alive():
            self.replies.put(None)
            self.thread.join(timeout=5)


class ProgramOracleEpisode(_OracleEpisode):
    """PTC: inspect, read, define, run, claim_done."""

    reads_directly = False  # its reading is programs that print; Hybrid's is direct calls

    def __init__(self, task, harness: str | HarnessSpec, params: dict | None = None):
        super().__init__(task, harness, params)
        self.plan = self._plan()
        # The reading is planned once the first look at the data has been printed: after PTC's inspection program,
        # after Hybrid's direct look-ups (before its program).
        first_program = next(i for i, (kind, _) in enumerate(self.plan) if kind == "program")
        self.reading_after = first_program if self.reads_directly else first_program + 1

    def _solution(self) -> str:
        """The code whose literals the reading must show: the oracle's program and the call that runs it."""
        return oracle_program(self.task) + f"\n\nanswer = {solve_call(self.params)}"

    def _reading(self, messages: list[dict], tools: list[dict]) -> list[tuple[str, Any]]:
        """The reading steps, planned from what the episode has shown so far (see policy.reading)."""
        if self.instance is None:
            return []
        from .grounding import seen_text
        from .reading import plan_reading, reading_programs

        scale, seed = self.instance
        direct = self.reads_directly
        reads = plan_reading(
            self.task, self.params, scale, seed, self._solution(), seen_text(messages, tools), direct=direct
        )
        if direct:
            return [
                ("direct", (r.name, r.arguments or {}, "This document or record holds a rule I need; I read it."))
                for chosen in reads
                for r in chosen
            ]
        return [
            (
                "program",
                (
                    code,
                    "Before writing the solution I read what the rules come from: the documents that state them "
                    "and one record of each kind I will use, so that every name and value I write is one I saw.",
                ),
            )
            for code in reading_programs(reads)
        ]

    def _plan(self) -> list[tuple[str, Any]]:
        return [
            (
                "program",
                (
                    inspection_program(self.specs),
                    "Before writing the solution I look at the data: which documents the workspace holds and "
                    "what one page of each listing tool returns.",
                ),
            ),
            (
                "program",
                (
                    oracle_program(self.task) + f"\n\nprint('Defined {solve_signature(self.task)}.')",
                    "I now know the shape of the records. I define the whole procedure as functions in the "
                    "session: read every document for rules and notices, read all pages, decide, act, and "
                    "write the report.",
                ),
            ),
            (
                "program",
                (
                    f"answer = {solve_call(self.params)}\nprint(answer)",
                    "The functions are defined; I run them "
                    + ("with the values the request gives " if self.params else "")
                    + "and print only the short summary.",
                ),
            ),
            ("claim", None),
        ]

    def act(self, messages: list[dict], tools: list[dict]) -> Turn:
        if self.step == 0:
            self.check_tools(tools)
        else:
            observation = self._observation(messages)
            last_kind = self.plan[self.step - 1][0]
            if last_kind == "program" and self.step > 1 and _program_failed(observation, self.observed):
                raise PolicyError(f"the oracle program failed under {self.task.id}: {observation[-2000:]}")
            self.last_output = observation
            self.observed = None
            if self.step == self.reading_after:
                self.plan[self.step : self.step] = self._reading(messages, tools)
        if self.step >= len(self.plan):
            raise PolicyError("the oracle teacher has no step left; claim_done should have ended the episode")
        kind, payload = self.plan[self.step]
        if kind == "program":
            code, thinking = payload
            return self._call(PROGRAMMATIC_TOOL_CALL, {"code": code}, thinking)
        if kind == "direct":
            name, arguments, thinking = payload
            return self._call(name, arguments, thinking)
        return self._call(
            CLAIM_DONE,
            {"action": self.last_output.strip()},
            "The program placed everything and printed the summary; I hand it in.",
        )


class HybridOracleEpisode(ProgramOracleEpisode):
    """Hybrid: single look-ups (the first look, the reading) as direct calls, the loops in one program."""

    reads_directly = True

    def _plan(self) -> list[tuple[str, Any]]:
        plan: list[tuple[str, Any]] = []
        if "list_files" in self.specs:
            plan.append(("direct", ("list_files", {}, "First, which documents does the workspace hold?")))
        for name in listing_tools(self.specs)[:1]:
            plan.append(("direct", (name, {}, f"One page of {name} shows the shape of the records.")))
        plan.append(
            (
                "program",
                (
                    oracle_program(self.task) + f"\n\nanswer = {solve_call(self.params)}\nprint(answer)",
                    "Reading every page and every document and placing each change takes many calls: "
                    "one program does it all and prints only the summary.",
                ),
            )
        )
        plan.append(("claim", None))
        return plan


# The player of each teacher opening (harness.spec.TEACHER_OPENINGS).
EPISODE_PLAYERS: dict[str, type[_OracleEpisode]] = {
    DIRECT_CALLS: DirectOracleEpisode,
    INSPECTION_PROGRAM: ProgramOracleEpisode,
    DIRECT_LOOKUPS: HybridOracleEpisode,
}


def solve_call(params: dict) -> str:
    """The call that runs the oracle in a program, the instance's parameters bound as literals from the request:
    `solve(tools)`, or `solve(tools, min_days=14, region='north')`."""
    return "solve(" + ", ".join(["tools"] + [f"{name}={value!r}" for name, value in params.items()]) + ")"


def solve_signature(task) -> str:
    return "solve(" + ", ".join(("tools",) + tuple(task.param_names)) + ")"


def _program_failed(text: str, observation: Any = None) -> bool:
    """Whether a program of ours failed: the runtime's flags when the Observation was handed over, else the
    markers the runtime writes (a traceback, its timeout and kernel-restart notes, a refused call)."""
    if observation is not None:
        return bool(
            observation.is_error or observation.runtime_error or observation.timed_out or observation.kernel_restarted
        )
    return (
        "Traceback" in text
        or text.startswith("Error:")
        or "[the program timed out" in text
        or "[the kernel was restarted" in text
    )


def listing_tools(specs: dict) -> list[str]:
    """Paginated listing tools a first look can call without arguments (list_files aside)."""
    return [
        name
        for name, spec in specs.items()
        if name.startswith("list_")
        and name != "list_files"
        and not spec.parameters.get("required")
        and "page" in spec.parameters.get("properties", {})
    ]


def inspection_program(specs: dict) -> str:
    lines = []
    if "list_files" in specs:
        lines += [  # every page of paths: the documents the reading prints are named here, at any scale
            "paths, page = [], 1",
            "while True:",
            "    files = tools.list_files(page=page)",
            "    paths += [f['path'] for f in files['items']]",
            "    if not files['has_more']:",
            "        break",
            "    page += 1",
            "print(len(paths), 'workspace files:', paths)",
        ]
    for name in listing_tools(specs)[:2]:
        lines += [
            f"sample = tools.{name}(page=1)",
            f"print('{name}:', sample['total'], 'items in', sample['total_pages'], 'pages; first two:')",
            "for item in sample['items'][:2]:",
            "    print(item)",
        ]
    return "\n".join(lines) or "print(help(tools))"


class _CompactSource:
    """One module's top-level statements as text, without docstrings or comments, formatting otherwise kept
    (raw strings and line breaks as their author wrote them; `ast.unparse` would rewrite both)."""

    def __init__(self, source: str):
        self.lines = source.splitlines()
        self.tree = parse_python(source)
        self.drop: set[int] = set()  # 1-based lines to leave out
        self.cut: dict[int, int] = {}  # line -> column where a trailing comment starts
        for node in ast.walk(self.tree):
            if (
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and len(node.body) > 1
                and _is_docstring(node.body[0])
            ):
                self.drop.update(range(node.body[0].lineno, end_line(node.body[0]) + 1))
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                row, col = token.start
                if self.lines[row - 1][:col].strip():
                    self.cut[row] = col
                else:
                    self.drop.add(row)

    def rows(self, first: int, last: int) -> list[str]:
        """The kept lines `first`..`last` (1-based), comments and docstrings gone."""
        return [
            line
            for row in range(first, last + 1)
            if row not in self.drop
            for line in [
                self.lines[row - 1][: self.cut[row]].rstrip() if row in self.cut else self.lines[row - 1].rstrip()
            ]
            if line
        ]

    @property
    def statements(self) -> list[ast.stmt]:
        return [s for i, s in enumerate(self.tree.body) if not (i == 0 and _is_docstring(s))]

    def text(self, statement: ast.stmt) -> str:
        first = min([statement.lineno] + [d.lineno for d in getattr(statement, "decorator_list", [])])
        kept: list[str] = []
        for row in range(first, end_line(statement) + 1):
            if row in self.drop:
                continue
            line = self.lines[row - 1]
            line = line[: self.cut[row]].rstrip() if row in self.cut else line.rstrip()
            if line or (kept and kept[-1]):
                kept.append(line)
        return "\n".join(kept).strip("\n")


def _is_docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def _defined_names(statement: ast.stmt) -> set[str]:
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in statement.names}
    if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def _used_names(statement: ast.stmt) -> set[str]:
    return {n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _keep_needed(statements: list[ast.stmt], roots: set[str]) -> list[ast.stmt]:
    """The statements that `roots` need, in their order: definitions nobody uses are dropped; statements that
    define nothing (a call at module level) are kept, with whatever they use."""
    needed = set(roots) | {name for s in statements if not _defined_names(s) for name in _used_names(s)}
    kept: set[int] = set()
    changed = True
    while changed:
        changed = False
        for i, statement in enumerate(statements):
            if i not in kept and (not _defined_names(statement) or _defined_names(statement) & needed):
                kept.add(i)
                needed |= _used_names(statement)
                changed = True
    return [s for i, s in enumerate(statements) if i in kept]


# CPython 3.11 before 3.11.8 keeps the AST constructor's recursion depth per process, not per thread: parses
# running at once in two threads (batch workers) can fail with "AST constructor recursion depth mismatch".
# The teacher parses under one lock, and each oracle once.
_AST_LOCK = threading.Lock()
_PROGRAMS: dict[tuple[str, tuple[tuple[int, int], ...]], str] = {}


def oracle_program(task) -> str:
    """The compact program for a task's oracle (see `compact_oracle`), made once per version of oracle.py and of the
    near_miss.py whose switches it folds away."""
    path = Path(task.root) / "oracle.py"
    versions = [(p.stat().st_mtime_ns, p.stat().st_size) for p in (path, path.parent / "near_miss.py") if p.is_file()]
    key = (str(path.resolve()), tuple(versions))
    with _AST_LOCK:
        if key not in _PROGRAMS:
            _PROGRAMS[key] = compact_oracle(path)
        return _PROGRAMS[key]


def compact_oracle(path: Path) -> str:
    """The task's oracle.py as a compact program the sandboxed kernel can run, as a capable model would write it.

    Parsed with `ast` and `tokenize`, the author's formatting otherwise kept: docstrings and comments go, the
    `oracle_kit` import is replaced by just the kit helpers the oracle uses (and what those use), and
    definitions and imports `solve` does not need are dropped. Any other import of this project is refused: the kernel cannot satisfy it.
    """
    oracle = _CompactSource(path.read_text())
    kit_names: set[str] = set()
    body: list[ast.stmt] = []
    for statement in oracle.statements:
        if isinstance(statement, ast.ImportFrom) and statement.module == ORACLE_KIT_MODULE:
            kit_names |= {alias.name for alias in statement.names}
            continue
        for node in ast.walk(statement):
            modules = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            for module in modules:
                if module.split(".")[0] == "progagent_lib":
                    raise PolicyError(
                        f"{path}: the oracle imports {module}, which the sandboxed kernel cannot import; "
                        f"oracles may import only from {ORACLE_KIT_MODULE} (it is inlined) and the "
                        "standard library"
                    )
        body.append(statement)
    kit = _CompactSource(inspect.getsource(oracle_kit)) if kit_names else None
    kit_statements = [(kit, st) for st in kit.statements] if kit else []
    oracle_statements = [(oracle, st) for st in body]

    def is_import(pair: tuple[_CompactSource, ast.stmt]) -> bool:
        return isinstance(pair[1], (ast.Import, ast.ImportFrom))

    # Imports first (the kit's, then the oracle's), as one would write them; then the helpers, then the rest.
    ordered = (
        [p for p in kit_statements + oracle_statements if is_import(p)]
        + [p for p in kit_statements if not is_import(p)]
        + [p for p in oracle_statements if not is_import(p)]
    )
    kept = {id(st) for st in _keep_needed([st for _, st in ordered], {"solve"})}
    ordered = [p for p in ordered if id(p[1]) in kept]
    imports = "\n".join(src.text(st) for src, st in ordered if is_import((src, st)))
    switches = near_miss_switches(path.parent)  # the near miss's flips: folded out of what the teacher writes
    rest = [
        _solve_text(src, st, switches) if src is oracle else src.text(st)
        for src, st in ordered
        if not is_import((src, st))
    ]
    return single_quoted("\n\n".join(([imports] if imports else []) + rest))


def _solve_text(source: _CompactSource, statement: ast.stmt, switches: set[str]) -> str:
    """A statement of the oracle as the teacher writes it: `solve` with the near miss's switches folded away."""
    if not (isinstance(statement, ast.FunctionDef) and statement.name == "solve" and switches):
        return source.text(statement)
    values = switch_defaults(statement, switches)
    return fold_solve(statement, values, source.text, source.rows) if values else source.text(statement)


def single_quoted(code: str) -> str:
    """Double-quoted string literals as single-quoted ones where that changes nothing else.

    A program travels as a JSON string, where every `"` costs an escape (`\\"`): about 6% of its tokens.
    Checked: the result parses to the same syntax tree, or the code is returned as it was.
    """
    offsets = [0]
    for line in code.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    edits = []
    for token in tokenize.generate_tokens(io.StringIO(code).readline):
        if token.type != tokenize.STRING:
            continue
        quote = next(i for i, ch in enumerate(token.string) if ch in "'\"")
        prefix, literal = token.string[:quote], token.string[quote:]
        if literal.startswith('"') and not literal.startswith('"""') and "'" not in literal:
            start = offsets[token.start[0] - 1] + token.start[1]
            end = offsets[token.end[0] - 1] + token.end[1]
            edits.append((start, end, f"{prefix}'{literal[1:-1]}'"))
    result = code
    for start, end, text in reversed(edits):
        result = result[:start] + text + result[end:]
    return result if ast.dump(parse_python(result)) == ast.dump(parse_python(code)) else code


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
            return f"{verb} {name[len(prefix) :].replace('_', ' ')}: {name}({shown})."
    return f"This case needs a change: {name}({shown})."
