"""Policies: the oracle teacher, the memorization baseline, replays, any token-level model as `ChatPolicy` over a\ngenerator (`HFPolicy`: transformers here), and any OpenAI-compatible chat endpoint (`OpenAIPolicy`)."""

from __future__ import annotations

from ..harness.turn import Policy, PolicyError, Turn, policy_name
from .memorize import MemorizationPolicy
from .oracle import OracleTeacher
from .replay import ReplayPolicy


def __getattr__(name: str):
    # The model-backed policies import torch / httpx; load them only when asked for.
    if name == "HFPolicy":
        from .hf import HFPolicy

        return HFPolicy
    if name == "OpenAIPolicy":
        from .openai_compat import OpenAIPolicy

        return OpenAIPolicy
    if name in ("make_policy", "policies_for"):
        from . import factory

        return getattr(factory, name)
    if name == "ChatPolicy":
        from .chat import ChatPolicy

        return ChatPolicy
    raise AttributeError(name)


__all__ = [
    "Policy",
    "PolicyError",
    "Turn",
    "policy_name",
    "OracleTeacher",
    "MemorizationPolicy",
    "ReplayPolicy",
    "HFPolicy",
    "OpenAIPolicy",
    "ChatPolicy",
    "make_policy",
    "policies_for",
]
