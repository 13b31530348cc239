"""`progagent bench` on BFCL multi-turn: its entries played through our Episode under DTC and PTC, the scripted user
turns appended as BFCL defines them, scored by BFCL's own multi_turn_checker. No model: the ground-truth policy
replays BFCL's per-turn reference calls; a wrong call sequence must fail."""
from __future__ import annotations

import ast

import pytest

from progagent_lib.benchmarks import (SUITES, BenchmarkError, GroundTruthPolicy, bench_table, load_suite,  # noqa: E402
                                      run_benchmark)
from progagent_lib.benchmarks.base import ExternalEnvironment, ExternalTask, ExternalTool, Reference, SuiteInfo  # noqa: E402
from progagent_lib.benchmarks.bfcl import CHECKER, call_string, direct_verdict  # noqa: E402
from progagent_lib.benchmarks.ground_truth import GroundTruthEpisode  # noqa: E402
from progagent_lib.harness import run_episode  # noqa: E402
from progagent_lib.harness.episode import Limits  # noqa: E402
from progagent_lib.harness.trajectory import read_jsonl  # noqa: E402
from progagent_lib.harness.turn import ToolCall, Turn  # noqa: E402
from progagent_lib.task import Criterion, ToolError  # noqa: E402

BASE_0 = "bfcl/base/multi_turn_base_0"          # 4 user turns over the file system (and Twitter)
MISS_FUNC_0 = "bfcl/miss_func/multi_turn_miss_func_0"   # `sort` is held out until turn 3


@pytest.fixture(scope="module")
def bench():
    pytest.importorskip("bfcl_eval")
    return load_suite("bfcl")


class TwoUserTurns(ExternalEnvironment):
    """A scripted conversation of two user turns; passes iff the notes are exactly 'a' then 'b'."""

    def __init__(self, task):
        note = ExternalTool("note", "Write a note.", {"type": "object", "properties": {"text": {"type": "string"}},
                                                       "required": ["text"]})
        super().__init__([note], task=task, instruction="Write a note 'a'.")
        self.notes, self.pending = [], ["Now write a note 'b'."]

    def run_tool(self, name, arguments):
        self.notes.append(arguments["text"])
        return "ok"

    def next_user_message(self, reply):
        return self.pending.pop(0) if self.pending else None

    def criteria(self, final_response):
        return [Criterion("notes", self.notes == ["a", "b"], 1.0)]


class TwoUserTurnsTask(ExternalTask):
    id, group = "fake/two_turns/0", "two_turns"

    def instantiate(self, scale="v0", seed=0):
        return TwoUserTurns(self)


@pytest.mark.parametrize("ends_turn", ["text", "claim_done"])
def test_the_episode_appends_the_next_scripted_user_turn(ends_turn):
    # The model ends its first turn (a plain answer, or claim_done): the episode goes on with the user's next message.
    end = Turn(text="done") if ends_turn == "text" else _calls(("claim_done", {"action": "done"}),
                                                                      ("note", {"text": "not run"}))
    policy = Scripted([_calls(("note", {"text": "a"})), end, _calls(("note", {"text": "b"})),
                       _calls(("claim_done", {"action": "bye"}))])
    trajectory = run_episode(TwoUserTurnsTask(), harness="dtc", policy=policy)
    assert trajectory.reward == 1.0 and trajectory.end_reason == "claim_done" and trajectory.final_answer == "bye"
    users = [m["content"] for m in trajectory.messages if m["role"] == "user"]
    assert users == ["Write a note 'a'.", "Now write a note 'b'."]
    second = next(i for i, m in enumerate(trajectory.messages) if m["content"] == users[1])
    if ends_turn == "claim_done":   # the call after claim_done was answered, not run, and the user spoke next
        assert [m["role"] for m in trajectory.messages[second - 3:second]] == ["assistant", "tool", "tool"]
        assert trajectory.messages[second - 1]["content"].startswith("Not run")
    else:
        assert trajectory.messages[second - 1] == {"role": "assistant", "content": "done"}


def _bfcl_globals() -> list[str]:
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
    return [k for k in vars(multi_turn_utils) if k.startswith("progagent_")]


