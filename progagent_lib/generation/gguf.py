"""GGUF files (smollm2's weights ship as a Q4_1 GGUF file): checked by their magic bytes, then converted once into a
plain fp32 Hugging Face folder in the cache (dequantised on load), keyed by the file's and the chat template's
digests."""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ..cache import cache_root
from ..errors import ModelSourceError
from .chat_templates import chat_template_text, end_of_turn_token, prepare_tokenizer, set_generation_tokens, sha256_text
from .model_folder import METADATA_FILE, save_model


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


def check_gguf(path: Path) -> None:
    if not path.is_file():
        raise ModelSourceError(f"GGUF file {str(path)!r} does not exist")
    try:
        with path.open("rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise ModelSourceError(f"GGUF file {str(path)!r} cannot be read: {exc}") from None
    if magic != b"GGUF":
        raise ModelSourceError(f"{str(path)!r} is not a GGUF file (it does not start with the GGUF magic bytes)")


def convert_gguf(path: str | Path, *, chat_template: str = "model", registered: str | None = None) -> Path:
    """A GGUF file as a plain fp32 Hugging Face folder in the cache, made once (atomically) and reused.

    transformers dequantises GGUF weights on load but marks the model as quantized, so `save_pretrained` refuses
    it; the model is rebuilt from its config without `quantization_config` and given the loaded weights.
    The folder is keyed by the file's and the template's digests, and carries `progagent_model.json`.
    """
    path = Path(path).expanduser().resolve()
    check_gguf(path)
    file_digest = _sha256_file(path)
    # The template's text is part of the key, so a changed template file is a new folder, never a stale one.
    template_key = chat_template if chat_template in ("model", "qwen3") else chat_template_text(chat_template)[1]
    key = hashlib.sha256(f"{file_digest}\n{sha256_text(template_key)}".encode()).hexdigest()[:12]
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
        raise ModelSourceError(
            f"transformers cannot load GGUF file {str(path)!r}: {type(exc).__name__}: {exc}"
        ) from exc
    template = prepare_tokenizer(tokenizer, chat_template, registered or str(path))
    config = quantized.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.dtype = torch.float32
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(quantized.state_dict(), strict=False)
    missing = [k for k in missing if k not in _tied_keys(model)]
    if missing or unexpected:
        raise ModelSourceError(
            f"GGUF file {str(path)!r}: the rebuilt model does not match its weights "
            f"(missing {missing[:5]}, unexpected {unexpected[:5]})"
        )
    model.tie_weights()
    set_generation_tokens(model, tokenizer)
    metadata = {
        "source": str(path),
        "registered_name": registered,
        "chat_template": template,
        "end_of_turn_token": end_of_turn_token(tokenizer),
        "pad_token": tokenizer.pad_token,
        "conversion": {
            "from": "gguf",
            "gguf_file": path.name,
            "gguf_sha256": file_digest,
            "dtype": "float32",
            "architecture": type(model).__name__,
            "parameters": sum(p.numel() for p in model.parameters()),
        },
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
