"""The grounded-literal rate: whether a teacher's programs could have been written from what the student sees.

A program teaches transfer only if every rule string, threshold and id in it came from the request or from something
printed earlier in the episode; a literal the student never saw (a phrasing of a document the teacher did not print)
can only be memorised. For each program of an episode (the `programmatic_tool_call` code, in order), every literal is
looked up in the text seen before it: the system prompt, the tool schemas, the instruction and every earlier
observation.

What counts as a literal, and when it is grounded:
- a string constant: it appears verbatim in the seen text. A string used as a regular expression (the pattern of a
  `re` function) is grounded when each run of literal characters in it, 3 or more long, appears verbatim (the rest is
  regex syntax: `(.+)`, `\\d+`). The program's own wording of its output is not knowledge of the task and is not
  a literal here: the text parts of an f-string and the strings `print` is given; nor is a docstring, or a date
  format (`'%d %B %Y'`, the argument of `strftime`/`strptime`).
- a number (not a bool): its text appears in the seen text as a number (not inside a longer number), or it is one of
  the program vocabulary values below (an index, a rounding width, a percentage's 100).
- a string's leading and trailing white space is formatting (`'sku,supplier\\n'` is grounded by `sku,supplier`).
- names the program defines: a string that is an identifier and a key the program itself writes (`d['gf'] = ...`,
  or a key of a dict display whose values are computed or start values such as 0 or []) names the program's own
  data, like a variable, wherever it stands. A dict of constants (`{'standard': 0.2}`) is task knowledge, not this.
- program vocabulary: strings without a letter or digit (separators, newlines), the empty string, the English words
  for numbers (a parser of "three days" knows them) and the names of months and weekdays, date formats, the numbers of
  `VOCABULARY_NUMBERS` (indexes, rounding widths, a percentage's 100, and the calendar's 7, 12, 24, 60, 365, 3600),
  and float tolerances (0 < |x| <= 1e-3, for comparing computed amounts).
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..harness.spec import PROGRAMMATIC_TOOL_CALL

with warnings.catch_warnings():  # the public names of re's parser: deprecated since 3.11, with no replacement
    warnings.simplefilter("ignore", DeprecationWarning)
    import sre_constants
    import sre_parse

# indexes, rounding widths, a percentage's 100, and calendar units
VOCABULARY_NUMBERS = frozenset({-1, 0, 1, 2, 100, 7, 12, 24, 60, 365, 3600})
SEEN_ROLES = ("system", "user", "tool")
CALENDAR_WORDS = frozenset(
    "january february march april may june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday".split()
)
DATE_FORMAT = re.compile(r"(?:%[A-Za-z]|[^A-Za-z])+")
NUMBER_WORDS = frozenset(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand".split()
)
REGEX_FUNCTIONS = frozenset({"search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split", "compile"})
MIN_REGEX_RUN = 3
TOLERANCE = 1e-3
DATE_FORMAT_FUNCTIONS = frozenset({"strftime", "strptime"})


@dataclass(frozen=True)
class Literal:
    """One literal of a program: its value, the kind of check it gets (text | regex | number | name, a key the program
    defines itself) and its line."""

    value: str | int | float
    kind: str
    line: int


@dataclass
class Grounding:
    """The literals of an episode's programs, split into grounded and not."""

    grounded: list[Literal] = field(default_factory=list)
    ungrounded: list[Literal] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.grounded) + len(self.ungrounded)

    @property
    def rate(self) -> float:
        """The share of literals that are grounded (1.0 for a program without literals)."""
        return len(self.grounded) / self.total if self.total else 1.0

    def add(self, other: Grounding) -> Grounding:
        self.grounded += other.grounded
        self.ungrounded += other.ungrounded
        return self


def program_literals(code: str) -> list[Literal]:
    """The literals of a program that need grounding (docstrings and f-string text left out)."""
    tree = ast.parse(code)
    skip: set[int] = set()
    regex: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skip.add(id(first.value))
        if isinstance(node, ast.JoinedStr):
            skip.update(id(v) for v in node.values if isinstance(v, ast.Constant))
        if isinstance(node, ast.Call) and _is_re_call(node.func) and node.args:
            regex.add(id(node.args[0]))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            skip.update(id(a) for a in node.args if isinstance(a, ast.Constant))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in DATE_FORMAT_FUNCTIONS
        ):
            skip.update(id(a) for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str))
    defined = {
        key.value
        for node in ast.walk(tree)
        for key in (
            node.keys
            if isinstance(node, ast.Dict) and all(_initialiser(v) for v in node.values)
            else [node.slice]
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store)
            else []
        )
        if isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value.isidentifier()
    }
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or id(node) in skip:
            continue
        value = node.value
        if isinstance(value, bool) or value is None or isinstance(value, (bytes, complex)):
            continue
        if isinstance(value, str):
            kind = "regex" if id(node) in regex else "name" if value in defined else "text"
            found.append(Literal(value, kind, node.lineno))
        elif isinstance(value, (int, float)):
            found.append(Literal(value, "number", node.lineno))
    return sorted(found, key=lambda lit: lit.line)


