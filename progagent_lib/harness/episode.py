"""The episode loop: one task, one policy, one harness, until claim_done, a silent turn or a limit.

The loop is the same for DTC, PTC and Hybrid; what differs (the tools offered, the system prompt,
whether task tools are direct calls) is data in `spec.py`, applied by `Session`.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .metrics import TokenCounter, analyze_program
from .session import Observation, Session, ToolCall
from .spec import PROGRAMMATIC_TOOL_CALL, HarnessSpec, get_harness
from .trajectory import CallRecord, Trajectory

if TYPE_CHECKING:
    from ..task import Task


@dataclass(frozen=True)
class Limits:
    """When an episode is cut off. None means no limit."""

    max_tool_calls: int | None = 100        # tool calls the model issues (a program counts once), as in the paper
    max_turns: int | None = 200             # assistant turns
    max_context_tokens: int | None = 131_072  # prompt + everything generated and observed so far

    @classmethod
    def for_task(cls, task: "Task") -> "Limits":
        """Defaults, overridden by the task's `[limits]` table in task.toml."""
        known = {k: v for k, v in (task.limits or {}).items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def with_overrides(self, **overrides: Any) -> "Limits":
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})


def parse_error_feedback(problem: str) -> str:
    """What the model reads after a tool-call block that could not be parsed (also used by GSPO rollouts)."""
    return (f"Error: your tool call could not be read: {problem} No tool was run; "
            "write the call again in the expected format.")


def tool_budget_message(max_tool_calls: int) -> str:
    """What the model reads for a call made after the episode's tool-call budget ran out."""
    return f"Not run: the limit of {max_tool_calls} tool calls was reached."


class PolicyError(RuntimeError):
    """A policy could not produce a turn (e.g. a remote API kept failing); the episode ends, recorded."""


def run_episode(task: "Task", scale: str = "v0", seed: int = 0, harness: str | HarnessSpec = "ptc", policy: Any = None,
                limits: Limits | None = None, *, sample: int = 0, error_mode: str = "is_error",
                system_prompt: str | None = None, session_kwargs: dict | None = None, tokenizer: Any = None) -> Trajectory:
    """Run one episode and return its trajectory.

    `policy` answers `act(messages, tools) -> PolicyTurn`; it may offer `start_episode(task)` returning
    a per-episode policy (the oracle teacher does), `tokenizer` (to count tokens exactly) and
    `default_limits`. `limits` defaults to the policy's `default_limits`, else the task's limits.
    `system_prompt` is a file whose text replaces the harness's prompt; `session_kwargs` go to
    `Session` (and on to `PTCRuntime`: timeout, pool, max_output_chars, ...). `tokenizer` counts
    tokens instead of the policy's (e.g. to measure the teacher's context cost in a model's tokens).

    Without claim_done, the verifier judges the state as left, with the last plain-text answer (if the
    episode ended on a turn without a tool call) or an empty answer (if a limit ended it).
    """
    if policy is None:
        raise ValueError("run_episode needs a policy, e.g. OracleTeacher(harness) or make_policy('oracle', harness)")
    spec = get_harness(harness) if isinstance(harness, str) else harness
    limits = limits or getattr(policy, "default_limits", None) or Limits.for_task(task)
    count = TokenCounter(tokenizer if tokenizer is not None else getattr(policy, "tokenizer", None))
    trajectory = Trajectory(task_id=task.id, scale=scale, seed=seed, harness=spec.name,
                            policy=getattr(policy, "name", type(policy).__name__), sample=sample,
                            token_counter=count.name)
    started = time.perf_counter()
    env = task.instantiate(scale, seed)
    agent = policy.start_episode(task) if hasattr(policy, "start_episode") else policy
    try:
        with Session(env, spec, error_mode=error_mode, **(session_kwargs or {})) as session:
            tools = session.tool_schemas()
            messages = [{"role": "system", "content": session.system_prompt(system_prompt)},
                        {"role": "user", "content": task.prompt}]
            trajectory.tools, trajectory.messages = tools, messages
            context_tokens = count(messages[0]["content"]) + count(task.prompt) + count(json.dumps(tools))
            final_response = ""
            used_ids: set[str] = set()

            while True:
                if limits.max_turns is not None and trajectory.turns >= limits.max_turns:
                    trajectory.end_reason = "max_turns"
                    break
                if limits.max_context_tokens is not None and context_tokens >= limits.max_context_tokens:
                    trajectory.end_reason = "max_context_tokens"
                    break
                try:
                    turn = agent.act(messages, tools)
                except PolicyError as exc:
                    trajectory.end_reason, trajectory.error = "policy_error", str(exc)
                    break
                turn_index = trajectory.turns
                trajectory.turns += 1
                calls = _with_unique_ids(turn.tool_calls, turn_index, used_ids)
                messages.append(_assistant_message(turn, calls))
                context_tokens += count(turn.text) + count(getattr(turn, "reasoning", "") or "") + \
                    sum(count(json.dumps(c.arguments, ensure_ascii=False)) for c in calls)
                # The policy may know the exact size so far (its own tokenizer, a server's usage report).
                reported = (getattr(turn, "prompt_tokens", None) or 0) + (getattr(turn, "completion_tokens", None) or 0)
                context_tokens = max(context_tokens, reported)

                if not calls and not turn.parse_errors:
                    trajectory.end_reason, final_response = "no_tool_call", turn.text
                    break

                for call in calls:
                    if limits.max_tool_calls is not None and trajectory.model_tool_calls >= limits.max_tool_calls:
                        messages.append(_tool_message(call, tool_budget_message(limits.max_tool_calls)))
                        continue
                    observation = session.dispatch(call)
                    messages.append(_tool_message(call, observation.content))
                    tokens = count(observation.content)
                    context_tokens += tokens
                    trajectory.model_tool_calls += 1
                    _record(trajectory, _call_record(turn_index, call, observation, tokens))

                # A block the parser could not read is answered like a failed call, and the episode goes on.
                # The answer comes after the tool messages: APIs want those right after the assistant turn.
                for problem in turn.parse_errors:
                    feedback = parse_error_feedback(problem)
                    messages.append({"role": "user", "content": feedback})
                    tokens = count(feedback)
                    context_tokens += tokens
                    trajectory.malformed_calls += 1
                    _record(trajectory, CallRecord(turn_index, "<malformed>", {}, feedback, tokens, 0.0, True, "malformed"))

                if session.done:
                    trajectory.end_reason = "claim_done"
                    break
                if limits.max_tool_calls is not None and trajectory.model_tool_calls >= limits.max_tool_calls:
                    trajectory.end_reason = "max_tool_calls"
                    break

            # Without claim_done the verifier judges the state as left, with the last plain answer (if any).
            verdict = session.result if session.done else env.verify(final_response)
            trajectory.final_answer = session.final_answer if session.done else (final_response or None)
            trajectory.reward, trajectory.score = verdict.reward, verdict.score
            trajectory.criteria = verdict.to_dict()["criteria"]
            trajectory.context_tokens = context_tokens
    finally:
        if agent is not policy and hasattr(agent, "close"):  # a per-episode player; the policy itself lives on
            agent.close()
        env.close()
    trajectory.seconds = time.perf_counter() - started
    return trajectory


