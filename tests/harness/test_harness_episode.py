"""The episode loop with real environments and real kernels: oracle teacher, limits, malformed calls, records."""
import json

import pytest
from IPython.core.formatters import DisplayFormatter

from progagent_lib.harness import Limits, analyze_program, read_jsonl, run_episode, write_jsonl
from progagent_lib.harness.view import show_in_notebooks, trajectory_html
from progagent_lib.policy import OracleTeacher, ReplayPolicy

SCALES = ("v0", "v1", "v2", "v3")


@pytest.fixture(scope="module")
def teacher_runs(restock_task):
    """The teacher on restock_orders under every harness at every scale (12 episodes, a few seconds)."""
    return {(h, s): run_episode(restock_task, s, 0, h, OracleTeacher(h)) for h in ("dtc", "ptc", "hybrid") for s in SCALES}


@pytest.mark.parametrize("harness", ["dtc", "ptc", "hybrid"])
def test_teacher_solves_every_scale(teacher_runs, harness):
    for scale in SCALES:
        t = teacher_runs[harness, scale]
        assert (t.reward, t.score, t.end_reason, t.error) == (1.0, 1.0, "claim_done", ""), (scale, t.criteria)
        assert all(c["passed"] for c in t.criteria)
        assert t.runtime_errors == 0 and t.malformed_calls == 0


def test_context_cost_grows_with_scale_under_dtc_only(teacher_runs):
    dtc = [teacher_runs["dtc", s].tool_output_tokens for s in SCALES]
    ptc = [teacher_runs["ptc", s].tool_output_tokens for s in SCALES]
    assert dtc == sorted(dtc) and dtc[3] > 4 * dtc[0]          # every page and file enters the context
    assert max(ptc) < 2 * min(ptc)                              # only printed summaries do
    assert dtc[3] > 20 * ptc[3]
    # the same work is done either way: every task-tool call is counted, inside programs too
    assert teacher_runs["ptc", "v3"].tool_calls >= teacher_runs["dtc", "v3"].tool_calls
    assert teacher_runs["dtc", "v3"].model_tool_calls == teacher_runs["dtc", "v3"].tool_calls + 1  # + claim_done
    assert teacher_runs["ptc", "v3"].model_tool_calls == 4


def test_ptc_teacher_trajectory_shape(teacher_runs):
    t = teacher_runs["ptc", "v0"]
    assert [c.name for c in t.calls] == ["programmatic_tool_call"] * 3 + ["claim_done"]
    inspect, define, run, _ = t.calls
    assert "items in" in inspect.observation and inspect.task_tool_calls == 2
    assert define.program.functions >= 1 and define.program.loops >= 1
    assert "progagent_lib" not in define.arguments["code"]  # the kit is inlined for the confined kernel
    assert run.task_tool_calls > 20 and t.final_answer in run.observation  # solve() defined earlier is still there
    # OpenAI chat format: every tool message answers a call of the assistant turn before it
    ids = [c["id"] for m in t.messages if m["role"] == "assistant" for c in m["tool_calls"]]
    assert ids == [m["tool_call_id"] for m in t.messages if m["role"] == "tool"]
    assert all(m.get("reasoning_content") for m in t.messages if m["role"] == "assistant")
    assert json.loads(t.messages[2]["tool_calls"][0]["function"]["arguments"])["code"] == inspect.arguments["code"]


def test_hybrid_teacher_mixes_direct_calls_and_a_program(teacher_runs):
    t = teacher_runs["hybrid", "v2"]
    assert [c.kind for c in t.calls] == ["task_tool", "task_tool", "program", "claim_done"]


def test_trajectories_round_trip_through_json_lines(teacher_runs, tmp_path):
    path = tmp_path / "runs.jsonl"
    originals = [teacher_runs["ptc", "v0"], teacher_runs["dtc", "v0"]]
    write_jsonl(originals, path)
    with path.open("a") as f:
        f.write('{"task_id": "cut short by a kill')  # a writer killed mid-line
    with pytest.warns(UserWarning, match="not a whole trajectory"):
        back = read_jsonl(path)
    assert [t.to_dict() for t in back] == [t.to_dict() for t in originals]
    assert back[0].programs[1].functions == originals[0].programs[1].functions


def test_tool_call_limit_ends_the_episode_and_stops_the_teacher(restock_task):
    t = run_episode(restock_task, "v0", 0, "dtc", OracleTeacher("dtc"), Limits(max_tool_calls=5))
    assert t.end_reason == "max_tool_calls" and t.model_tool_calls == 5 and t.reward == 0.0
    assert t.final_answer is None and t.criteria  # the state as left is still judged


def test_turn_and_context_limits(restock_task):
    t = run_episode(restock_task, "v0", 0, "dtc", OracleTeacher("dtc"), Limits(max_turns=3))
    assert t.end_reason == "max_turns" and t.turns == 3
    t = run_episode(restock_task, "v0", 0, "dtc", OracleTeacher("dtc"), Limits(max_context_tokens=3000))
    assert t.end_reason == "max_context_tokens" and 3000 <= t.context_tokens < 3000 + 2000


CALL = '<tool_call>\n{{"name": "{name}", "arguments": {args}}}\n</tool_call>'


