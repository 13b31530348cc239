"""The one way a trained model leaves a training run: `save_final`, whose folder holds the whole weights however the
launcher sharded them.

Under DeepSpeed ZeRO-3 each rank holds a slice of every weight, and under FSDP (the shipped accelerate config saves
SHARDED_STATE_DICT checkpoints) each rank holds a shard: `save_pretrained` on such a model writes a slice, and
`Trainer.save_model` under FSDP's sharded state dict writes no full weights at all. So every rank joins the gather of
the full state dict (accelerate's `get_state_dict`: ZeRO-3's consolidated 16-bit weights, FSDP1's FULL_STATE_DICT;
torch's full `get_model_state_dict` for FSDP2 `fully_shard` modules, whoever applied it), and the main rank builds a
plain CPU model from those weights — merging LoRA adapters there, on gathered weights — and saves it with its tokenizer
and `progagent_model.json`. Every rank then waits until the folder is complete, so no rank reads a half-written one.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from .ranks import barrier, is_main


def save_final(model: Any, tokenizer: Any, path: str | Path, *, accelerator: Any = None) -> Path:
    """Save `model` (as trained: wrapped by DDP, ZeRO-3 or FSDP, with or without LoRA) to `path` as a plain checkpoint.
    Every rank must call it; the main rank writes; all return once the folder is complete."""
    from ..generation.model_folder import save_model

    path = Path(path)
    state_dict = full_state_dict(model, accelerator)
    if is_main():
        unwrapped = accelerator.unwrap_model(model) if accelerator is not None else getattr(model, "module", model)
        save_model(plain_model(unwrapped, state_dict), tokenizer, path)
    barrier()  # the folder is complete before any rank reads it
    return path


def full_state_dict(model: Any, accelerator: Any = None) -> dict[str, Any]:
    """The model's whole weights, gathered from every rank (a collective: every rank calls it). The main rank gets
    all of them; another rank may get none."""
    if holds_shards(model):  # FSDP2: each parameter is a DTensor holding this rank's shard
        from torch.distributed.checkpoint.state_dict import (
            StateDictOptions,
            get_model_state_dict,
        )

        return get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    if accelerator is not None:  # DeepSpeed ZeRO-3, FSDP1 (FULL_STATE_DICT whatever the config's type), DDP
        return accelerator.get_state_dict(model)
    return getattr(model, "module", model).state_dict()


def holds_shards(model: Any) -> bool:
    """Does `model` hold its parameters as DTensor shards (FSDP2's fully_shard, tensor parallelism)?"""
    from torch.distributed.tensor import DTensor

    return any(isinstance(p, DTensor) for p in model.parameters())


def plain_model(unwrapped: Any, state_dict: dict[str, Any]) -> Any:
    """A plain (no adapter, no wrapper) model holding `state_dict`, built without allocating weights of its own; a
    peft model's adapters are merged into the gathered base weights (copied to the CPU first: the merge writes into
    them, and they may be the trained model's own tensors)."""
    import torch
    from transformers import AutoModelForCausalLM

    peft_configs = getattr(unwrapped, "peft_config", None)
    base = unwrapped.get_base_model() if peft_configs else unwrapped
    with torch.device("meta"), _no_zero3_partitioning():
        model = AutoModelForCausalLM.from_config(copy.deepcopy(base.config))  # the trained model's stays its own
    if peft_configs:
        from peft import get_peft_model

        if len(peft_configs) != 1:
            raise ValueError(f"cannot merge {len(peft_configs)} LoRA adapters into one checkpoint; train with one")
        with torch.device("meta"), _no_zero3_partitioning():
            model = get_peft_model(model, next(iter(peft_configs.values())))
        state_dict = {name: tensor.detach().to("cpu", copy=True) for name, tensor in state_dict.items()}
    model.load_state_dict(state_dict, strict=True, assign=True)
    # Tied embeddings arrive as two tensors (gathered or copied apart): tie them again before a merge (which would
    # otherwise untie them in the config) and before saving (which writes a tied weight once).
    (model.get_base_model() if peft_configs else model).tie_weights()
    if peft_configs:
        model = model.merge_and_unload()
    model.generation_config = copy.deepcopy(base.generation_config)  # the stop tokens load_model set
    metadata = getattr(base, "progagent_metadata", None)
    if metadata:
        model.progagent_metadata = metadata
    return model


def _no_zero3_partitioning() -> Any:
    """Under a ZeRO-3 launch transformers builds every model inside deepspeed.zero.Init (partitioned across ranks, a
    collective); the plain model is built on the main rank alone, so it must not be. transformers has no public switch:
    `set_zero3_state` is the flag its own nested builds use to skip zero.Init (not exercised here: no DeepSpeed)."""
    import contextlib

    try:
        from transformers.modeling_utils import set_zero3_state
    except ImportError:  # a transformers without it: nothing to turn off
        return contextlib.nullcontext()
    return set_zero3_state()


__all__ = ["full_state_dict", "holds_shards", "plain_model", "save_final"]
