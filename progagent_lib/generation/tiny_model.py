"""The `tiny` model of the cpu-smoke profiles, built from a config (no weights are downloaded), and its tokenizer.

The tokenizer is a byte-level BPE trained here on the texts our episodes are made of (`pool_corpus`): task prompts,
tool schemas, harness prompts, oracle programs and real tool results. It carries Qwen3's special tokens and TRL's
bundled Qwen3 chat template verbatim, so TRL recognises the template and swaps in its training variant (with assistant
masks) for assistant-only SFT loss.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from ..config import check_int, config_error
from .chat_templates import qwen3_chat_template
from .model_folder import save_model


# Qwen3's control tokens (special: stripped when decoding with skip_special_tokens): the padding token, then the
# ones its chat template writes, read from the template itself (no chat-format token is spelled out here) ...
PAD_TOKEN = "<|endoftext|>"


def control_tokens(template: str) -> list[str]:
    """The `<|...|>` tokens a chat template writes, in order of first appearance."""
    return list(dict.fromkeys(re.findall(r"<\|[a-z_]+\|>", template)))


# ... and its markup tokens, kept when decoding (as in Qwen3) so that tool calls and thoughts stay parseable.
MARKUP_TOKENS = [
    "<tool_call>",
    "</tool_call>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
]


@dataclass
class TinyModelConfig:
    """Size of the cpu-smoke model: small enough to train in minutes on 2 cores."""

    vocab_size: int = field(
        default=3072,
        metadata={
            "help": "Tokens the byte-level BPE tokenizer is trained to (the control and markup tokens come on top)."
        },
    )
    hidden_size: int = field(default=96, metadata={"help": "Width of the residual stream."})
    intermediate_size: int = field(default=256, metadata={"help": "Width of each MLP."})
    num_hidden_layers: int = field(default=2, metadata={"help": "Decoder layers."})
    num_attention_heads: int = field(default=4, metadata={"help": "Query heads per layer."})
    num_key_value_heads: int = field(
        default=2,
        metadata={"help": "Key/value heads per layer (grouped-query attention): must divide num_attention_heads."},
    )
    head_dim: int = field(default=24, metadata={"help": "Width of each attention head."})
    max_position_embeddings: int = field(default=32768, metadata={"help": "Positions the model can attend over."})
    seed: int = field(default=0, metadata={"help": "Seed of the random initialisation."})

    def __post_init__(self) -> None:
        for name in (
            "vocab_size",
            "hidden_size",
            "intermediate_size",
            "num_hidden_layers",
            "num_attention_heads",
            "num_key_value_heads",
            "head_dim",
            "max_position_embeddings",
        ):
            check_int(self, name, at_least=1)
        check_int(self, "seed", at_least=0)
        if self.num_attention_heads % self.num_key_value_heads:
            raise config_error(
                self,
                "num_key_value_heads",
                f"must divide num_attention_heads="
                f"{self.num_attention_heads} (each key/value head serves a whole group of query heads)",
            )


def pool_corpus(tasks_root: str | Path = "tasks", *, scale: str = "v0", seed: int = 0) -> list[str]:
    """Texts the tokenizer is trained on: prompts, schemas, harness prompts, oracle programs, sample tool results."""
    from progagent_lib import load_pool
    from progagent_lib.harness.spec import HARNESSES, PROMPTS, model_tool_schemas
    from progagent_lib.task.toolbox import ToolBox

    texts: list[str] = [p.read_text() for p in sorted(PROMPTS.glob("*.md"))]
    # strict=False: a task still being written elsewhere must not stop the tokenizer from being built.
    for task in load_pool(tasks_root, strict=False):
        texts.append(task.instruction(seed))
        schemas = task.tool_schemas()
        for harness in HARNESSES.values():
            texts.extend(json.dumps(s) for s in model_tool_schemas(harness, schemas))
        texts.append((task.root / "oracle.py").read_text())
        try:
            env = task.instantiate(scale, seed)
        except Exception:  # noqa: BLE001 - a broken generator only costs us its sample observations
            continue
        try:
            texts.append(str(task.oracle(ToolBox(env, observe=_sampled(texts)), env.params)))
        except Exception:  # noqa: BLE001 - an oracle that fails here only costs the corpus its observations
            pass
        finally:
            env.close()
    return texts


def _sampled(texts: list[str]) -> Any:
    """A ToolBox observer that keeps each result's first 4,000 characters of JSON in `texts`."""
    return lambda name, result: texts.append(json.dumps(result, default=str)[:4000])


def train_tokenizer(texts: Iterable[str], vocab_size: int = 3072) -> Any:
    """A byte-level BPE tokenizer (any byte sequence is encodable) with Qwen3's special tokens and chat template."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    from ..harness.chat_format import end_of_turn_id

    special_tokens = [PAD_TOKEN, *control_tokens(qwen3_chat_template())]
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        show_progress=False,
        special_tokens=special_tokens,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(_with_chat_markup(texts), trainer=trainer)
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in special_tokens])
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False) for t in MARKUP_TOKENS])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, pad_token=PAD_TOKEN, chat_template=qwen3_chat_template(), model_max_length=32768
    )
    fast.eos_token = fast.convert_ids_to_tokens(end_of_turn_id(fast, "tiny", "qwen3"))  # generation stops there
    return fast


def _with_chat_markup(texts: Iterable[str]) -> Iterator[str]:
    # Fragments of the chat template's own text, so "\n<tool_call>\n{\"name\": ..." style glue gets merges too.
    template = qwen3_chat_template()
    for text in texts:
        yield text
    for _ in range(20):
        yield template


def build_tiny_model(
    tasks_root: str | Path = "tasks",
    config: TinyModelConfig | None = None,
    save_to: str | Path | None = None,
    corpus: list[str] | None = None,
) -> tuple[Any, Any]:
    """The cpu-smoke model: random-init Qwen3 from `config` plus a tokenizer trained on the pool's texts."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    config = config or TinyModelConfig()
    tokenizer = train_tokenizer(corpus if corpus is not None else pool_corpus(tasks_root), config.vocab_size)
    torch.manual_seed(config.seed)
    model_config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=config.hidden_size,
        intermediate_size=config.intermediate_size,
        num_hidden_layers=config.num_hidden_layers,
        num_attention_heads=config.num_attention_heads,
        num_key_value_heads=config.num_key_value_heads,
        head_dim=config.head_dim,
        max_position_embeddings=config.max_position_embeddings,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = Qwen3ForCausalLM(model_config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    if save_to is not None:
        save_model(model, tokenizer, save_to)
    return model, tokenizer