def test_malformed_and_wrong_calls_become_error_observations(restock_task):
    turns = [
        '<tool_call>\n{"name": "list_products", "arguments": {"page": 1</tool_call>',       # broken JSON
        CALL.format(name="drop_tables", args="{}"),                                            # no such tool
        CALL.format(name="list_products", args='{"page": 1}'),                                 # under PTC: refused
        "I give up.",                                                                          # no call: ends
    ]
    t = run_episode(restock_task, "v0", 0, "ptc", ReplayPolicy(turns))
    assert t.end_reason == "no_tool_call" and t.turns == 4 and t.final_answer == "I give up."
    assert [c.kind for c in t.calls] == ["malformed", "invalid", "invalid"]
    assert all(c.is_error for c in t.calls) and t.malformed_calls == 1 and t.tool_calls == 0
    assert "could not be read" in t.messages[3]["content"] and t.messages[3]["role"] == "user"
    assert "programmatic_tool_call" in t.calls[2].observation
    assert t.tool_output_tokens == sum(c.observation_tokens for c in t.calls) > 0


def test_runtime_errors_are_counted_and_the_kernel_keeps_state(restock_task):
    code1 = "rows = tools.list_products(page=1)['items']\\nprint(len(rows))"
    code2 = "print(rows[0]['sku'])\\nraise ValueError('boom')"
    code3 = "try:\\n    tools.get_supplier(supplier_id=-1)\\nexcept Exception as e:\\n    print('caught', type(e).__name__)"
    turns = [CALL.format(name="programmatic_tool_call", args=json.dumps({"code": c.replace("\\n", "\n")})) for c in (code1, code2, code3)]
    turns.append(CALL.format(name="claim_done", args='{"action": "done"}'))
    t = run_episode(restock_task, "v0", 0, "ptc", ReplayPolicy(turns))
    assert t.end_reason == "claim_done" and t.runtime_errors == 1 and t.reward == 0.0
    first, second, third, _ = t.calls
    assert first.observation.strip() == "20" and not first.is_error
    assert "SKU-" in second.observation and "boom" in second.observation and second.runtime_error
    assert "caught ToolError" in third.observation and not third.runtime_error and third.task_tool_calls == 1
    assert t.tool_calls == 2  # one list_products, one (failed) get_supplier


def test_program_structure_and_dtc_like_programs():
    assert analyze_program("print(tools.list_products(page=1))").dtc_like
    assert analyze_program("r = tools.read_file(path='a.md')\nprint(r)").dtc_like
    assert analyze_program("tools.list_files()").dtc_like
    selective = analyze_program("r = tools.list_products(page=1)\nprint(r['total'])")
    assert not selective.dtc_like and selective.tool_call_sites == 1
    looped = analyze_program(
        "out = []\nfor p in range(1, 4):\n    try:\n        out += tools['list_products'](page=p)['items']\n"
        "    except ToolError:\n        break\nlow = [x for x in out if x['on_hand'] < 3]\nprint(len(low) if low else 0)")
    assert (looped.loops, looped.try_blocks, looped.comprehensions, looped.conditionals) == (1, 1, 1, 2)
    assert looped.tool_names == ["list_products"] and not looped.dtc_like
    assert not analyze_program("def f(:\n").parsed


def test_html_view_shows_turns_code_and_sizes(teacher_runs):
    t = teacher_runs["ptc", "v0"]
    page = trajectory_html(t)
    assert page.count("<details>") >= 5 and "Turn 3" in page
    assert "tool-output tokens" in page and f"{t.calls[0].observation_tokens} tokens" in page
    assert "<span" in page and "solve" in page  # highlighted code
    formatter = DisplayFormatter()   # IPython's: what a notebook shows for a Trajectory
    assert show_in_notebooks(formatter) and formatter.format(t)[0]["text/html"] == page


def test_system_prompt_can_be_replaced_from_a_file(restock_task, tmp_path):
    prompt = tmp_path / "terse.md"
    prompt.write_text("Be brief. Use the tools.\n")
    t = run_episode(restock_task, "v0", 0, "dtc", ReplayPolicy(["Nothing to do."]), system_prompt=prompt)
    assert t.messages[0] == {"role": "system", "content": "Be brief. Use the tools."}
    assert t.end_reason == "no_tool_call" and t.final_answer == "Nothing to do." and t.tool_calls == 0


def test_programs_frame_lists_every_program_with_its_structure(teacher_runs):
    from progagent_lib.harness.summary import programs_frame

    frame = programs_frame([teacher_runs["ptc", "v0"], teacher_runs["hybrid", "v0"], teacher_runs["dtc", "v0"]])
    assert frame.height == 3 + 1 and set(frame["harness"]) == {"ptc", "hybrid"}
    assert frame["dtc_like"].sum() == 0 and frame["loops"].max() >= 1 and frame["task_tool_calls"].sum() > 40


def test_a_turn_mixing_good_and_broken_calls_keeps_tool_messages_first(restock_task):
    turn = CALL.format(name="list_products", args='{"page": 1}') + '<tool_call>{"name": "get_supplier", "arguments": {</tool_call>'
    t = run_episode(restock_task, "v0", 0, "dtc", ReplayPolicy([turn]))
    assert [m["role"] for m in t.messages[2:5]] == ["assistant", "tool", "user"]  # APIs want tool answers right after the call
    assert [c.kind for c in t.calls] == ["task_tool", "malformed"] and t.tool_calls == 1
    assert t.end_reason == "no_tool_call" and t.turns == 2
