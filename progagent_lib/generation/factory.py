"""`make_generator(config, chat, model=...)`: the one place that chooses what generates a run's turns.

Training (GSPO's rollouts), evaluation and the chat policy describe their generator with a `GeneratorConfig`:

    backend        what generates                                          needs
    transformers   the model in this process (`HFTurnGenerator`)           model=
    engine         a vLLM server of `progagent engine serve` (or any        url, served_model
                   vLLM server with `return_token_ids`)
    trl-vllm       a `trl vllm-serve` server, through TRL's client          url or vllm_client=

Each run config (GSPO, evaluation) turns its settings into one `GeneratorConfig` with `generator_config(...)`, so
the settings are read once and a combination that names two generators is refused there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..harness.chat_format import ChatFormat
from .turns import HFTurnGenerator, TurnGenerator, VLLMServerTurnGenerator

BACKENDS = ("transformers", "engine", "trl-vllm")


@dataclass(frozen=True)
class GeneratorConfig:
    """What generates turns, at which temperature (0: greedy) and seed (None: unseeded)."""

    backend: str = "transformers"
    temperature: float = 1.0
    seed: int | None = None
    url: str | None = None  # engine: its OpenAI root (http://127.0.0.1:P/v1); trl-vllm: the server's URL
    served_model: str | None = None  # engine: the served name (or a LoRA adapter's)
    top_p: float = 1.0  # nucleus sampling (1: none); training keeps 1, so log-probs are the policy's

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ConfigError(f"GeneratorConfig.backend={self.backend!r}: must be one of {', '.join(BACKENDS)}")
        if self.temperature < 0:
            raise ConfigError(f"GeneratorConfig.temperature={self.temperature!r}: must be at least 0 (0: greedy)")
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"GeneratorConfig.top_p={self.top_p!r}: must be in (0, 1]")
        if self.backend == "engine" and not (self.url and self.served_model):
            raise ConfigError("GeneratorConfig: backend 'engine' needs url (the server's /v1 root) and served_model")


def generator_config(
    *,
    model: str,
    temperature: float,
    seed: int | None = None,
    engine_url: str | None = None,
    engine_model: str | None = None,
    use_vllm: bool = False,
    vllm_server_base_url: str | None = None,
) -> GeneratorConfig:
    """A run config's generator settings as one `GeneratorConfig`: `engine_url` (+ `engine_model`, default the
    model's short name) for the engine, `use_vllm` or `vllm_server_base_url` for a `trl vllm-serve` server,
    neither for the model in this process."""
    from pathlib import Path

    if engine_url and (use_vllm or vllm_server_base_url):
        raise ConfigError(f"engine_url={engine_url!r} and a trl vllm-serve server name two generators; keep one")
    if engine_url:
        return GeneratorConfig("engine", temperature, seed, engine_url, engine_model or Path(str(model)).name)
    if use_vllm or vllm_server_base_url:
        return GeneratorConfig("trl-vllm", temperature, seed, vllm_server_base_url)
    return GeneratorConfig("transformers", temperature, seed)


def make_generator(
    config: GeneratorConfig, chat: ChatFormat, *, model: Any = None, vllm_client: Any = None, **engine_kwargs: Any
) -> TurnGenerator:
    """The `TurnGenerator` `config` names. `model` is the transformers model (backend transformers); `vllm_client`
    a TRL `VLLMClient` to reuse (backend trl-vllm; default: one for `config.url`); `engine_kwargs` go to
    `EngineTurnGenerator` (e.g. concurrency=1 for an exact replay)."""
    if config.backend == "engine":
        from .engine_client import EngineTurnGenerator

        assert config.url is not None and config.served_model is not None  # GeneratorConfig checks both
        return EngineTurnGenerator(
            config.url,
            config.served_model,
            chat.end_of_turn,
            temperature=config.temperature,
            top_p=config.top_p,
            seed=config.seed,
            **engine_kwargs,
        )
    if config.backend == "trl-vllm":
        if vllm_client is None:
            from trl.generation.vllm_client import VLLMClient

            vllm_client = VLLMClient(base_url=config.url) if config.url else VLLMClient()
        return VLLMServerTurnGenerator(vllm_client, temperature=config.temperature)
    if model is None:
        raise ValueError("make_generator: backend 'transformers' needs the model (model=...)")
    return HFTurnGenerator(
        model,
        chat,
        temperature=config.temperature if config.temperature > 0 else 1.0,
        do_sample=config.temperature > 0,
        top_p=config.top_p,
        seed=config.seed,
    )
