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

_LOCK = threading.Lock()


def parse(source: str, mode: str = "exec") -> ast.AST:
    with _LOCK:
        return ast.parse(source, mode=mode)
