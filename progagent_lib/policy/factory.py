"""Policies from a short spec string, as the command line and notebooks name them."""

from __future__ import annotations

from typing import Any, Sequence

from .oracle import OracleTeacher

SPEC_HELP = (
    "oracle | memorize[:TRAIN_SEED] | hf:NAME_PATH_GGUF_OR_HUB_ID (e.g. hf:smollm2) | openai:BASE_URL#MODEL | "
    "replay:FILE"
)


def make_policy(spec: str, harness: str, **kwargs: Any):
    """`make_policy("oracle" | "memorize[:SEED]" | "hf:SOURCE" | "openai:URL#model" | "replay:FILE", harness)`.

    `hf:SOURCE` is anything `generation.sources.load_model` takes: a registered name (`hf:smollm2`), a GGUF file,
    a saved model folder or a hub id (org/name).

    Extra keyword arguments go to the policy's constructor (e.g. temperature=0.0).
    """
    kind, _, rest = spec.partition(":")
    if kind == "oracle" and not rest:
        return OracleTeacher(harness, **kwargs)
    if kind == "memorize":  # the teacher's turns of one training instance replayed on every instance (v0)
        from .memorize import MemorizationPolicy

        if rest and not rest.lstrip("-").isdigit():
            raise ValueError(f"policy {spec!r}: write memorize or memorize:TRAIN_SEED, e.g. memorize:0")
        return MemorizationPolicy(harness, train_seed=int(rest or 0), **kwargs)
    if kind == "hf" and rest:
        from .hf import HFPolicy

        return HFPolicy(rest, **kwargs)
    if kind == "openai" and rest:
        url, _, model = rest.rpartition("#")
        if not url or not model:
            raise ValueError(
                f"policy {spec!r}: write openai:BASE_URL#MODEL, e.g. openai:http://localhost:8000/v1#Qwen/Qwen3-8B"
            )
        from .openai_compat import OpenAIPolicy

        return OpenAIPolicy(url, model, **kwargs)
    if kind == "replay" and rest:
        from .replay import ReplayPolicy

        return ReplayPolicy.from_file(rest)
    raise ValueError(f"unknown policy {spec!r}; expected {SPEC_HELP}")


def policies_for(spec: str, harnesses: Sequence[str], **kwargs: Any) -> dict[str, Any]:
    """`{harness: policy}` for `run_batch`: the oracle teacher is built once per harness (it plays one), a model once
    for all of them (one set of weights). Keyword arguments go to `make_policy`."""
    if spec.split(":")[0] == "oracle":
        return {h: make_policy(spec, h, **kwargs) for h in harnesses}
    shared = make_policy(spec, harnesses[0], **kwargs)
    return {h: shared for h in harnesses}
