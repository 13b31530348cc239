"""Models for training: the `tiny` Qwen3-architecture model of the cpu-smoke profile, or any model on disk / hub.

The tiny model is built from a config (no weights are downloaded) with a byte-level BPE tokenizer trained here on
the texts our episodes are made of: task prompts, tool schemas, harness prompts, oracle programs and real tool
results. It carries Qwen3's special tokens and TRL's bundled Qwen3 chat template verbatim, so TRL recognises the
template and swaps in its training variant (with assistant masks) for assistant-only SFT loss.
"""
from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

# Found without importing trl, so that `progagent --help` stays fast.
QWEN3_CHAT_TEMPLATE_PATH = Path(importlib.util.find_spec("trl").origin).parent / "chat_templates" / "qwen3.jinja"

# Qwen3's control tokens (special: stripped when decoding with skip_special_tokens) ...
SPECIAL_TOKENS = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>",
    "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>",
    "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>",
]
# ... and its markup tokens, kept when decoding (as in Qwen3) so that tool calls and thoughts stay parseable.
MARKUP_TOKENS = [
    "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>", "</think>",
]


@dataclass
class TinyModelConfig:
    """Size of the cpu-smoke model: small enough to train in minutes on 2 cores."""

    vocab_size: int = 3072
    hidden_size: int = 96
    intermediate_size: int = 256
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    head_dim: int = 24
    max_position_embeddings: int = 32768
    seed: int = 0


def qwen3_chat_template() -> str:
    """TRL's Qwen3 template, byte for byte (TRL matches templates by exact text)."""
    return QWEN3_CHAT_TEMPLATE_PATH.read_text(encoding="utf-8")


class _RecordingTools:
    """`tools.name(...)` over env.call_tool that keeps each result's JSON text (sample observations)."""

    def __init__(self, env: Any, sink: list[str], limit_chars: int = 4000):
        self._env, self._sink, self._limit = env, sink, limit_chars

    def __getitem__(self, name: str):
        def call(**kwargs: Any) -> Any:
            result = self._env.call_tool(name, kwargs)
            self._sink.append(json.dumps(result, default=str)[: self._limit])
            return result
        return call

    __getattr__ = __getitem__


def pool_corpus(tasks_root: str | Path = "tasks", *, scale: str = "v0", seed: int = 0) -> list[str]:
    """Texts the tokenizer is trained on: prompts, schemas, harness prompts, oracle programs, sample tool results."""
    from progagent_lib import load_pool
    from progagent_lib.harness.spec import HARNESSES, PROMPTS, model_tool_schemas

    texts: list[str] = [p.read_text() for p in sorted(PROMPTS.glob("*.md"))]
    # strict=False: a task still being written elsewhere must not stop the tokenizer from being built.
    for task in load_pool(tasks_root, strict=False):
        texts.append(task.prompt)
        schemas = task.tool_schemas()
        for harness in HARNESSES.values():
            texts.extend(json.dumps(s) for s in model_tool_schemas(harness, schemas))
        texts.append((task.root / "oracle.py").read_text())
        try:
            env = task.instantiate(scale, seed)
        except Exception:  # a broken generator only costs us its sample observations
            continue
        try:
            texts.append(str(task.oracle(_RecordingTools(env, texts))))
        except Exception:
            pass
        finally:
            env.close()
    return texts


def train_tokenizer(texts: Iterable[str], vocab_size: int = 3072) -> Any:
    """A byte-level BPE tokenizer (any byte sequence is encodable) with Qwen3's special tokens and chat template."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=2, show_progress=False,
        special_tokens=SPECIAL_TOKENS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(_with_chat_markup(texts), trainer=trainer)
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False) for t in MARKUP_TOKENS])
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        chat_template=qwen3_chat_template(), model_max_length=32768,
    )


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
        vocab_size=len(tokenizer), hidden_size=config.hidden_size, intermediate_size=config.intermediate_size,
        num_hidden_layers=config.num_hidden_layers, num_attention_heads=config.num_attention_heads,
        num_key_value_heads=config.num_key_value_heads, head_dim=config.head_dim,
        max_position_embeddings=config.max_position_embeddings, tie_word_embeddings=True,
        bos_token_id=None, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
    )
    model = Qwen3ForCausalLM(model_config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    if save_to is not None:
        save_model(model, tokenizer, save_to)
    return model, tokenizer


def save_model(model: Any, tokenizer: Any, path: str | Path) -> Path:
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def load_model(path_or_id: str | Path, *, dtype: str | None = None, device_map: Any = None) -> tuple[Any, Any]:
    """A causal LM and its tokenizer from a local folder (or a hub id, on machines that can reach the hub)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    local = Path(path_or_id)
    if isinstance(path_or_id, Path) or str(path_or_id).startswith((".", "/")):
        if not (local / "config.json").is_file():
            raise FileNotFoundError(
                f"no model at {str(local)!r} (config.json missing); build one with "
                "`progagent train sft --config configs/cpu-smoke.yaml` or pass a hub id / another local folder"
            )
    kwargs: dict[str, Any] = {}
    if dtype is not None:
        kwargs["dtype"] = getattr(torch, dtype) if isinstance(dtype, str) and dtype != "auto" else dtype
    if device_map is not None:
        kwargs["device_map"] = device_map
    tokenizer = AutoTokenizer.from_pretrained(str(path_or_id))
    model = AutoModelForCausalLM.from_pretrained(str(path_or_id), **kwargs)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer
