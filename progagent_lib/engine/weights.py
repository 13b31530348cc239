"""How a trainer's updated weights reach a running vLLM server on CPU, where there is no NCCL.

The path taken: the trainer saves its model as a Hugging Face folder (safetensors), and the server reloads its
weights in place from that folder (`reload_weights` through vLLM's `/collective_rpc`, a dev-mode route that
`EngineServer` turns on; the server listens on loopback only, and these routes need its API key like every
other: vLLM's own key check does not cover them, `vllm_side/progagent_engine_auth.py` does). Generation is
paused around the reload, and the prefix cache (KV blocks computed with the old weights) is dropped, so no
request mixes two policies.

Why not LoRA adapters loaded at run time: it works only for LoRA training (GSPO here trains all weights
unless `lora` is set; a LoRA model is merged into full weights for the save), vLLM's CPU build runs a LoRA
server without compilation, and each request then pays the adapter's extra matmuls. Why not a restart: about a minute and a half of start-up per step.
A reload costs the save plus reading the folder back, about a second for the 135M model
(`bench/engine.py` measures it).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx

from ..generation.access import KEY_HELP, auth_headers
from ..errors import EngineRequestError


def save_for_engine(model: Any, folder: str | Path) -> Path:
    """Write `model`'s full weights where the server can read them (safetensors; config and tokenizer stay the server's).

    A peft (LoRA) model is saved merged (each adapted weight plus its adapter's delta), without touching the
    model itself: merging in place and back would leave rounding drift in the weights being trained.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if not hasattr(model, "get_base_model"):
        model.save_pretrained(folder, safe_serialization=True)
        return folder
    import torch
    from safetensors.torch import save_file

    base = model.get_base_model()
    with torch.no_grad():
        weights = {
            name.replace(".base_layer.", "."): tensor.detach().clone()
            for name, tensor in base.state_dict().items()
            if ".lora_" not in name
        }
        for name, module in base.named_modules():
            if hasattr(module, "get_delta_weight") and hasattr(module, "base_layer"):
                for adapter in module.active_adapters:
                    if adapter in getattr(module, "lora_A", {}):
                        weights[f"{name}.weight"] += module.get_delta_weight(adapter).to(
                            weights[f"{name}.weight"].dtype
                        )
    weights = {name: tensor.contiguous() for name, tensor in weights.items()}
    if getattr(base.config, "tie_word_embeddings", False):
        weights.pop("lm_head.weight", None)  # tied: saved once, as the embedding
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    base.config.save_pretrained(folder)
    return folder


def _post(client: httpx.Client, url: str, **kwargs: Any) -> httpx.Response:
    try:
        response = client.post(url, **kwargs)
    except httpx.HTTPError as exc:
        raise EngineRequestError(f"{url}: {type(exc).__name__}: {exc}; is the engine running?") from exc
    if response.status_code == 401:
        raise EngineRequestError(
            f"{url} refused the request (HTTP 401): the engine's API key is missing or stale; {KEY_HELP}"
        )
    if response.status_code == 404:
        raise EngineRequestError(
            f"{url} is not there: the server runs without its dev-mode routes; start it with "
            "VLLM_SERVER_DEV_MODE=1 (`progagent engine serve` does)"
        )
    if response.status_code != 200:
        raise EngineRequestError(f"{url} answered HTTP {response.status_code}: {response.text[:500]}")
    return response


def reload_weights(base_url: str, folder: str | Path, *, timeout: float = 600.0, api_key: str | None = None) -> float:
    """Make the server at `base_url` (its `/v1` root or the bare host) generate with the weights in `folder`.

    Waits for requests in flight to finish, reloads in place, drops the prefix cache, resumes. Returns seconds.
    `api_key`: the server's key (default: found by the URL, `access.engine_api_key`).
    """
    root = base_url.rstrip("/").removesuffix("/v1")
    folder = Path(folder).resolve()
    if not any(folder.glob("*.safetensors")):
        raise FileNotFoundError(f"no *.safetensors in {folder}; save the model there first (save_for_engine)")
    started = time.perf_counter()
    with httpx.Client(timeout=timeout, headers=auth_headers(root, api_key)) as client:
        _post(client, f"{root}/pause", params={"mode": "wait"})
        try:
            _post(
                client,
                f"{root}/collective_rpc",
                json={"method": "reload_weights", "kwargs": {"weights_path": str(folder)}, "timeout": timeout},
            )
            _post(client, f"{root}/reset_prefix_cache")
        finally:
            _post(client, f"{root}/resume")
    return time.perf_counter() - started


def sync_weights(model: Any, base_url: str, folder: str | Path, *, api_key: str | None = None) -> dict[str, float]:
    """Save `model` to `folder` and have the server reload it: the per-step weight sync on CPU. Seconds of each part."""
    started = time.perf_counter()
    save_for_engine(model, folder)
    saved = time.perf_counter() - started
    return {"seconds_save": saved, "seconds_reload": reload_weights(base_url, folder, api_key=api_key)}
