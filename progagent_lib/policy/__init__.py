"""Policies: the oracle teacher, a local transformers model, and any OpenAI-compatible endpoint."""
from __future__ import annotations

from .base import Policy, PolicyError, PolicyTurn, policy_name
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
    if name == "make_policy":
        from .factory import make_policy
        return make_policy
    raise AttributeError(name)


__all__ = ["Policy", "PolicyError", "PolicyTurn", "policy_name", "OracleTeacher", "MemorizationPolicy", "ReplayPolicy", "HFPolicy", "OpenAIPolicy", "make_policy"]
