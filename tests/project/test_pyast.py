"""`pyast.parse` under threads: CPython 3.11's AST conversion counts its recursion depth per interpreter, so
parallel `ast.parse` calls fail with SystemError ("AST constructor recursion depth mismatch") when a thread
switch lands inside one (found by bench/load.py: 1 of 64 concurrent oracle episodes died of it). The script
below makes such switches likely (finalizers of cyclic garbage that release the GIL, as sockets and Popen
objects do); with plain `ast.parse` it fails on this machine within a second, with `pyast.parse` never.
"""
import subprocess
import sys

from conftest import REPO

SCRIPT = """
import ast, gc, sys, threading, time
from progagent_lib.pyast import parse
gc.set_threshold(20, 2, 2)
class Junk:
    def __init__(self): self.me = self
    def __del__(self): time.sleep(0)
src = "\\n".join(f"def f{i}(x):\\n    return [((x + {i}) * 2, {{'a': [1, (2, 3)]}}) for x in range(3) if x]" for i in range(100))
errors = []
def hammer(fn):
    for _ in range(40):
        for _ in range(5):
            Junk()
        try:
            fn(src)
        except SystemError as exc:
            errors.append(str(exc))
            return
fn = {"guarded": parse, "plain": ast.parse}[sys.argv[1]]
threads = [threading.Thread(target=hammer, args=(fn,)) for _ in range(8)]
[t.start() for t in threads]
[t.join() for t in threads]
print(len(errors), errors[:1])
"""


def run(which: str) -> str:
    return subprocess.run([sys.executable, "-c", SCRIPT, which], cwd=REPO, capture_output=True, text=True,
                          timeout=120, check=True).stdout


def test_parse_survives_threads_where_plain_ast_parse_may_not():
    assert run("guarded").startswith("0 "), "pyast.parse raised under threads"
