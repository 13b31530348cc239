"""The oracle teacher's programs and the policy spec parser."""
from types import SimpleNamespace

import pytest

from progagent_lib.policy import OracleTeacher, PolicyError, make_policy
from progagent_lib.policy.oracle import inspection_program, oracle_program


def test_oracle_program_inlines_the_kit_and_compiles(restock_task):
    code = oracle_program(restock_task)
    assert "progagent_lib" not in code and "def read_all(" in code and "def solve(tools)" in code
    namespace = {}
    exec(compile(code, "oracle", "exec"), namespace)  # defines only; the kernel runs it the same way
    assert callable(namespace["solve"]) and callable(namespace["read_files"])


def test_oracle_program_refuses_imports_the_kernel_cannot_satisfy(tmp_path):
    (tmp_path / "oracle.py").write_text("from progagent_lib.task import paginate\n\ndef solve(tools):\n    return ''\n")
    with pytest.raises(PolicyError, match="cannot import"):
        oracle_program(SimpleNamespace(root=tmp_path))


def test_inspection_program_samples_listing_tools_without_required_arguments(restock_task):
    code = inspection_program(restock_task.env_class.tool_specs)
    assert "tools.list_files()" in code and "tools.list_products(page=1)" in code
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
