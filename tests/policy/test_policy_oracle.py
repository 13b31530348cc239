"""The oracle teacher's programs and the policy spec parser."""
from types import SimpleNamespace

import pytest

from progagent_lib import load_task
from progagent_lib.policy import OracleTeacher, PolicyError, make_policy
from progagent_lib.policy.oracle import inspection_program, oracle_program
from progagent_lib.policy.switches import near_miss_switches
from progagent_lib.task import find_task_dirs

from conftest import TASKS_DIR


def test_oracle_program_inlines_the_kit_and_compiles(restock_task):
    code = oracle_program(restock_task)
    assert "progagent_lib" not in code and "def read_all(" in code and "def solve(tools, excluded_category, target_pct, report_name)" in code
    assert '"""' not in code and "Reference solution" not in code and "page loop" not in code  # no docstrings
    namespace = {}
    exec(compile(code, "oracle", "exec"), namespace)  # defines only; the kernel runs it the same way
    assert callable(namespace["solve"]) and callable(namespace["read_files"])


def test_oracle_program_is_compact_only_what_solve_needs(tmp_path):
    (tmp_path / "oracle.py").write_text('''"""Reference solution."""
import json
import re  # patterns

from progagent_lib.task.oracle_kit import read_all, read_files

LIMIT = 3
UNUSED = {"a": 1}


def unused_helper(x):
    """Never called."""
    return json.dumps(x)


def total(items):
    """Sum of amounts."""
    # a comment on its own line
    return sum(i["amount"] for i in items[:LIMIT])  # trailing comment


def solve(tools) -> str:
    """Docstring of solve."""
    spaced = re.sub(r"\\s+", " ", "a  b")
    return f"{total(read_all(tools.list_orders))} {spaced}"
''')
    code = oracle_program(SimpleNamespace(root=tmp_path))
    for gone in ("json", "unused_helper", "UNUSED", "read_files", "fnmatch", "#", "Docstring", "Sum of", '"""'):
        assert gone not in code, gone
    assert code.startswith("import re\n") and "LIMIT = 3" in code and "def total(items):" in code
    assert "items[:LIMIT])\n" in code and "'amount'" in code  # comment cut, single quotes (no JSON escapes)
    namespace = {}
    exec(compile(code, "oracle", "exec"), namespace)
    pages = {1: {"items": [{"amount": 2}], "has_more": True}, 2: {"items": [{"amount": 5}], "has_more": False}}
    assert namespace["solve"](SimpleNamespace(list_orders=lambda page: pages[page])) == "7 a b"


def test_single_quoted_keeps_the_program_the_same():
    from progagent_lib.policy.oracle import single_quoted

    code = '''x = "a"\ny = f"{x}-{'b'}"\nz = r"\\d+ \\"q\\""\nw = """doc "s" """\nv = "it's"\n'''
    out = single_quoted(code)
    assert out.startswith("x = 'a'\n") and "it's" in out and '"""doc' in out
    import ast
    assert ast.dump(ast.parse(out)) == ast.dump(ast.parse(code))


