"""What a policy is to the episode loop: `act(messages, tools) -> PolicyTurn` (the episode consumes it, so it lives here,
below the models and policies that produce it)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..errors import PolicyError
from .session import ToolCall


@dataclass
class PolicyTurn:
    """One assistant turn: its text, the tool calls it made and the calls that could not be read."""

    text: str = ""                                   # visible content, without tool-call blocks
    tool_calls: list[ToolCall] = field(default_factory=list)
    parse_errors: list[str] = field(default_factory=list)
    reasoning: str = ""                              # thinking text (Qwen3 <think>), kept as reasoning_content
    raw: str = ""                                    # the raw generated text, when the policy produced text
    prompt_tokens: int | None = None                 # exact context size, when the policy knows it
    completion_tokens: int | None = None
    cut: bool = False                                # it ran out of tokens before its end: recorded, nothing run


@runtime_checkable
class Policy(Protocol):
    """Anything with `act`. Optional: `name`, `tokenizer`, `default_limits`, `start_episode(task)`, `close()`."""

    def act(self, messages: list[dict], tools: list[dict]) -> PolicyTurn: ...


def policy_name(policy: Any) -> str:
    return getattr(policy, "name", type(policy).__name__)


__all__ = ["PolicyTurn", "Policy", "PolicyError", "policy_name"]
