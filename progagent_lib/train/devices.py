"""Where an evaluated model lives on a GPU node: on this rank's GPU, or inside the `trl vllm-serve` server.

Evaluation generates either in this process (transformers) or through a server. In this process the model goes
to this rank's GPU (`LOCAL_RANK`) when CUDA is there; on a CPU machine it stays where it is. Through a
`trl vllm-serve` server, the server holds whatever model it was started with, so the evaluated checkpoint is
pushed into it first, with TRL's own weight sync (`VLLMClient.init_communicator` / `update_model_params`, the
NCCL path GRPOTrainer uses in server mode).

Not run here: this machine has no GPU. `rank_device()` is exercised on CPU (it returns None); the push needs a
GPU and a server, and is refused in one line without CUDA.
"""

from __future__ import annotations

import os
from typing import Any


def rank_device() -> str | None:
    """`cuda:LOCAL_RANK` where CUDA is available, else None (stay on the CPU)."""
    import torch

    if not torch.cuda.is_available():
        return None
    return f"cuda:{int(os.environ.get('LOCAL_RANK', '0')) % torch.cuda.device_count()}"


def to_rank_device(model: Any) -> Any:
    device = rank_device()
    return model.to(device) if device is not None else model


def push_checkpoint_to_trl_server(base_url: str, model_source: str, chat_template: str | None = None) -> None:
    """Load `model_source` on this rank's GPU and copy its weights into the `trl vllm-serve` server at `base_url`."""
    device = rank_device()
    if device is None:
        raise RuntimeError(
            f"loading {model_source} into the trl vllm-serve server at {base_url} needs a GPU (TRL's "
            "weight sync is NCCL); on a CPU machine evaluate with transformers or the engine instead"
        )
    from trl.generation.vllm_client import VLLMClient

    from ..generation.sources import load_model

    model, _ = load_model(model_source, chat_template=chat_template)
    model = model.to(device)
    client = VLLMClient(base_url=base_url)
    client.init_communicator(device=int(device.split(":")[1]))
    try:
        client.update_model_params(model)
        client.reset_prefix_cache()
    finally:
        client.close_communicator()
    del model
