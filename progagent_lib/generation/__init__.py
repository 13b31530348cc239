"""Generation, on its own floor (above `harness`, below `policy`, `engine` and `train`):

- `sources`: model sources (registered names such as `smollm2`, GGUF files, folders, hub ids) and `load_model`;
  `gguf` converts a GGUF file once into a folder, `rope` scales a model's context (`SOURCE@POSITIONS`),
  `chat_templates` picks and records a tokenizer's template, `model_folder` saves a model with its record
  (progagent_model.json), and `tiny_model` builds the cpu-smoke model and trains its tokenizer on the pool's texts;
- `turns`: the `TurnGenerator` interface (token contexts in, one turn's token ids and log-probs out), the transformers,
  TRL-vLLM and replay implementations, and `decode_turn`, the one way a generated turn is read;
- `engine_client`: `EngineTurnGenerator`, the implementation against the vLLM engine (`progagent_lib.engine` runs it);
- `access`: the engine's API key, as its clients find it;
- `factory`: `GeneratorConfig` and `make_generator`, the one place a run's generator is chosen.

Policies (`progagent_lib.policy`) are chat adapters over a generator; training reads episodes through the same
`decode_turn`, so each model is rendered (`harness.chat_format.ChatFormat`) and decoded one way.
"""

from .factory import BACKENDS, GeneratorConfig, generator_config, make_generator
from .turns import HFTurnGenerator, ReplayTurns, TurnGenerator, TurnOutput, VLLMServerTurnGenerator, decode_turn

__all__ = [
    "BACKENDS",
    "GeneratorConfig",
    "generator_config",
    "make_generator",
    "HFTurnGenerator",
    "ReplayTurns",
    "TurnGenerator",
    "TurnOutput",
    "VLLMServerTurnGenerator",
    "decode_turn",
]
