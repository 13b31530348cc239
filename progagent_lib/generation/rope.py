"""Context extension: `SOURCE@POSITIONS[:yarn|linear]` is the model with its RoPE scaled to POSITIONS, a folder written
once whose config.json says so (the weights linked, not copied); and the context any model's config gives."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ..cache import cache_root
from ..errors import ModelSourceError
from .model_folder import METADATA_FILE, model_metadata


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
        raise ModelSourceError(
            f"{source!r}: unknown RoPE scaling {rope!r}; write {match['base']}@{match['positions']}"
            f"{match['k']}:yarn or :linear"
        )
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
        raise ModelSourceError(
            f"{name}: its config has no RoPE parameters (rope_theta) and max_position_embeddings, "
            "so a scaled context cannot be written into it"
        )
    if rope.get("rope_type", rope.get("type", "default")) != "default":
        raise ModelSourceError(f"{name}: its RoPE is already scaled ({rope}); scale the unscaled model instead")
    if positions <= original:
        raise ModelSourceError(
            f"{name}@{positions}: the model already has {original} positions; a scaled context "
            f"must be longer (e.g. @{original * 4})"
        )
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
        shutil.rmtree(target, ignore_errors=True)  # its links lead nowhere (the original moved): written anew
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
        metadata["context"] = {
            "positions": positions,
            "original_positions": config["rope_parameters"].get(
                "original_max_position_embeddings", config["max_position_embeddings"]
            ),
            "rope": config["rope_parameters"],
        }
        (staging / METADATA_FILE).write_text(json.dumps(metadata, indent=2) + "\n")
        staging.rename(target)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if not (target / "config.json").is_file():  # not a concurrent writer that got there first
            raise
    return target


def model_positions(config: Any) -> int | None:
    """The context a model can take (a transformers config, or a config.json's dict): max_position_embeddings, or
    with a scaled RoPE the original positions times the factor (YaRN's `original_max_position_embeddings`; for
    linear scaling max_position_embeddings is the original), whichever is larger."""
    get = config.get if isinstance(config, dict) else (lambda key, default=None: getattr(config, key, default))
    positions = get("max_position_embeddings")
    scaling = get("rope_parameters") or get("rope_scaling") or {}
    if (
        positions
        and isinstance(scaling, dict)
        and scaling.get("factor")
        and scaling.get("rope_type", scaling.get("type")) not in (None, "default")
    ):
        base = scaling.get("original_max_position_embeddings") or positions
        positions = max(positions, int(base * float(scaling["factor"])))
    return positions
