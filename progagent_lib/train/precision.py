"""Training precision: fp32 master weights, bf16 as autocast (on a GPU or on a CPU with AVX-512 BF16 or AMX).

The weights a run trains are fp32 whatever the checkpoint holds: SFT and GSPO load their model with
`master_weights_dtype()`, which is float32 unless the launcher shards the model (DeepSpeed or FSDP through
`accelerate launch`), where the sharding engine keeps fp32 masters of its own (DeepSpeed's bf16 optimizer; accelerate
upcasts FSDP2 parameters to fp32 under mixed precision) and the checkpoint is loaded as saved. A bf16 hub checkpoint
trained in bf16 weights loses most small updates to rounding (4 SFT steps at lr 1e-6 moved 2% of its elements, 100%
from fp32; tests/train/test_train_precision.py).

With `bf16: true` the trainer (transformers' Trainer through accelerate, `mixed_precision="bf16"`) runs forward and
backward under `torch.autocast(dtype=bfloat16)`; the weights, their gradients and AdamW's state stay fp32. On a CPU
without bf16 instructions autocast would emulate it, slower than fp32: such a request is refused before any compute.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..config import ConfigError

CPU_BF16_FLAGS = ("avx512_bf16", "amx_bf16")


def cpu_bf16_flags(cpuinfo: str | Path = "/proc/cpuinfo") -> list[str]:
    """The bf16 instruction sets this CPU reports (empty where /proc/cpuinfo does not exist or lists none)."""
    try:
        text = Path(cpuinfo).read_text()
    except OSError:
        return []
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
    return [f for f in CPU_BF16_FLAGS if f in flags]


def check_bf16(requested: bool, where: str, *, cuda: bool | None = None, cpuinfo: str | Path = "/proc/cpuinfo") -> bool:
    """`requested` after checking the hardware can do it fast; ConfigError naming `where` (e.g. "SFTRunConfig.bf16")
    when bf16 is asked for on a CPU without bf16 instructions."""
    if not requested:
        return False
    if cuda is None:
        import torch

        cuda = torch.cuda.is_available()
    if not cuda and not cpu_bf16_flags(cpuinfo):
        raise ConfigError(
            f"{where}=True: this CPU has no bf16 instructions ({' or '.join(CPU_BF16_FLAGS)} in "
            "/proc/cpuinfo), so autocast would emulate bf16 more slowly than fp32; set it to false"
        )
    return True


def sharded_by_launcher(environ: Mapping[str, str] | None = None) -> bool:
    """Is this process one of an `accelerate launch` run that shards the model (DeepSpeed or FSDP)?"""
    env = os.environ if environ is None else environ
    return any(env.get(flag, "").lower() == "true" for flag in ("ACCELERATE_USE_DEEPSPEED", "ACCELERATE_USE_FSDP"))


def master_weights_dtype(environ: Mapping[str, str] | None = None) -> Any:
    """The dtype a trained model is loaded in: float32 (master weights; bf16 is autocast), or None (as saved) when
    the launcher shards the model and its engine keeps the fp32 masters."""
    import torch

    return None if sharded_by_launcher(environ) else torch.float32


__all__ = ["CPU_BF16_FLAGS", "check_bf16", "cpu_bf16_flags", "master_weights_dtype", "sharded_by_launcher"]
