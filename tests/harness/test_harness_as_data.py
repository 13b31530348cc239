"""A harness is a row of data: a fourth harness, added by this file alone, works through the teacher, SFT's data
builder, the evaluation and the tables; and no library module but harness/spec.py names a harness."""
from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from progagent_lib.harness.session import Session
from progagent_lib.harness.spec import (CLAIM_DONE, DIRECT_CALLS, HARNESSES, PROGRAMMATIC_TOOL_CALL, HarnessSpecError,
                                        get_harness, model_tool_schemas, register_harness, unregister_harness)
from progagent_lib.harness.turn import ToolCall, Turn

REPO = Path(__file__).resolve().parents[2]
LIBRARY = REPO / "progagent_lib"
TASK_ID = "retail/restock_orders"
UNCUT = "ptc-uncut"
LONG_OUTPUT = 3 * get_harness("ptc").output_bound   # characters one program prints: three times PTC's bound


@pytest.fixture
def uncut():
    """PTC without output cuts, registered for one test and taken away after it."""
    spec = register_harness(dataclasses.replace(get_harness("ptc"), name=UNCUT, label="PTC (uncut)", color="#e7298a",
                                                output_bound=None))
    try:
        yield spec
    finally:
        unregister_harness(UNCUT)


class PrintsLongOutput:
    """A policy whose one program prints LONG_OUTPUT characters, then hands in."""

    name = "prints-long-output"

    def act(self, messages: list[dict], tools: list[dict]) -> Turn:
        if not any(message["role"] == "tool" for message in messages):
            return Turn(tool_calls=[ToolCall(PROGRAMMATIC_TOOL_CALL, {"code": f"print('x' * {LONG_OUTPUT})"})])
        return Turn(tool_calls=[ToolCall(CLAIM_DONE, {"action": "printed"})])


def eval_config(tmp_path: Path, harnesses: list[str]):
    from progagent_lib.train.evaluate import EvalConfig

    # No episode budget cuts observations or context here: what the model reads is the harness's bound alone.
    return EvalConfig(model="oracle", tasks_root=str(REPO / "tasks"), task_ids=[TASK_ID], harnesses=harnesses,
                      scales=["v0"], seeds=[1000], output_dir=str(tmp_path / "eval"), max_observation_chars=None,
                      max_context_tokens=None)


def test_a_fourth_harness_runs_the_teacher_sft_data_and_evaluation(uncut, restock_task, tmp_path):
    from progagent_lib.analysis.style import HARNESS_LABELS, harness_color
    from progagent_lib.policy import OracleTeacher
    from progagent_lib.train.evaluate import evaluate_policy
    from progagent_lib.train.sft import SFTRunConfig, build_sft_dataset, teacher_trajectories

    config = SFTRunConfig(tasks_root=str(REPO / "tasks"), task_ids=[TASK_ID], harnesses=[UNCUT])
    (teacher,) = teacher_trajectories(config, [restock_task])   # the OracleTeacher, one v0 episode
    assert teacher.harness == UNCUT and teacher.reward == 1.0 and teacher.end_reason == CLAIM_DONE
    assert teacher.calls[0].name == PROGRAMMATIC_TOOL_CALL   # opened as PTC's teacher opens

    dataset, report = build_sft_dataset([teacher], min_score=config.min_score, task_ids=[TASK_ID], harnesses=[UNCUT])
    assert report.kept == {UNCUT: 1} and len(dataset) == 1
    assert [m["role"] for m in dataset[0]["messages"]][:2] == ["system", "user"]

    trajectories, table = evaluate_policy(eval_config(tmp_path, [UNCUT]), OracleTeacher)
    assert [(t.harness, t.reward) for t in trajectories] == [(UNCUT, 1.0)]
    assert [(row.harness, row.pass_rate) for row in table] == [(UNCUT, 1.0)]
    assert HARNESS_LABELS[UNCUT] == "PTC (uncut)"
    assert harness_color([UNCUT]).to_dict()["scale"]["range"] == ["#e7298a"]


