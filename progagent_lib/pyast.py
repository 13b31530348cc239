"""`parse`: `ast.parse` that is safe to call from many threads at once.

CPython 3.11 keeps the recursion depth of its AST conversion (C tree -> Python objects) per
interpreter, not per thread (CPython issue 106905, fixed in later releases): two threads parsing at
the same moment can fail with `SystemError: AST constructor recursion depth mismatch`. Episodes run in
threads (`run_batch`), and several host-side readers parse programs (the metrics of a program, the
oracle teacher's programs, BFCL calls), so every parse goes through one lock. A parse takes
microseconds to a few milliseconds; the lock is never held while anything else runs.
"""

from __future__ import annotations

import ast
import threading
from typing import Literal, overload

_LOCK = threading.Lock()


@overload
def parse(source: str, mode: Literal["exec"] = "exec") -> ast.Module: ...
@overload
def parse(source: str, mode: Literal["eval"]) -> ast.Expression: ...
@overload
def parse(source: str, mode: str) -> ast.AST: ...


def parse(source: str, mode: str = "exec") -> ast.AST:
    with _LOCK:
        return ast.parse(source, mode=mode)


def end_line(node: ast.stmt | ast.expr) -> int:
    """The last line of a node that `parse` made; only nodes built by hand lack a position."""
    if node.end_lineno is None:
        raise ValueError(f"{type(node).__name__} node has no end position: pass a node from pyast.parse")
    return node.end_lineno
