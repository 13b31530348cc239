"""A model folder as the workbench writes and reads it: `save_pretrained`'s files plus progagent_model.json, the record
of where the model came from (source, registered name, chat template name and sha256, conversion)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .chat_templates import template_info


METADATA_FILE = "progagent_model.json"


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
    return {
        "source": str(path),
        "registered_name": None,
        "chat_template": template_info(text if isinstance(text, str) else None),
    }


def save_model(model: Any, tokenizer: Any, path: str | Path, *, metadata: dict | None = None) -> Path:
    """save_pretrained for model and tokenizer, plus progagent_model.json (given, or carried over from load_model)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    if metadata is None and getattr(model, "progagent_metadata", None):
        metadata = {
            **model.progagent_metadata,
            "derived_from": model.progagent_metadata.get("loaded_from"),
            "conversion": None,
            "chat_template": template_info(tokenizer.chat_template)
            | {"name": model.progagent_metadata.get("chat_template", {}).get("name")},
        }
    if metadata is not None:
        (path / METADATA_FILE).write_text(json.dumps(metadata, indent=2, default=str) + "\n")
    return path
