"""The layer order of shared/DESIGN.md §1, checked on the import graph of progagent_lib, built with `ast` from every
import statement: at module level, lazy ones inside functions, and those under `if TYPE_CHECKING:` (a module that needs
another's names only for its annotations still depends on it):

    ground (errors, textsafe, stats, cache, pyast) <- task, config <- runtime <- harness
        <- generation floor: generation (model sources, the generator interface and its implementations, make_generator)
                             <- policy (chat adapters over a generator, the teacher, baselines), engine (the vLLM process)
        <- train, synthesis, integrations, benchmarks <- analysis (tables and figures of what those produce)
        <- command lines (cli.py, *_cli.py)

No module imports a higher layer (KNOWN_UPWARD lists allowed exceptions: none are left; a new upward import fails), and
no modules import each other in a circle, however lazily."""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "progagent_lib"
LAYERS = {"errors": 0, "textsafe": 0, "stats": 0, "cache": 0, "pyast": 0, "task": 1, "config": 1, "runtime": 2, "harness": 3,
          "generation": 4, "policy": 5, "engine": 5, "train": 6, "synthesis": 6, "integrations": 6, "benchmarks": 6,
          "analysis": 7}
TOP = 8   # command lines sit on top of everything
KNOWN_UPWARD: set[tuple[str, str]] = set()   # was 5 edges (engine and policy into train, harness.batch into policy)


def module_name(path: Path) -> str:
    name = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts)
    return name.removesuffix(".__init__")


def layer(module: str) -> int | None:
    parts = module.split(".")
    if parts[-1] == "cli" or parts[-1].endswith("_cli"):
        return TOP
    return LAYERS.get(parts[1]) if len(parts) > 1 else None


def imported_names(tree: ast.AST, package: str) -> list[str]:
    """Every name an import statement anywhere in `tree` reaches (module level, inside functions, under
    TYPE_CHECKING), absolute; `package` resolves relative imports. `from a import b` gives both `a` and `a.b`."""
    targets: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            targets += ([stem] if node.module is not None else []) + [f"{stem}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            targets += [a.name for a in node.names]
    return targets


def import_graph() -> dict[str, set[str]]:
    files = [p for p in ROOT.rglob("*.py") if "__pycache__" not in p.parts]
    modules = {module_name(p) for p in files}

    def resolve(target: str) -> str | None:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        return target or None

    graph: dict[str, set[str]] = defaultdict(set)
    for path in files:
        module = module_name(path)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for target in imported_names(ast.parse(path.read_text()), package):
            resolved = resolve(target) if target.startswith("progagent_lib") else None
            if resolved and resolved != module and resolved != "progagent_lib":
                graph[module].add(resolved)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def upward(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    return {(a, b) for a, targets in graph.items() for b in targets
            if layer(a) is not None and layer(b) is not None and layer(b) > layer(a)}


def test_every_package_has_a_layer():
    packages = {p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    modules = {p.stem for p in ROOT.glob("*.py") if p.stem not in ("__init__", "cli")}
    assert packages | modules <= set(LAYERS), sorted((packages | modules) - set(LAYERS))


def test_no_import_runs_upward_beyond_the_known_debt():
    found = upward(import_graph())
    assert not found - KNOWN_UPWARD, f"new upward imports: {sorted(found - KNOWN_UPWARD)}"
    assert not KNOWN_UPWARD - found, f"gone (remove them from KNOWN_UPWARD): {sorted(KNOWN_UPWARD - found)}"


def test_no_modules_import_each_other_in_a_circle():
    assert cycles(import_graph()) == []


def test_the_checks_can_fail():
    graph = {"progagent_lib.task.a": {"progagent_lib.train.b"}, "progagent_lib.train.b": {"progagent_lib.task.a"}}
    assert upward(graph) == {("progagent_lib.task.a", "progagent_lib.train.b")}
    assert cycles(graph) == [["progagent_lib.task.a", "progagent_lib.train.b"]]
    a, b, c = (f"progagent_lib.harness.{name}" for name in "abc")
    assert cycles({a: {b}, b: {c}, c: {a}}) == [[a, b, c]]   # a circle through three modules
    assert upward({"progagent_lib.benchmarks.a": {"progagent_lib.analysis.b"}}) == \
        {("progagent_lib.benchmarks.a", "progagent_lib.analysis.b")}


def test_lazy_and_type_checking_imports_count():
    source = ("from typing import TYPE_CHECKING\nfrom .trajectory import Trajectory\n"
              "if TYPE_CHECKING:\n    from .view import Page\n"
              "def show(t):\n    from ..analysis.style import harness_color\n    import progagent_lib.train.gspo\n")
    names = imported_names(ast.parse(source), "progagent_lib.harness")
    assert {"progagent_lib.harness.trajectory", "progagent_lib.harness.view", "progagent_lib.analysis.style",
            "progagent_lib.train.gspo"} <= set(names)