def test_a_long_program_output_is_cut_under_ptc_and_whole_under_ptc_uncut(uncut, tmp_path):
    from progagent_lib.harness.summary import cost_by_harness
    from progagent_lib.train.evaluate import evaluate_policy

    trajectories, _ = evaluate_policy(eval_config(tmp_path, ["ptc", UNCUT]), lambda harness: PrintsLongOutput())
    seen = {t.harness: t.calls[0].observation for t in trajectories}
    assert "characters of output cut" in seen["ptc"] and len(seen["ptc"]) < get_harness("ptc").output_bound + 200
    assert seen[UNCUT] == "x" * LONG_OUTPUT
    assert {"ptc", UNCUT} <= set(cost_by_harness(trajectories).columns)


def test_the_program_tool_says_no_cut_only_where_there_is_none(uncut, episode):
    def program_tool(harness: str) -> str:
        schemas = model_tool_schemas(harness, episode.tool_schemas())
        return next(s["function"]["description"] for s in schemas if s["function"]["name"] == PROGRAMMATIC_TOOL_CALL)

    assert "cut if it is very long" in program_tool("ptc")
    assert "cut" not in program_tool(UNCUT) and program_tool(UNCUT).startswith(uncut.program_tool_opening)


def test_an_uncut_harness_still_keeps_the_runtime_ceiling(uncut, episode):
    """No cut for the model, but the kernel is untrusted: what it sends stays bounded (UNBOUNDED_OUTPUT_CEILING)."""
    from progagent_lib.runtime.ptc import UNBOUNDED_OUTPUT_CEILING

    with Session(episode, UNCUT) as session:
        code = f"print('y' * {2 * UNBOUNDED_OUTPUT_CEILING})"
        observation = session.dispatch(ToolCall(PROGRAMMATIC_TOOL_CALL, {"code": code}))
    assert observation.truncated and "characters of output cut" in observation.content
    assert len(observation.content) < UNBOUNDED_OUTPUT_CEILING + 200


def test_the_output_bound_is_the_harnesses_alone(episode):
    from progagent_lib.runtime import PTCRuntime

    with pytest.raises(ValueError, match="max_output_chars must be"):
        PTCRuntime(episode, max_output_chars=0)
    with pytest.raises(TypeError, match="output_bound"):
        Session(episode, "ptc", max_output_chars=100)
    with PTCRuntime(episode, max_output_chars=100) as runtime:
        with pytest.raises(ValueError, match="max_output_chars=harness.output_bound"):
            Session(episode, "ptc", runtime=runtime)


def test_a_harness_row_that_cannot_work_is_refused():
    ptc = get_harness("ptc")
    with pytest.raises(HarnessSpecError, match="already registered"):
        register_harness(ptc)
    with pytest.raises(HarnessSpecError, match="teacher opening"):
        dataclasses.replace(ptc, name="ptc-direct-teacher", teacher_opening=DIRECT_CALLS)
    with pytest.raises(HarnessSpecError, match="output_bound"):
        dataclasses.replace(ptc, name="ptc-zero", output_bound=0)
    with pytest.raises(HarnessSpecError, match="built in"):
        unregister_harness("ptc")
    assert dataclasses.replace(ptc, name="ptc-brief", system_prompt_text="Be brief.\n").system_prompt() == "Be brief."
    assert list(HARNESSES) == ["dtc", "ptc", "hybrid"]


def library_strings() -> list[tuple[str, int, str]]:
    """(module path, line, text) of every string constant in the library, harness/spec.py aside."""
    found = []
    for path in sorted(LIBRARY.rglob("*.py")):
        if path == LIBRARY / "harness" / "spec.py" or "__pycache__" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.append((str(path.relative_to(REPO)), node.lineno, node.value))
    return found


def test_no_library_module_but_the_spec_names_a_harness(uncut):
    names = set(HARNESSES)
    assert UNCUT in names
    naming = [f"{path}:{line}: {text!r}" for path, line, text in library_strings() if text in names]
    assert not naming, "harness names outside harness/spec.py (use a spec lookup or spec.py's constants):\n" + \
        "\n".join(naming)
