"""The MCP server steps the same `Episode` as `progagent run`: a teacher episode played over MCP (stdio and HTTP,
the project's own client) is the same trajectory; budgets, observation cuts and the episode's end apply over MCP;
one definition of errored, truncated and the batch summary."""
import json
import socket
import subprocess
import time

import pytest

from progagent_lib.harness import Limits, read_jsonl, run_episode
from progagent_lib.harness.mcp_server import build_server, serve_command
from progagent_lib.policy import OracleTeacher
from progagent_lib.runtime.mcp_client import MCPToolSource

from conftest import REPO

SCALE, SEED = "v0", 0


def text(result) -> str:
    return "\n".join(block.text for block in result.content)


def play_teacher_over_mcp(source: MCPToolSource, task, harness: str) -> int:
    """The oracle teacher as an external model: each of its turns is sent as an MCP tool call, and it reads the
    replies' text as its tool messages (the server's tool list is what it is offered). Returns the calls made."""
    tools = [spec.openai_schema() for spec in source.tool_specs.values()]
    agent = OracleTeacher(harness).start_episode(task, task.params_for(SEED))
    messages: list[dict] = []
    try:
        while True:
            turn = agent.act(messages, tools)
            (call,) = turn.tool_calls
            result = source.call_tool(call.name, call.arguments)
            messages.append({"role": "assistant", "content": "", "tool_calls": [
                {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": json.dumps(call.arguments)}}]})
            messages.append({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": text(result)})
            if call.name == "claim_done":
                assert not result.is_error and result.structured_content["reward"] == 1.0, text(result)
                return len(messages) // 2
    finally:
        agent.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_over_http(argv: list[str], port: int) -> subprocess.Popen:
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while True:
        assert proc.poll() is None, f"progagent serve exited early:\n{proc.stderr.read()}"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            assert time.monotonic() < deadline, "progagent serve did not listen within 120 s"
            time.sleep(0.2)


@pytest.mark.parametrize("transport, harness", [("stdio", "ptc"), ("http", "ptc"), ("stdio", "dtc"), ("http", "dtc")])
def test_a_teacher_episode_over_mcp_is_the_trajectory_progagent_run_writes(restock_task, tmp_path, transport, harness):
    path = tmp_path / "mcp.jsonl"
    argv = serve_command(restock_task, scale=SCALE, seed=SEED, harness=harness, transport=transport, trajectory=path)
    if transport == "stdio":
        with MCPToolSource(argv, cwd=REPO) as source:
            calls = play_teacher_over_mcp(source, restock_task, harness)
    else:
        port = free_port()
        proc = serve_over_http(argv + ["--port", str(port)], port)
        try:
            with MCPToolSource(f"http://127.0.0.1:{port}/mcp") as source:
                calls = play_teacher_over_mcp(source, restock_task, harness)
        finally:
            proc.terminate()
            assert proc.wait(timeout=60) == 143
    (served,) = read_jsonl(path)  # written once, at claim_done; the shutdown adds nothing
    ran = run_episode(restock_task, SCALE, SEED, harness, OracleTeacher(harness), Limits.for_task(restock_task))

    assert (served.task_id, served.scale, served.seed, served.harness, served.policy) == \
        (ran.task_id, ran.scale, ran.seed, ran.harness, "mcp")
    assert (served.reward, served.score, served.end_reason, served.final_answer) == \
        (ran.reward, ran.score, ran.end_reason, ran.final_answer) == (1.0, 1.0, "claim_done", ran.final_answer)
    assert served.criteria == ran.criteria
    assert [(c.name, c.arguments) for c in served.calls] == [(c.name, c.arguments) for c in ran.calls]
    assert len(served.calls) == calls
    assert (served.tool_calls, served.model_tool_calls, served.turns, served.runtime_errors, served.malformed_calls) == \
        (ran.tool_calls, ran.model_tool_calls, ran.turns, ran.runtime_errors, ran.malformed_calls)
    assert [c.observation for c in served.calls] == [c.observation for c in ran.calls]
    assert [c.observation_tokens for c in served.calls] == [c.observation_tokens for c in ran.calls]
    assert served.tool_output_tokens == ran.tool_output_tokens > 0
    assert served.programs == ran.programs and (len(served.programs) == 3 if harness == "ptc" else not served.programs)
    assert [(c.kind, c.task_tool_calls, c.is_error) for c in served.calls] == \
        [(c.kind, c.task_tool_calls, c.is_error) for c in ran.calls]
    # what the model was shown before its first turn, and the tools it was offered
    assert served.messages[:2] == ran.messages[:2] and served.tools == ran.tools
    assert (served.instruction, served.params) == (ran.instruction, ran.params)
    # the server sees no text of the model: its context counts the calls' arguments and observations only
    assert 0 < served.context_tokens <= ran.context_tokens


def test_a_budget_ends_the_mcp_episode_as_it_ends_progagent_run(restock_task, tmp_path):
    path = tmp_path / "cut.jsonl"
    limits = Limits(max_tool_calls=3)
    with build_server(restock_task, scale=SCALE, seed=SEED, harness="dtc", limits=limits, trajectory=path) as server:
        first = server.call("list_products", {"page": 1})
        assert not first.is_error and first.structured_content["page"] == 1
        server.call("list_products", {"page": 2})
        last = server.call("get_supplier", {"supplier_id": 1})
        assert not last.is_error and "max_tool_calls" in text(last)
        assert last.structured_content["end_reason"] == "max_tool_calls" and last.structured_content["reward"] == 0.0
        later = server.call("list_products", {"page": 3})
        assert later.is_error and "ended (max_tool_calls" in text(later)
        claim = server.call("claim_done", {"action": "too late"})
        assert claim.is_error and "reward" not in json.dumps(claim.model_dump())
    (served,) = read_jsonl(path)
    ran = run_episode(restock_task, SCALE, SEED, "dtc", OracleTeacher("dtc"), limits)
    assert served.end_reason == ran.end_reason == "max_tool_calls" and served.truncated and ran.truncated
    assert served.model_tool_calls == ran.model_tool_calls == 3 and served.reward == ran.reward == 0.0
    assert served.final_answer is None and served.criteria  # the state as left is judged


def test_observations_are_cut_over_mcp_as_in_the_episode(restock_task, tmp_path):
    limits = Limits(max_observation_chars=400)
    with build_server(restock_task, scale=SCALE, seed=SEED, harness="hybrid", limits=limits,
                      trajectory=tmp_path / "t.jsonl") as server:
        page = server.call("list_products", {"page": 1})          # ~4,400 characters of JSON
        program = server.call("programmatic_tool_call", {"code": "print('x' * 5000)"})
        supplier = server.call("get_supplier", {"supplier_id": 1})  # ~110: whole
    for result in (page, program):
        assert "more characters cut]" in text(result) and len(text(result)) < 400 + 60
    assert page.structured_content is None  # the whole page as data would carry what the cut kept out
    assert "cut]" not in text(supplier) and supplier.structured_content["id"] == 1
    (served,) = read_jsonl(tmp_path / "t.jsonl")
    assert served.end_reason == "client_closed"
    assert [c.observation for c in served.calls] == [text(page), text(program), text(supplier)]


def test_a_client_that_leaves_ends_the_episode_and_it_is_written(restock_task, tmp_path):
    path = tmp_path / "left.jsonl"
    with build_server(restock_task, scale=SCALE, seed=SEED, harness="ptc", trajectory=path) as server:
        ran = server.call("programmatic_tool_call", {"code": "print(tools.list_products(page=1)['total'])"})
        assert not ran.is_error and text(ran).strip() == "60"
    assert server.trajectory is not None and server.episode.session.closed
    (served,) = read_jsonl(path)
    assert served.end_reason == "client_closed" and not served.errored and not served.truncated
    assert served.turns == served.model_tool_calls == 1 and served.tool_calls == 1 and served.reward == 0.0
    assert served.policy == "mcp" and served.criteria
    # without a trajectory file an abandoned episode is only released
    with build_server(restock_task, scale=SCALE, seed=SEED, harness="dtc") as quiet:
        quiet.call("list_products", {"page": 1})
    assert quiet.trajectory is None and quiet.episode.session.closed


def test_one_definition_of_errored_truncated_and_the_batch_summary():
    from progagent_lib.harness.end_reasons import END_REASONS, is_errored, is_truncated
    from progagent_lib.harness.summary import episode_summary, is_infra_error, summarize
    from progagent_lib.harness.trajectory import Trajectory
    from progagent_lib.train.rollout import EpisodeTokens, rollout_summary

    errored = {r for r in END_REASONS if is_errored(r)}
    truncated = {r for r in END_REASONS if is_truncated(r)}
    assert errored == {"policy_error"} and truncated == {"max_turns", "max_tool_calls", "max_context_tokens", "turn_cut"}
    runs = [Trajectory("a/b", "v0", 0, "ptc", "p", sample=i, end_reason=reason, reward=float(reason == "claim_done"),
                       score=0.5 + 0.5 * (reason == "claim_done"), tool_output_tokens=100 * (i + 1), tool_calls=i,
                       model_tool_calls=i + 1, turns=i + 2, runtime_errors=i % 2)
            for i, reason in enumerate(["claim_done", "max_turns", "policy_error", "no_tool_call", "claim_done"])]
    for t in runs:
        assert t.errored == is_infra_error(t) == is_errored(t.end_reason)
        assert t.truncated == is_truncated(t.end_reason)
    summary = episode_summary(runs)
    assert summary["episodes"] == 5 and summary["errored_episodes"] == 1
    assert summary["mean_reward"] == summary["pass_rate"] == 0.5 and summary["truncation_rate"] == 0.25
    assert summary["end_reasons"] == {"claim_done": 2, "max_turns": 1, "policy_error": 1, "no_tool_call": 1}
    # the same means as the per-group table; a training batch logs this summary, plus its tokens and seconds
    row = summarize(runs).row(0, named=True)
    assert (row["pass_rate"], row["mean_score"], row["tool_output_tokens"], row["turns"]) == \
        (summary["pass_rate"], summary["mean_score"], summary["tool_output_tokens_per_episode"], summary["turns_per_episode"])
    trained = rollout_summary([EpisodeTokens(prompt_ids=[], trajectory=t) for t in runs])
    assert {k: trained[k] for k in summary} == summary and trained["generated_tokens"] == 0
    empty = episode_summary([])
    assert empty["episodes"] == 0 and empty["mean_reward"] == 0.0 and empty["end_reasons"] == {}


def test_serve_takes_the_budgets_of_progagent_run(restock_task):
    import argparse
    from dataclasses import replace

    from progagent_lib.harness import serve_cli

    parser = argparse.ArgumentParser()
    serve_cli.register(parser.add_subparsers())
    args = parser.parse_args(["serve", "--task", str(restock_task.root), "--max-tool-calls", "7", "--max-turns", "0",
                              "--trajectory", "runs/mcp.jsonl"])
    assert args.trajectory == "runs/mcp.jsonl"
    assert serve_cli.limits_from_args(restock_task, args) == \
        replace(Limits.for_task(restock_task), max_tool_calls=7, max_turns=None)
    plain = parser.parse_args(["serve", "--task", str(restock_task.root)])
    assert serve_cli.limits_from_args(restock_task, plain) == Limits.for_task(restock_task)