def test_ground_truth_passes_bfcls_own_check_under_dtc_and_ptc(bench, tmp_path):
    tasks = bench.select(limit=1)   # the first entry of each category
    assert [t.group for t in tasks] == ["base", "miss_func", "miss_param", "long_context"]
    out = tmp_path / "gt.jsonl"
    result = run_benchmark(bench, tasks, ["dtc", "ptc"], GroundTruthPolicy, out, progress=False)
    assert not result.failures
    assert [(t.task_id, t.harness) for t in result.trajectories if t.reward < 1.0] == []
    assert all(direct_verdict(t)["valid"] for t in tasks)   # the reference handed to the checker directly passes too
    assert _bfcl_globals() == []                             # the checker's cached backends were removed

    back = read_jsonl(out)
    assert len(back) == 8 and {t.criteria[0]["name"] for t in back} == {CHECKER}
    assert bench_table(back)["pass_rate"].to_list() == [1.0, 1.0]
    by_harness = {t.harness: t for t in back if t.task_id == BASE_0}
    turns = len(bench.tasks[BASE_0].entry["question"])
    for trajectory in by_harness.values():   # every scripted user turn was delivered, one after the other
        assert [m["role"] for m in trajectory.messages].count("user") == turns
    assert by_harness["ptc"].tool_calls == by_harness["dtc"].tool_calls == 10
    assert by_harness["ptc"].model_tool_calls == 2 * turns   # one program and one claim_done per user turn


class Scripted:
    """Plays the given turns in order."""

    name = "scripted"

    def __init__(self, turns: list[Turn]):
        self.turns = list(turns)

    def act(self, messages, tools):
        return self.turns.pop(0)


def _calls(*calls: tuple[str, dict]) -> Turn:
    return Turn(tool_calls=[ToolCall(name, arguments) for name, arguments in calls])


def test_a_wrong_call_sequence_fails_the_check(bench):
    task = bench.tasks[BASE_0]
    reference = task.reference()
    wrong_turns = [list(turn) for turn in reference.user_turns()]
    wrong_turns[0][1] = ("mkdir", {"dir_name": "tmp"})     # the reference makes 'temp'
    wrong = run_episode(task, harness="dtc", policy=_Replay(Reference(reference.calls, "", wrong_turns), "dtc"))
    assert wrong.reward == 0.0 and "instance_state_mismatch" in wrong.criteria[0]["detail"]

    # Answering the first turn in words only, then stopping early: BFCL's runner fails a conversation cut short.
    words = run_episode(task, harness="dtc", policy=Scripted([Turn(text="I cannot do that.")] * 2 + [
        _calls(("claim_done", {"action": "bye"}))] * 2))
    assert words.reward == 0.0 and "empty_turn_model_response" in words.criteria[0]["detail"]
    assert [m["role"] for m in words.messages].count("user") == 4
    cut = run_episode(task, harness="dtc", policy=Scripted([_calls(("cd", {"folder": "document"}))]),
                      limits=Limits(max_turns=1))
    assert cut.end_reason == "max_turns" and "force_terminated" in cut.criteria[0]["detail"]
    assert _bfcl_globals() == []


class _Replay:
    name = "replay"

    def __init__(self, reference: Reference, harness: str):
        self.reference, self.harness = reference, harness

    def start_episode(self, task, params=None):
        return GroundTruthEpisode(self.reference, self.harness)


def test_two_rollouts_of_one_entry_do_not_share_state(bench):
    task = bench.tasks[BASE_0]
    first, second = task.instantiate(), task.instantiate()
    try:
        first.tools.cd(folder="document")
        first.tools.mkdir(dir_name="temp")
        assert "temp" in first.tools.ls()["current_directory_content"]
        second.tools.cd(folder="document")
        assert "temp" not in second.tools.ls()["current_directory_content"]
        assert first.calls_per_turn == [["cd(folder='document')", "mkdir(dir_name='temp')", "ls()"]]
        with pytest.raises(ToolError, match="no tool named"):
            first.call_tool("os_system", {"cmd": "id"})
    finally:
        first.close()
        second.close()
    # Two full episodes of one entry both pass: the checker's cached backends do not leak from one to the other.
    for _ in range(2):
        assert run_episode(task, harness="dtc", policy=GroundTruthPolicy("dtc")).reward == 1.0
    assert _bfcl_globals() == []


