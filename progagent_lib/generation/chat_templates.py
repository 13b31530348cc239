"""Chat templates: the one a model's tokenizer carries (its own, TRL's bundled Qwen3 template, or a .jinja file), what
a run records about it (a name and its sha256), and what follows from it: the pad token, and the end-of-turn token
generation stops at."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path
from typing import Any

from ..errors import ModelSourceError


def _package_folder(name: str) -> Path:
    """The folder of an installed package, found without importing it."""
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.origin is not None, f"{name} is not installed (pip install -r requirements.txt)"
    return Path(spec.origin).parent


# Found without importing trl, so that `progagent --help` stays fast.
QWEN3_CHAT_TEMPLATE_PATH = _package_folder("trl") / "chat_templates" / "qwen3.jinja"
CHAT_TEMPLATE_CHOICES = (
    '"model" (the tokenizer\'s own) | "qwen3" (TRL\'s bundled Qwen3 template) | a path to a .jinja file'
)


def qwen3_chat_template() -> str:
    """TRL's Qwen3 template, byte for byte (TRL matches templates by exact text)."""
    return QWEN3_CHAT_TEMPLATE_PATH.read_text(encoding="utf-8")


def chat_template_text(choice: str, tokenizer: Any = None, model_name: str = "the model") -> tuple[str, str]:
    """(name, template text) for a template choice; "model" is the tokenizer's own, which must exist."""
    if choice == "model":
        text = getattr(tokenizer, "chat_template", None) if tokenizer is not None else None
        if not text:
            raise ModelSourceError(
                f"the tokenizer of {model_name} has no chat template, and tool calling needs one: "
                f"choose one with chat_template={CHAT_TEMPLATE_CHOICES}"
            )
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
    return {"name": "qwen3" if text == qwen3_chat_template() else "custom", "sha256": sha256_text(text)}


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def end_of_turn_token(tokenizer: Any) -> str:
    """The token the chat template closes an assistant turn with (found by rendering, as the token adapter does)."""
    from ..harness.chat_format import ChatFormatError, end_of_turn_id

    try:
        return tokenizer.convert_ids_to_tokens(end_of_turn_id(tokenizer))
    except ChatFormatError as exc:
        raise ModelSourceError(str(exc)) from None


def prepare_tokenizer(tokenizer: Any, template: str | None, model_name: str) -> dict:
    """Put the chosen template on the tokenizer, set pad, and return the template record."""
    name, text = chat_template_text(template or "model", tokenizer, model_name)
    tokenizer.chat_template = text
    if tokenizer.pad_token is None or tokenizer.pad_token == end_of_turn_token(tokenizer):
        # Padding with the end-of-turn token would blur "stopped" with "padded"; a spare special token is better.
        spare = next(
            (
                t
                for t in ("<|endoftext|>", "<|finetune_right_pad_id|>", "<pad>", "<unk>")
                if t in tokenizer.get_vocab() and t != end_of_turn_token(tokenizer)
            ),
            None,
        )
        tokenizer.pad_token = spare or tokenizer.pad_token or tokenizer.eos_token
    return {"name": name, "sha256": sha256_text(text)}


def set_generation_tokens(model: Any, tokenizer: Any) -> None:
    end = tokenizer.convert_tokens_to_ids(end_of_turn_token(tokenizer))
    model.generation_config.eos_token_id = end
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.config.pad_token_id = tokenizer.pad_token_id
