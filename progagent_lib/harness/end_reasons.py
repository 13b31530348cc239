"""Why an episode ended, and the two questions asked of every ending: did it error, was it truncated?

One list and one definition of each, for every path that runs or reads an episode (`run_episode`, the MCP
server, the training rollout and evaluation, the summaries, the ecosystem adapters):

- errored: the episode ended because the machinery failed (the policy or its server), not because of the
  task. It says nothing about the model: it is kept out of pass rates and means, out of GSPO's loss, and
  run again when a batch resumes;
- truncated: a budget (`Limits`) cut the episode off before the model finished it.
"""

from __future__ import annotations

END_REASONS: dict[str, str] = {
    "claim_done": "the model called claim_done; the verifier judged its action",
    "no_tool_call": "a turn without a tool call; its text is the final answer",
    "max_turns": "the turn budget (Limits.max_turns) ran out",
    "max_tool_calls": "the tool-call budget (Limits.max_tool_calls) ran out",
    "max_context_tokens": "the context reached Limits.max_context_tokens",
    "turn_cut": "a turn reached Limits.max_new_tokens before its end-of-turn token",
    "client_closed": "the MCP client left (or its server was stopped) before claim_done; the state as left is judged",
    "policy_error": "the policy or its server failed: an infrastructure error, not a task failure",
}

# The end reasons of an errored episode (infrastructure, not task) and of a truncated one (a budget ran out).
INFRASTRUCTURE_END_REASONS = frozenset({"policy_error"})
TRUNCATION_END_REASONS = frozenset({"max_turns", "max_tool_calls", "max_context_tokens", "turn_cut"})
assert INFRASTRUCTURE_END_REASONS | TRUNCATION_END_REASONS <= set(END_REASONS)


def is_errored(end_reason: str) -> bool:
    """Whether an episode that ended for `end_reason` errored (the policy or its server failed)."""
    return end_reason in INFRASTRUCTURE_END_REASONS


def is_truncated(end_reason: str) -> bool:
    """Whether an episode that ended for `end_reason` was cut off by a budget before the model finished."""
    return end_reason in TRUNCATION_END_REASONS


__all__ = ["END_REASONS", "INFRASTRUCTURE_END_REASONS", "TRUNCATION_END_REASONS", "is_errored", "is_truncated"]