def test_a_held_out_function_is_offered_only_from_its_turn(bench):
    task = bench.tasks[MISS_FUNC_0]
    assert task.held_out == {3: ["sort"]}
    env = task.instantiate()
    try:
        assert "sort" not in {s["function"]["name"] for s in env.tool_schemas()}
        with pytest.raises(ToolError, match="no tool named 'sort'"):
            env.call_tool("sort", {"file_name": "final_report.pdf"})
        messages = [env.next_user_message("ok") for _ in range(3)]
        assert messages[-1] == "I have updated some more functions you can choose from. What about now?"
        assert "sort" in {s["function"]["name"] for s in env.tool_schemas()}
        assert env.next_user_message("ok").startswith("Move 'previous_report.pdf'")
        assert env.next_user_message("ok") is None   # after the last of the 5 user turns
    finally:
        env.close()
    # Under PTC the held-out function is also missing from the program tool's documentation until its turn.
    trajectory = run_episode(task, harness="ptc", policy=GroundTruthPolicy("ptc"))
    assert trajectory.reward == 1.0
    described = trajectory.tools[0]["function"]["description"]
    assert "tools.sort(" in described   # the last tool list the episode offered


def test_call_strings_keep_model_text_a_literal():
    nasty = "x'); __import__('os').system('id'); print('"
    text = call_string("echo", {"content": nasty, "file_name": "a(b).txt"})
    call = ast.parse(text, mode="eval").body
    assert isinstance(call, ast.Call) and call.func.id == "echo" and not call.args
    assert [ast.literal_eval(k.value) for k in call.keywords] == [nasty, "a(b).txt"]
    with pytest.raises(ValueError):
        call_string("echo", {"content); os.system('id'); (x": 1})


def test_bad_input_says_what_to_do(bench, monkeypatch):
    with pytest.raises(BenchmarkError, match="unknown BFCL multi-turn categor"):
        load_suite("bfcl", suites=["parallel"])
    with pytest.raises(BenchmarkError, match="unknown task id"):
        bench.select(["bfcl/base/multi_turn_base_999"])
    monkeypatch.setitem(SUITES, "bfcl_missing", SuiteInfo("bfcl_missing", "progagent_lib.benchmarks.bfcl",
                                                          "no_such_bfcl_xyz", SUITES["bfcl"].pip_package, "test"))
    with pytest.raises(BenchmarkError, match=r"pip install --no-deps bfcl-eval==2026\.3\.23 mpmath"):
        load_suite("bfcl_missing")


def test_cli_runs_bfcl_and_refuses_bad_input(tmp_path, capsys):
    from progagent_lib.cli import main

    assert main(["bench", "list"]) == 0
    assert "bfcl-eval==2026.3.23" in capsys.readouterr().out
    assert main(["bench", "run", "bfcl", "--category", "nope", "--no-progress"]) == 2
    assert "unknown BFCL multi-turn categor" in capsys.readouterr().err
    out = tmp_path / "run.jsonl"
    code = main(["bench", "run", "bfcl", "--category", "base", "--limit", "1", "--harness", "dtc,ptc",
                 "--out", str(out), "--no-progress"])
    assert code == 0 and "pass_rate" in capsys.readouterr().out
    assert {(t.harness, t.reward) for t in read_jsonl(out)} == {("dtc", 1.0), ("ptc", 1.0)}


@pytest.mark.slow
def test_ground_truth_on_a_100_task_sample(bench):
    """BFCL's reference reaches its own checker under DTC and PTC on >= 95% of the first 25 entries of each category,
    and wherever it passes when handed to the checker directly."""
    tasks = bench.select(limit=25)
    assert len(tasks) == 100
    direct = {t.id for t in tasks if direct_verdict(t)["valid"]}
    result = run_benchmark(bench, tasks, ["dtc", "ptc"], GroundTruthPolicy, progress=False)
    assert not result.failures
    table = bench_table(result.trajectories)
    print(table, bench_table(result.trajectories, ("harness", "group")))
    assert all(rate >= 0.95 for rate in table["pass_rate"].to_list())
    missed = [(t.task_id, t.harness) for t in result.trajectories if t.reward < 1.0 and t.task_id in direct]
    assert missed == []