def _initialiser(value: ast.expr) -> bool:
    """A dict value that says nothing of the task: computed, or a start value (0, '', None, an empty container)."""
    if isinstance(value, ast.Constant):
        return value.value in (0, "", None) and not isinstance(value.value, bool) or value.value is None
    if isinstance(value, (ast.List, ast.Dict, ast.Set, ast.Tuple)):
        return not (value.elts if not isinstance(value, ast.Dict) else value.keys)
    return True


def _is_re_call(func: ast.expr) -> bool:
    return (
        isinstance(func, ast.Attribute)
        and func.attr in REGEX_FUNCTIONS
        and isinstance(func.value, ast.Name)
        and func.value.id == "re"
    )


def regex_runs(pattern: str) -> list[str]:
    """The runs of literal characters of a regular expression (`'Subject: Hold on (.+)'` -> `['Subject: Hold on ']`)."""
    try:
        parsed = sre_parse.parse(pattern)
    except (sre_constants.error, RecursionError):
        return [pattern]
    runs: list[str] = []

    def walk(items: Iterable[Any]) -> None:
        current = ""
        for op, arg in items:
            if op is sre_constants.LITERAL:
                current += chr(arg)
                continue
            runs.append(current)
            current = ""
            if op is sre_constants.SUBPATTERN:
                walk(arg[-1])
            elif op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
                walk(arg[-1])
            elif op is sre_constants.BRANCH:
                for branch in arg[1]:
                    walk(branch)
        runs.append(current)

    walk(parsed.data)
    return [run for run in runs if len(run.strip()) >= MIN_REGEX_RUN]


def is_vocabulary(literal: Literal) -> bool:
    if isinstance(literal.value, (int, float)):
        return literal.value in VOCABULARY_NUMBERS or 0 < abs(literal.value) <= TOLERANCE
    text = str(literal.value)
    return (
        literal.kind == "name"
        or not any(ch.isalnum() for ch in text)
        or text.strip().lower() in NUMBER_WORDS | CALENDAR_WORDS
        or ("%" in text and DATE_FORMAT.fullmatch(text) is not None)
    )


def number_forms(value: int | float) -> list[str]:
    """How a number may read in text: 125, 125.0 -> 125; 0.15 -> 0.15; 1500 -> 1500 or 1,500."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    forms = [repr(value)]
    if isinstance(value, int) and abs(value) >= 1000:
        forms.append(f"{value:,}")
    return forms


def is_grounded(literal: Literal, seen: str) -> bool:
    """Whether `literal` could have been written from `seen` (see the module's rules)."""
    if is_vocabulary(literal):
        return True
    if isinstance(literal.value, (int, float)):
        return any(re.search(rf"(?<![\d.]){re.escape(form)}(?!\.?\d)", seen) for form in number_forms(literal.value))
    text = str(literal.value)
    if literal.kind == "regex":
        return all(run in seen for run in regex_runs(text))
    return text.strip() in seen  # spaces and newlines around it are the program's formatting


def seen_text(messages: Sequence[dict], tools: Sequence[dict] = ()) -> str:
    """What a model has seen in `messages`: the tool schemas it was given, and every system, user and tool message."""
    parts = [json.dumps(list(tools), ensure_ascii=False), *tool_texts(tools)]
    parts += [m["content"] for m in messages if m.get("role") in SEEN_ROLES and isinstance(m.get("content"), str)]
    return "\n".join(parts)


def episode_programs(messages: Sequence[dict]) -> list[tuple[str, int]]:
    """(code, how many messages came before it) for each program of an episode, in order."""
    programs = []
    for index, message in enumerate(messages):
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            if function.get("name") != PROGRAMMATIC_TOOL_CALL:
                continue
            arguments = function.get("arguments")
            arguments = json.loads(arguments) if isinstance(arguments, str) else arguments or {}
            if isinstance(arguments.get("code"), str):
                programs.append((arguments["code"], index))
    return programs


def episode_grounding(messages: Sequence[dict], tools: Sequence[dict] = ()) -> Grounding:
    """The grounding of every literal of an episode's programs against what was seen before each program: the
    tool schemas the model was given and the messages before it (system, instruction, observations)."""
    result = Grounding()
    for code, before in episode_programs(messages):
        context = seen_text(messages[:before], tools)
        for literal in program_literals(code):
            (result.grounded if is_grounded(literal, context) else result.ungrounded).append(literal)
    return result


def tool_texts(tools: Sequence[dict]) -> list[str]:
    """The schemas' descriptions as the model reads them (not JSON-escaped)."""
    texts = []
    for tool in tools:
        function = tool.get("function", tool)
        texts.append(str(function.get("description", "")))
        for name, prop in (function.get("parameters", {}).get("properties") or {}).items():
            texts.append(f"{name}: {prop.get('description', '')}")
    return texts
