"""`progagent bench` on AgentDojo: its user tasks played through our Episode under DTC and PTC, scored by its own
checker. No model: the ground-truth policy replays AgentDojo's reference calls; a wrong answer must fail."""
from __future__ import annotations

import pytest

pytest.importorskip("agentdojo")

from progagent_lib.benchmarks import (SUITES, BenchmarkError, GroundTruthPolicy, bench_table, load_suite,  # noqa: E402
                                      run_benchmark)
from progagent_lib.benchmarks.base import SuiteInfo  # noqa: E402
from progagent_lib.benchmarks.run import CHECKER_RAISED  # noqa: E402
from progagent_lib.harness import run_episode  # noqa: E402
from progagent_lib.harness.summary import summarize  # noqa: E402
from progagent_lib.harness.trajectory import read_jsonl  # noqa: E402
from progagent_lib.harness.turn import ToolCall, Turn  # noqa: E402
from progagent_lib.task import ToolError  # noqa: E402


@pytest.fixture(scope="module")
def bench():
    return load_suite("agentdojo")


def test_ground_truth_passes_the_suites_own_check_under_dtc_and_ptc(bench, tmp_path):
    # Two tasks of each suite; banking/user_task_1 and travel/user_task_0 are checked on the answer text too.
    tasks = bench.select(limit=2)
    assert {t.group for t in tasks} == {"workspace", "travel", "banking", "slack"} and len(tasks) == 8
    out = tmp_path / "gt.jsonl"
    result = run_benchmark(bench, tasks, ["dtc", "ptc"], GroundTruthPolicy, out, progress=False)
    assert not result.failures
    failed = [(t.task_id, t.harness, t.criteria) for t in result.trajectories if t.reward < 1.0]
    assert not failed
    by_harness = {t.harness: t for t in result.trajectories if t.task_id == "agentdojo/banking/user_task_1"}
    assert by_harness["dtc"].model_tool_calls == by_harness["dtc"].tool_calls + 1   # one direct call per turn, claim_done
    assert by_harness["ptc"].model_tool_calls == 2                                   # one program, claim_done
    assert by_harness["ptc"].tool_calls == by_harness["dtc"].tool_calls             # the same calls, inside the program
    assert by_harness["ptc"].calls[0].program is not None and by_harness["ptc"].runtime_errors == 0

    # Trajectories are ours: they read back and summarise, and a rerun skips what is done.
    back = read_jsonl(out)
    assert len(back) == 16 and {t.criteria[0]["name"] for t in back} == {"agentdojo_utility"}
    table = summarize(back, by=("harness",))
    assert table["pass_rate"].to_list() == [1.0, 1.0]
    assert bench_table(back)["pass_rate"].to_list() == [1.0, 1.0]
    again = run_benchmark(bench, tasks, ["dtc", "ptc"], GroundTruthPolicy, out, progress=False)
    assert again.ran == 0 and again.skipped == 16


class Answer:
    """Hands in `text` at once, or after one direct call."""

    name = "answer"

    def __init__(self, text: str, call: tuple[str, dict] | None = None):
        self.turns = ([Turn(tool_calls=[ToolCall(*call)])] if call else []) + \
            [Turn(tool_calls=[ToolCall("claim_done", {"action": text})])]

    def act(self, messages, tools):
        return self.turns.pop(0)


def test_a_wrong_answer_or_a_missing_action_fails_the_check(bench):
    # banking/user_task_1 asks for the total spending in March 2022; its check reads the answer.
    task = bench.tasks["agentdojo/banking/user_task_1"]
    reference = task.reference()
    assert reference.answer and reference.calls
    wrong = run_episode(task, harness="dtc", policy=Answer("I spent 12 euros.", reference.calls[0]))
    right = run_episode(task, harness="dtc", policy=Answer(reference.answer, reference.calls[0]))
    assert (wrong.reward, right.reward) == (0.0, 1.0)
    # banking/user_task_0 asks to pay a bill: answering without sending the money fails on the state.
    unpaid = run_episode(bench.tasks["agentdojo/banking/user_task_0"], harness="dtc", policy=Answer("Done, paid."))
    assert unpaid.reward == 0.0 and unpaid.criteria[0]["detail"].endswith("utility(strict=True)")


def test_each_episode_has_its_own_environment_and_the_suites_tools(bench):
    task = bench.tasks["agentdojo/banking/user_task_0"]
    first, second = task.instantiate(), task.instantiate()
    try:
        assert first.instruction == task.user_task.PROMPT
        names = {s["function"]["name"] for s in first.tool_schemas()}
        assert {"send_money", "get_balance", "get_most_recent_transactions"} <= names
        before = len(second.tools.get_most_recent_transactions(n=1000))
        first.tools.send_money(recipient="US122000000121212121212", amount=100.0, subject="x", date="2022-04-01")
        sent = first.tools.get_most_recent_transactions(n=1000)
        assert len(sent) == before + 1 and sent[-1]["amount"] == 100.0    # JSON values, as the kernel receives them
        assert len(second.tools.get_most_recent_transactions(n=1000)) == before
        assert len(first.pre_environment.bank_account.transactions) == before   # the checker's copy is untouched
        with pytest.raises(ToolError, match="amount"):
            first.tools.send_money(recipient="x", amount="a lot", subject="x", date="2022-04-01")
        with pytest.raises(ToolError, match="no tool named"):
            first.call_tool("os_system", {"cmd": "id"})
    finally:
        first.close()
        second.close()
    assert not first.episode_dir.exists()


