"""bf16 autocast for training, on a GPU or on a CPU with bf16 instructions (AVX-512 BF16 or AMX).

With `bf16: true` the trainer (transformers' Trainer through accelerate, `mixed_precision="bf16"`) runs forward and
backward under `torch.autocast(dtype=bfloat16)`; the weights, their gradients and AdamW's state stay fp32. On a CPU
without bf16 instructions autocast would emulate it, slower than fp32: such a request is refused before any compute.
"""
from __future__ import annotations

from pathlib import Path

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
        raise ConfigError(f"{where}=True: this CPU has no bf16 instructions ({' or '.join(CPU_BF16_FLAGS)} in "
                          "/proc/cpuinfo), so autocast would emulate bf16 more slowly than fp32; set it to false")
    return True


__all__ = ["CPU_BF16_FLAGS", "check_bf16", "cpu_bf16_flags"]