def _with_unique_ids(calls: list[ToolCall], turn_index: int, used: set[str]) -> list[ToolCall]:
    """Every call needs an id that its tool message answers; ids from the parser repeat across turns."""
    unique = []
    for i, call in enumerate(calls):
        call_id = call.id if call.id and call.id not in used else f"call_{turn_index}_{i}"
        used.add(call_id)
        unique.append(ToolCall(call.name, call.arguments, call_id))
    return unique


def _assistant_message(turn: Any, calls: list[ToolCall]) -> dict:
    message: dict = {"role": "assistant", "content": turn.text}
    if getattr(turn, "reasoning", ""):
        message["reasoning_content"] = turn.reasoning
    if calls:
        message["tool_calls"] = [{"id": c.id, "type": "function",
                                  "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)}}
                                 for c in calls]
    return message


def _tool_message(call: ToolCall, content: str) -> dict:
    return {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": content}


def _call_record(turn_index: int, call: ToolCall, observation: Observation, tokens: int) -> CallRecord:
    program = None
    if observation.kind == "program":
        program = analyze_program(call.arguments.get("code", ""))
    return CallRecord(turn=turn_index, name=call.name, arguments=call.arguments, observation=observation.content,
                      observation_tokens=tokens, seconds=observation.seconds, is_error=observation.is_error,
                      kind=observation.kind, task_tool_calls=len(observation.task_tool_calls),
                      runtime_error=observation.runtime_error, timed_out=observation.timed_out,
                      kernel_restarted=observation.kernel_restarted, program=program)


def _record(trajectory: Trajectory, record: CallRecord) -> None:
    trajectory.calls.append(record)
    trajectory.tool_output_tokens += record.observation_tokens
    trajectory.tool_calls += record.task_tool_calls
    trajectory.runtime_errors += record.runtime_error
    trajectory.timeouts += record.timed_out


__all__ = ["Limits", "PolicyError", "run_episode", "PROGRAMMATIC_TOOL_CALL"]