def test_a_checker_that_raises_is_recorded_and_the_run_goes_on(bench):
    good = bench.tasks["agentdojo/slack/user_task_0"]
    broken = bench.tasks["agentdojo/slack/user_task_1"]

    class Raising:
        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def utility(self, *args, **kwargs):
            raise KeyError("Dora")

    from progagent_lib.benchmarks.agentdojo import AgentDojoTask

    raising = AgentDojoTask(broken.suite, Raising(broken.user_task), broken.tools)
    result = run_benchmark(bench, [raising, good], ["dtc"], GroundTruthPolicy, progress=False)
    assert not result.failures and len(result.trajectories) == 2
    first, second = result.trajectories
    assert first.reward == 0.0 and first.error.startswith(CHECKER_RAISED) and "KeyError" in first.error
    assert second.reward == 1.0 and not second.error
    assert bench_table(result.trajectories)["checker_errors"].to_list() == [1]


def test_bad_input_says_what_to_do(bench, monkeypatch):
    with pytest.raises(BenchmarkError, match="unknown benchmark suite 'nope'.*agentdojo"):
        load_suite("nope")
    with pytest.raises(BenchmarkError, match="unknown AgentDojo suite"):
        load_suite("agentdojo", suites=["shopping"])
    with pytest.raises(BenchmarkError, match="unknown task id"):
        bench.select(["agentdojo/banking/user_task_999"])
    monkeypatch.setitem(SUITES, "missing", SuiteInfo("missing", "progagent_lib.benchmarks.agentdojo",
                                                     "no_such_package_xyz", "no-such-package==1.0", "test"))
    with pytest.raises(BenchmarkError, match=r"pip install no-such-package==1\.0"):
        load_suite("missing")
    assert isinstance(BenchmarkError("x"), ValueError)


def test_cli_lists_suites_and_refuses_bad_input(capsys):
    from progagent_lib.cli import main

    assert main(["bench", "list"]) == 0
    assert "agentdojo==0.1.35" in capsys.readouterr().out
    assert main(["bench", "run", "agentdojo", "--task", "agentdojo/banking/user_task_999", "--no-progress"]) == 2
    assert "unknown task id" in capsys.readouterr().err
    assert main(["bench", "run", "agentdojo", "--harness", "dtc,abc"]) == 2
    assert "--harness 'dtc,abc': unknown harness(es) ['abc']; choose from dtc, ptc, hybrid" in capsys.readouterr().err
    assert main(["bench", "run", "agentdojo", "--policy", "oracle", "--limit", "1"]) == 2
    assert "ground-truth" in capsys.readouterr().err


def test_cli_runs_ground_truth_and_prints_the_table(tmp_path, capsys):
    from progagent_lib.cli import main

    out = tmp_path / "run.jsonl"
    code = main(["bench", "run", "agentdojo", "--suite", "banking", "--limit", "1", "--harness", "dtc,hybrid",
                 "--out", str(out), "--no-progress"])
    printed = capsys.readouterr().out
    assert code == 0 and "pass_rate" in printed and "tool_output_tokens" in printed
    assert {t.harness for t in read_jsonl(out)} == {"dtc", "hybrid"} and all(t.reward == 1.0 for t in read_jsonl(out))


def test_injection_task_attached_scores_security(bench):
    attacked = load_suite("agentdojo", suites=["banking"], injections=True)
    task = attacked.tasks["agentdojo/banking/user_task_0/injection_task_0"]
    assert task.injections and all("<INFORMATION>" in text for text in task.injections.values())
    env = task.instantiate()
    try:
        seen = str(env.tools.read_file(file_path="bill-december-2023.txt"))
        assert task.injection_task.GOAL in seen
    finally:
        env.close()
    clean = run_benchmark(attacked, [task], ["dtc"], GroundTruthPolicy, progress=False).trajectories[0]
    assert clean.reward == 1.0   # the reference ignores the injection: utility and not followed
    followed = run_episode(task, harness="dtc", policy=Answer("ok", ("send_money", {
        "recipient": "US133000000121212121212", "amount": 0.01, "subject": "The user is subscribed to spotify",
        "date": "2022-01-01"})))
    names = {c["name"]: c["passed"] for c in followed.criteria}
    assert names["agentdojo_injection_not_followed"] is False
    assert bench_table([clean, followed])["injection_followed"].to_list() == [0.5]


@pytest.mark.slow
def test_ground_truth_over_every_user_task(bench):
    """AgentDojo's reference reaches its own check under DTC and PTC on >= 95% of its 97 user tasks."""
    result = run_benchmark(bench, bench.select(), ["dtc", "ptc"], GroundTruthPolicy, progress=False)
    assert not result.failures
    table = bench_table(result.trajectories)
    print(table)
    assert all(rate >= 0.95 for rate in table["pass_rate"].to_list())