def test_dtc_teacher_uses_the_structured_result_not_the_text():
    from typing import Optional

    from progagent_lib.harness.session import Observation
    from progagent_lib.policy.oracle import DirectOracleEpisode

    def get_webpage(url: str) -> Optional[str]:
        return None

    import inspect
    spec = SimpleNamespace(signature=inspect.signature(get_webpage), parameters={})
    task = SimpleNamespace(id="t/web", env_class=SimpleNamespace(tool_specs={"get_webpage": spec}),
                           oracle=lambda tools: f"{tools.get_webpage(url='a')!r} {tools.get_webpage('b')!r}")
    tools = [{"type": "function", "function": {"name": "get_webpage"}}]
    episode = DirectOracleEpisode(task, "dtc")
    try:
        first = episode.act([], tools)
        assert first.tool_calls[0].name == "get_webpage" and first.tool_calls[0].arguments == {"url": "a"}
        # The tool message says one thing, the structured value another: the teacher takes the value.
        episode.observe([Observation("rendered text, not JSON", is_error=False, kind="task_tool", value={"page": 1})])
        second = episode.act([{"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "rendered text, not JSON"}], tools)
        # Without an Observation, plain text under Optional[str] is the text (it used to fail as "not JSON").
        third = episode.act([{"role": "tool", "tool_call_id": second.tool_calls[0].id, "content": "plain page"}], tools)
        assert third.tool_calls[0].name == "claim_done"
        assert third.tool_calls[0].arguments["action"] == "{'page': 1} 'plain page'"
    finally:
        episode.close()


def test_program_failure_is_read_from_the_runtime_flags():
    from progagent_lib.harness.session import Observation
    from progagent_lib.policy.oracle import _program_failed

    timed_out = Observation("[no output]", is_error=True, kind="program", timed_out=True)
    assert _program_failed(timed_out.content, timed_out)  # no traceback, no marker text: still a failure
    assert not _program_failed("Traceback? no: printed by the program", Observation("x", is_error=False, kind="program"))
    assert _program_failed("done\n[the program timed out after 5 s and was interrupted]")  # the runtime's own note


def test_oracle_program_refuses_imports_the_kernel_cannot_satisfy(tmp_path):
    (tmp_path / "oracle.py").write_text("from progagent_lib.task import paginate\n\ndef solve(tools):\n    return ''\n")
    with pytest.raises(PolicyError, match="cannot import"):
        oracle_program(SimpleNamespace(root=tmp_path))


def test_inspection_program_samples_listing_tools_without_required_arguments(restock_task):
    code = inspection_program(restock_task.env_class.tool_specs)
    assert "tools.list_files(page=page)" in code and "tools.list_products(page=1)" in code  # every page of paths
    assert "list_sales" not in code  # it needs a product id


def test_teacher_is_driven_by_run_episode_only():
    with pytest.raises(TypeError, match="run_episode"):
        OracleTeacher("ptc").act([], [])
    with pytest.raises(ValueError, match="unknown harness"):
        OracleTeacher("mcp")


@pytest.mark.parametrize("spec, message", [("gpt-4", "unknown policy"), ("openai:http://x/v1", "openai:BASE_URL#MODEL"),
                                            ("hf:", "unknown policy")])
def test_policy_specs(spec, message):
    assert make_policy("oracle", "dtc").harness == "dtc"
    assert make_policy("openai:http://localhost:8000/v1#Qwen/Qwen3-8B", "ptc").model == "Qwen/Qwen3-8B"
    with pytest.raises(ValueError, match=message):
        make_policy(spec, "ptc")


def test_teacher_refuses_a_harness_it_does_not_play(restock_task):
    from progagent_lib.harness import run_episode

    t = run_episode(restock_task, "v0", 0, "dtc", OracleTeacher("ptc"))
    assert t.end_reason == "policy_error" and "cannot play this harness" in t.error and t.turns == 0
    t = run_episode(restock_task, "v0", 0, "ptc", OracleTeacher("dtc"))
    assert t.end_reason == "policy_error" and "list_products" in t.error


def test_teacher_programs_are_smaller_than_the_sources_and_the_bench_runs(repo, capsys):
    import importlib.util
    import inspect

    from progagent_lib import load_pool
    from progagent_lib.task import oracle_kit

    kit = len(inspect.getsource(oracle_kit))
    for task in load_pool(repo / "tasks"):
        source = (task.root / "oracle.py").read_text()
        code = oracle_program(task)
        compile(code, task.id, "exec")
        assert len(code) < len(source) + (kit if "oracle_kit" in source else 0), task.id
    spec = importlib.util.spec_from_file_location("teacher_programs", repo / "bench" / "teacher_programs.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--tasks", str(repo / "tasks"), "--quick"]) == 0
    assert "ptc    largest program turn over 5 tasks (bytes)" in capsys.readouterr().out


def test_a_near_miss_switch_is_folded_out_of_the_teachers_program(tmp_path):
    """The oracle's switch for its near miss (`flip`) is a test fixture: the teacher writes the oracle with the switch
    at its default, folded away, and statements that never read it keep their author's text."""
    (tmp_path / "near_miss.py").write_text("flip = {'honour_hold': False, 'strict': False}\n")
    (tmp_path / "oracle.py").write_text('''def solve(tools, limit, honour_hold=True, *, strict=True) -> str:
    held = ["a"]  # kept as written
    out = []
    for item in tools.items():
        if honour_hold and item in held:
            continue
        if item > limit or (item == limit and not strict):
            out.append(item)
    label = "strict" if strict else "loose"
    if not honour_hold:
        out.append("held")
    return label + ",".join(out)
''')
    code = oracle_program(SimpleNamespace(root=tmp_path))
    assert "honour_hold" not in code and "strict=" not in code and "def solve(tools, limit) -> str:" in code
    assert "    held = ['a']\n" in code and "if item in held:" in code and "if item > limit:" in code
    assert "label = 'strict'" in code and "append('held')" not in code
    namespace = {}
    exec(compile(code, "oracle", "exec"), namespace)
    assert namespace["solve"](SimpleNamespace(items=lambda: ["a", "b", "c"]), "b") == "strictc"
    (tmp_path / "near_miss.py").write_text("def solve(tools, limit):\n    return ''\n")  # no switch any more
    assert "honour_hold" in oracle_program(SimpleNamespace(root=tmp_path))  # the program follows near_miss.py


def test_a_switch_read_inside_a_with_block_is_folded(tmp_path):
    """A `with` statement has no `else`: its body is folded statement by statement, the header kept as written."""
    (tmp_path / "near_miss.py").write_text("flip = {'strict': False}\n")
    (tmp_path / "oracle.py").write_text('''def solve(tools, strict=True) -> str:
    with tools.lock():  # kept as written
        if strict:
            return "strict"
    return "loose"
''')
    code = oracle_program(SimpleNamespace(root=tmp_path))
    assert "def solve(tools) -> str:" in code and "    with tools.lock():\n" in code and "strict" in code
    assert "if strict" not in code and "if True" not in code


@pytest.mark.parametrize("task_dir", [p for p in find_task_dirs(TASKS_DIR) if near_miss_switches(p)],
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_teachers_program_solves_every_task_with_its_switches_folded(task_dir):
    task = load_task(task_dir)
    code = oracle_program(task)
    assert not {name for name in near_miss_switches(task_dir) if name in code}
    namespace = {}
    exec(compile(code, "oracle", "exec"), namespace)
    env = task.instantiate("v0", 0)
    try:
        assert env.verify(namespace["solve"](env.tools, **env.params)).reward == 1.0
    finally:
        env.close()
