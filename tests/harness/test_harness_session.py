"""Session.dispatch: the rules every front end (episode loop, MCP server, RL rollouts) shares."""
import json

import pytest

from progagent_lib.harness.session import Observation, Session, ToolCall


@pytest.fixture
def env(restock_task):
    env = restock_task.instantiate("v0", 0)
    yield env
    env.close()


def names(schemas):
    return [s["function"]["name"] for s in schemas]


def test_tool_lists_differ_by_harness(env):
    dtc, ptc, hybrid = (Session(env, h).tool_schemas() for h in ("dtc", "ptc", "hybrid"))
    assert "list_products" in names(dtc) and "programmatic_tool_call" not in names(dtc)
    assert names(ptc) == ["programmatic_tool_call", "terminal", "claim_done"]
    assert "list_products" in names(hybrid) and "programmatic_tool_call" in names(hybrid)


def test_dtc_runs_task_tools_and_reports_errors_without_raising(env):
    session = Session(env, "dtc")
    page = session.dispatch(ToolCall("list_products", {"page": 1}))
    assert not page.is_error and page.kind == "task_tool"
    assert json.loads(page.content)["page"] == 1 and page.value["page"] == 1
    assert page.task_tool_calls[0]["name"] == "list_products"
    text = session.dispatch(ToolCall("read_file", {"path": json.loads(session.dispatch(ToolCall("list_files", {})).content)["items"][0]["path"]}))
    assert not text.is_error and not text.content.startswith("{")  # text results are shown as text, not JSON
    bad_page = session.dispatch(ToolCall("list_products", {"page": 999}))
    assert bad_page.is_error and "past the last page" in bad_page.content
    unknown = session.dispatch(ToolCall("delete_everything", {}))
    assert unknown.is_error and "list_products" in unknown.content and unknown.task_tool_calls == []
    wrong_args = session.dispatch(ToolCall("get_supplier", {"id": 1}))
    assert wrong_args.is_error and "supplier_id" in wrong_args.content
    not_a_dict = session.dispatch(ToolCall("get_supplier", ["1"]))
    assert not_a_dict.is_error


def test_ptc_refuses_direct_task_calls_with_a_pointer_to_programs(env):
    obs = Session(env, "ptc").dispatch(ToolCall("list_products", {"page": 1}))
    assert obs.is_error and "programmatic_tool_call" in obs.content and "tools.list_products" in obs.content
    assert env.call_log == []  # nothing ran


def test_dtc_does_not_offer_programs(env):
    obs = Session(env, "dtc").dispatch(ToolCall("programmatic_tool_call", {"code": "print(1)"}))
    assert obs.is_error and "no tool named" in obs.content


def test_error_mode_off_hands_failures_back_as_ordinary_results(env):
    obs = Session(env, "dtc", error_mode="off").dispatch(ToolCall("get_supplier", {"supplier_id": -5}))
    assert not obs.is_error and "no supplier" in obs.content


def test_claim_done_verifies_and_ends_the_episode(env, restock_task):
    session = Session(env, "dtc")
    assert session.dispatch(ToolCall("claim_done", {})).is_error  # missing action
    answer = restock_task.oracle(env.tools)
    obs = session.dispatch(ToolCall("claim_done", {"action": answer}))
    assert obs.done and not obs.is_error and obs.verify.reward == 1.0
    assert session.done and session.final_answer == answer and session.result.reward == 1.0
    later = session.dispatch(ToolCall("list_products", {}))
    assert isinstance(later, Observation) and later.is_error and "ended" in later.content


def test_detect_mode_flags_error_shaped_results_of_direct_calls(env):
    # write_file returns {"path", "bytes"}: ordinary. An error-shaped text read back is flagged under "detect".
    env.tools.write_file(path="status.txt", content="Error: upstream service unavailable")
    detect, plain = Session(env, "dtc", error_mode="detect"), Session(env, "dtc")
    assert detect.dispatch(ToolCall("read_file", {"path": "status.txt"})).is_error
    assert not plain.dispatch(ToolCall("read_file", {"path": "status.txt"})).is_error
    assert not detect.dispatch(ToolCall("list_products", {"page": 1})).is_error


def test_programs_and_terminal_run_in_the_episode_kernel(env):
    with Session(env, "hybrid") as session:
        first = session.dispatch(ToolCall("programmatic_tool_call", {"code": "n = tools.list_products(page=1)['total']\nprint(n)"}))
        assert first.kind == "program" and not first.is_error and first.content.strip() == "60"
        assert [c["name"] for c in first.task_tool_calls] == ["list_products"]
        failed = session.dispatch(ToolCall("programmatic_tool_call", {"code": "print(n + 1)\n1 / 0"}))
        assert failed.is_error and failed.runtime_error and "61" in failed.content and "ZeroDivisionError" in failed.content
        shell = session.dispatch(ToolCall("terminal", {"command": "ls docs | head -n 1; exit 3"}))
        assert shell.kind == "terminal" and shell.is_error and shell.content.strip()
        bad = session.dispatch(ToolCall("programmatic_tool_call", {"source": "print(1)"}))
        assert bad.is_error and "'code'" in bad.content
    assert session.closed


@pytest.mark.parametrize("error_mode, flagged", [
    ("is_error", {"get_supplier": True, "read_file": False}),
    ("off", {"get_supplier": False, "read_file": False}),
    ("detect", {"get_supplier": True, "read_file": True})])
def test_direct_calls_and_calls_in_programs_share_one_error_mode(env, error_mode, flagged):
    # One place applies the error mode (the bridge's router): a direct call is flagged exactly when the same call
    # raises in a program, with the same message.
    env.tools.write_file(path="status.txt", content="Error: upstream service unavailable")
    calls = {"get_supplier": {"supplier_id": -5}, "read_file": {"path": "status.txt"}}
    with Session(env, "hybrid", error_mode=error_mode) as session:
        for name, arguments in calls.items():
            direct = session.dispatch(ToolCall(name, arguments))
            code = (f"try:\n    print(tools.{name}(**{arguments!r}))\n"
                    "except ToolError as exc:\n    print('Error:', exc)\n    print('[raised]')")
            program = session.dispatch(ToolCall("programmatic_tool_call", {"code": code}))
            assert direct.is_error == flagged[name] and not program.is_error
            assert program.content.strip() == direct.content.strip() + ("\n[raised]" if flagged[name] else "")
