"""What a trajectory measures: the episode's counters, tokens that enter the context, and the structure of PTC
programs."""

from __future__ import annotations

import ast
import math
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from ..pyast import parse as parse_python

# --- the episode's counters -------------------------------------------------------------------------

# Every episode's counters (fields of the Trajectory, kept by Episode for every path), one definition each. This is the
# one list the adapters (TRL, OpenEnv, verifiers) report, the exports carry and the batch summary averages.
EPISODE_METRICS: dict[str, str] = {
    "turns": "assistant turns the episode received",
    "model_tool_calls": "tool calls the model issued and the harness ran (a program counts once)",
    "tool_calls": "task-tool calls those caused, direct or inside programs",
    "tool_output_tokens": "tokens of the observation texts that entered the context (tool results, parse and budget "
    "feedback), each counted alone with the episode's token counter, no chat markup",
    "context_tokens": "the context's size at the end: the exact count whenever the generator reports one (a turn's "
    "prompt + completion tokens, the token adapter's rendered context), plus the counter's estimate "
    "of what was added since",
    "runtime_errors": "programs that raised",
    "timeouts": "calls that timed out",
    "malformed_calls": "tool-call blocks the parser could not read",
}


# What every adapter reports of one episode, in this order: the verifier's reward R and score R~, then the counters.
EPISODE_REPORT: tuple[str, ...] = ("reward", "score", *EPISODE_METRICS)


def episode_report(trajectory: Any) -> dict[str, float]:
    """One episode (a Trajectory) in numbers, as every adapter reports it: EPISODE_REPORT's fields (the same names in
    TRL's logs, OpenEnv's observations, verifiers' metrics and the exports)."""
    return {name: getattr(trajectory, name) for name in EPISODE_REPORT}


# --- token counting ---------------------------------------------------------------------------------

APPROXIMATE_COUNTER = "approx-bpe"
_PIECES = re.compile(r"[A-Za-z]+|\d|\s+|[^\sA-Za-z\d]")


def approximate_tokens(text: str) -> int:
    """A tokenizer-free estimate of BPE tokens, used when the policy has no tokenizer (e.g. the teacher).

    Modelled on Qwen-style byte-level BPE: each digit is its own token, each punctuation mark is one,
    a run of letters costs about one token per 4 letters, and whitespace runs are mostly merged into the
    next word (counted as one token only when they span a line break or are longer than one space).
    It is a rough estimate, not checked against a real Qwen tokenizer (none can be downloaded here):
    compare harnesses with it, and use the policy's tokenizer for absolute numbers.
    """
    tokens = 0
    for piece in _PIECES.findall(text):
        first = piece[0]
        if first.isalpha():
            tokens += math.ceil(len(piece) / 4)
        elif first.isspace():
            tokens += 1 if ("\n" in piece or len(piece) > 1) else 0
        else:
            tokens += 1
    return tokens


class TokenCounter:
    """Counts tokens with a tokenizer when there is one, else with `approximate_tokens`."""

    def __init__(self, tokenizer: Any = None):
        self.tokenizer = tokenizer
        label = getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__
        self.name = f"tokenizer:{label}" if tokenizer is not None else APPROXIMATE_COUNTER

    def __call__(self, text: str) -> int:
        if not text:
            return 0
        if self.tokenizer is None:
            return approximate_tokens(text)
        return len(self.tokenizer.encode(text, add_special_tokens=False))


# --- PTC program structure --------------------------------------------------------------------------


@dataclass
class ProgramStructure:
    """What a program submitted to programmatic_tool_call is built from (static analysis with `ast`)."""

    parsed: bool = True  # False when the code is not valid Python
    lines: int = 0
    loops: int = 0  # for / while (async included)
    conditionals: int = 0  # if statements, conditional expressions and comprehension filters
    try_blocks: int = 0  # try/except
    comprehensions: int = 0  # list / set / dict comprehensions and generator expressions
    functions: int = 0  # def / lambda
    tool_call_sites: int = 0  # places where the program calls tools.<name>(...) or tools["name"](...)
    tool_names: list[str] = field(default_factory=list)
    prints: int = 0
    dtc_like: bool = False  # one tool call, no control flow, its result printed whole

    @property
    def control_flow(self) -> bool:
        return bool(self.loops or self.conditionals or self.try_blocks or self.comprehensions)


def _tool_name(call: ast.Call) -> str | None:
    """`tools.name(...)` -> name, `tools["name"](...)` -> name, anything else -> None."""
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "tools":
        return func.attr
    if isinstance(func, ast.Subscript) and isinstance(func.value, ast.Name) and func.value.id == "tools":
        key = func.slice
        return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else "?"
    return None


_PARSE_LOCK = threading.Lock()  # CPython 3.11.7's parser is not safe across threads (AST recursion check)


def analyze_program(code: str) -> ProgramStructure:
    structure = ProgramStructure(lines=len([line for line in code.splitlines() if line.strip()]))
    try:
        with _PARSE_LOCK:
            tree = parse_python(code)
    except SyntaxError:
        structure.parsed = False
        return structure
    tool_calls: list[ast.Call] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            structure.loops += 1
        elif isinstance(node, (ast.If, ast.IfExp)):
            structure.conditionals += 1
        elif isinstance(node, (ast.Try, ast.TryStar)) and node.handlers:
            structure.try_blocks += 1
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            structure.comprehensions += 1
            structure.conditionals += sum(len(generator.ifs) for generator in node.generators)  # filters
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            structure.functions += 1
        elif isinstance(node, ast.Call):
            name = _tool_name(node)
            if name is not None:
                tool_calls.append(node)
                structure.tool_names.append(name)
            elif isinstance(node.func, ast.Name) and node.func.id == "print":
                structure.prints += 1
    structure.tool_call_sites = len(tool_calls)
    structure.dtc_like = (
        len(tool_calls) == 1
        and not structure.control_flow
        and not structure.functions
        and _prints_whole(tree, tool_calls[0])
    )
    return structure


def _prints_whole(tree: ast.Module, call: ast.Call) -> bool:
    """Is the tool call's result shown whole: `print(tools.x())`, `r = tools.x(); print(r)`, or a bare last expression."""
    names = {
        t.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and node.value is call
        for t in node.targets
        if isinstance(t, ast.Name)
    }

    def is_whole(expr: ast.AST) -> bool:
        if expr is call or (isinstance(expr, ast.Name) and expr.id in names):
            return True
        # json.dumps(r) / pprint-like wrappers around the whole value still print all of it
        return (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, (ast.Attribute, ast.Name))
            and (getattr(expr.func, "attr", None) or getattr(expr.func, "id", None))
            in ("dumps", "pformat", "str", "repr")
            and len(expr.args) >= 1
            and is_whole(expr.args[0])
        )

    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, (ast.Name, ast.Attribute))
            and (getattr(node.func, "id", None) or getattr(node.func, "attr", None)) in ("print", "pprint")
        ):
            if any(is_whole(arg) for arg in node.args):
                return True
    last = tree.body[-1] if tree.body else None
    return isinstance(last, ast.Expr) and is_whole(last.value)
