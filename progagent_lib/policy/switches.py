"""A near miss's switches folded out of the teacher's program.

A task's near miss may be its oracle with a keyword argument flipped (`near_miss.py`: `flip = {"honour_hold": False}`),
so the oracle carries a switch whose default is the correct behaviour (`if honour_hold and chosen["name"] == ...`).
Such a switch is a test fixture, not part of the solution a model should learn: the teacher's program is the oracle
with each switch bound to its default and folded away (`if chosen["name"] == ...`), the parameter gone from `solve`.

Statements that do not read a switch keep their author's text; one that does is rewritten by `ast.unparse` after
folding: the switch becomes its constant, and `and`/`or`/`not`, conditional expressions and `if` statements with a
constant condition are simplified.
"""

from __future__ import annotations

import ast
import copy
import textwrap
from pathlib import Path
from typing import Any, Callable

from ..pyast import end_line
from ..pyast import parse as parse_python

NEAR_MISS_FILE = "near_miss.py"


def near_miss_switches(task_folder: Path) -> set[str]:
    """The names a task's near_miss.py flips (`flip = {...}` of literal keys), or none."""
    path = Path(task_folder) / NEAR_MISS_FILE
    if not path.is_file():
        return set()
    for statement in parse_python(path.read_text()).body:
        if (
            isinstance(statement, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "flip" for t in statement.targets)
            and isinstance(statement.value, ast.Dict)
        ):
            return {k.value for k in statement.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    return set()


def switch_defaults(solve: ast.FunctionDef, names: set[str]) -> dict[str, Any]:
    """The correct value of each switch: its default in `solve`'s signature (a literal)."""
    args = solve.args
    positional = args.posonlyargs + args.args
    pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    return {a.arg: ast.literal_eval(d) for a, d in pairs if a.arg in names}


class _Fold(ast.NodeTransformer):
    """Each switch as its constant, and what that makes constant simplified."""

    def __init__(self, values: dict[str, Any]):
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if isinstance(node.ctx, ast.Load) and node.id in self.values:
            return ast.Constant(self.values[node.id])
        return node

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        neutral = isinstance(node.op, ast.And)  # True does nothing in an `and`, False in an `or`
        kept = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                if bool(value.value) == neutral:
                    continue
                return ast.Constant(not neutral)
            kept.append(value)
        if not kept:
            return ast.Constant(neutral)
        return kept[0] if len(kept) == 1 else ast.BoolOp(node.op, kept)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.Not) and isinstance(node.operand, ast.Constant):
            return ast.Constant(not node.operand.value)
        return node

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.test, ast.Constant):
            return node.body if node.test.value else node.orelse
        return node

    def visit_If(self, node: ast.If) -> ast.AST | list[ast.stmt]:
        self.generic_visit(node)
        if isinstance(node.test, ast.Constant):
            return node.body if node.test.value else node.orelse
        return node


def _reads(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


_BLOCKS = (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.If)


def fold_solve(
    solve: ast.FunctionDef,
    values: dict[str, Any],
    text: Callable[[ast.stmt], str],
    lines: Callable[[int, int], list[str]],
) -> str:
    """The text of `solve` with its switches (`values`) folded away; `text(statement)` is a statement's own text and
    `lines(first, last)` the kept source lines between two line numbers (the oracle's, docstrings and comments gone)."""
    signature = copy.deepcopy(solve)
    args = signature.args
    keep = [
        (a, d) for a, d in zip(args.args[len(args.args) - len(args.defaults) :], args.defaults) if a.arg not in values
    ]
    args.args = [a for a in args.args if a.arg not in values]
    args.defaults = [d for _, d in keep]
    kw = [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if a.arg not in values]
    args.kwonlyargs, args.kw_defaults = [a for a, _ in kw], [d for _, d in kw]
    signature.body, signature.decorator_list = [ast.Pass()], []
    header = ast.unparse(signature).rsplit("\n", 1)[0]
    body = [_render(statement, set(values), values, text, lines) for statement in solve.body]
    return "\n".join([header] + [b for b in body if b])


def _render(
    statement: ast.stmt,
    names: set[str],
    values: dict[str, Any],
    text: Callable[[ast.stmt], str],
    lines: Callable[[int, int], list[str]],
) -> str:
    if not _reads(statement, names):
        return text(statement)
    if (
        isinstance(statement, _BLOCKS)
        and statement.body[0].lineno > statement.lineno
        and not _reads_header(statement, names)
        and not any(_reads(s, names) for s in getattr(statement, "orelse", []))
    ):
        head = lines(statement.lineno, statement.body[0].lineno - 1)
        inner = [_render(s, names, values, text, lines) for s in statement.body]
        tail = (
            lines(end_line(statement.body[-1]) + 1, end_line(statement)) if getattr(statement, "orelse", None) else []
        )
        return "\n".join(head + [i for i in inner if i] + tail)
    folded = _Fold(values).visit(copy.deepcopy(statement))
    folded = folded if isinstance(folded, list) else [folded]
    indent = " " * statement.col_offset
    return "\n".join(textwrap.indent(ast.unparse(s), indent) for s in folded) or f"{indent}pass"


def _reads_header(statement: ast.stmt, names: set[str]) -> bool:
    parts = [getattr(statement, field) for field in ("test", "iter", "target", "items") if hasattr(statement, field)]
    return any(_reads(p, names) for part in parts for p in (part if isinstance(part, list) else [part]))


__all__ = ["near_miss_switches", "switch_defaults", "fold_solve"]
