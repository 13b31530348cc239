"""The records a policy hands the episode: one `Turn` per assistant turn, one `ToolCall` per call in it.

Every policy's `act(messages, tools)` returns a `Turn`, and every front end (run_episode, the training rollout, the MCP
server, the TRL, OpenEnv and verifiers adapters) hands the episode a `Turn`. A call the episode ran is kept in the
trajectory as a `CallRecord` (trajectory.py), which is a `ToolCall` plus what came of it. They live here, below the
models and policies that produce them, because the episode consumes them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..errors import PolicyError


@dataclass
class ToolCall:
    """One call the model asked for."""

    name: str
    arguments: dict
    id: str = ""  # the id its tool message answers (the episode gives one when the model did not)

    def to_openai(self) -> dict:
        """The call as an assistant message carries it in OpenAI's chat format (arguments as JSON text)."""
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": json.dumps(self.arguments, ensure_ascii=False)},
        }


@dataclass
class Turn:
    """One assistant turn: its visible text, the calls it made, and whether it was cut off.

    `cut`: the turn ran out of tokens before its end-of-turn token; the episode records its text, runs nothing and
    ends as `turn_cut`. `parse_errors`: one message per tool-call block that could not be read (the model is told
    each, and the episode goes on). `reasoning`: thinking text (Qwen3's <think>), kept as `reasoning_content`.
    `prompt_tokens`, `completion_tokens`: the turn's usage as the generator counted it, when it knows (the episode
    then takes their sum as the exact context size instead of its own estimate).
    """

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    cut: bool = False
    parse_errors: list[str] = field(default_factory=list)
    reasoning: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    def to_message(self) -> dict:
        """The turn as an assistant message in OpenAI's chat format (what the episode's messages hold)."""
        message: dict = {"role": "assistant", "content": self.text}
        if self.reasoning:
            message["reasoning_content"] = self.reasoning
        if self.tool_calls:
            message["tool_calls"] = [call.to_openai() for call in self.tool_calls]
        return message

    @property
    def reported_context_tokens(self) -> int | None:
        """The context's exact size after this turn, when the generator reported its usage."""
        if self.prompt_tokens is None and self.completion_tokens is None:
            return None
        return (self.prompt_tokens or 0) + (self.completion_tokens or 0)


def tool_calls_from_openai(raw_calls: list[dict] | None) -> tuple[list[ToolCall], list[str]]:
    """The `tool_calls` of an OpenAI chat-completions message as ToolCalls, and a parse error (written for the model)
    for each call without a name or whose arguments are not a JSON object."""
    calls, errors = [], []
    for index, raw in enumerate(raw_calls or []):
        function = raw.get("function") or {}
        name, arguments = function.get("name"), function.get("arguments") or "{}"
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError as exc:
                errors.append(f"the arguments of {name!r} are not valid JSON ({exc.msg}).")
                continue
        if not name or not isinstance(arguments, dict):
            errors.append(f"tool call #{index + 1} has no name or its arguments are not an object.")
            continue
        calls.append(ToolCall(name, arguments, raw.get("id") or ""))
    return calls, errors


def turn_from_openai(message: dict, usage: dict | None = None, *, cut: bool = False) -> Turn:
    """An OpenAI chat-completions `message` (with the reply's `usage`) as a turn."""
    calls, errors = tool_calls_from_openai(message.get("tool_calls"))
    reasoning = message.get("reasoning_content") or message.get("reasoning") or ""
    usage = usage or {}
    return Turn(
        text=message.get("content") or "",
        tool_calls=calls,
        cut=cut,
        parse_errors=errors,
        reasoning=reasoning if isinstance(reasoning, str) else "",
        prompt_tokens=usage.get("prompt_tokens"),
        completion_tokens=usage.get("completion_tokens"),
    )


@runtime_checkable
class Policy(Protocol):
    """Anything with `act`. Optional: `name`, `tokenizer`, `default_limits`, `start_episode(task)`, `close()`."""

    def act(self, messages: list[dict], tools: list[dict]) -> Turn: ...


def policy_name(policy: Any) -> str:
    return getattr(policy, "name", type(policy).__name__)


__all__ = ["Turn", "ToolCall", "Policy", "PolicyError", "policy_name", "tool_calls_from_openai", "turn_from_openai"]
