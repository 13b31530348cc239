"""Run configs from YAML: one dataclass per entry point, every knob with its default (TRL's XConfig style)."""
from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

import yaml

C = TypeVar("C")


class ConfigError(ValueError):
    """A YAML config names a field the run does not have, or gives it a value of the wrong shape."""


def from_dict(cls: type[C], data: dict[str, Any], where: str = "config") -> C:
    """Build dataclass `cls` from a mapping; nested dataclasses are built from nested mappings."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(f"{where}: unknown field(s) {unknown}; valid fields are {sorted(known)}")
    kwargs = {}
    for name, value in data.items():
        kind = _dataclass_in(hints[name])
        kwargs[name] = from_dict(kind, value, f"{where}.{name}") if kind is not None and isinstance(value, dict) else value
    return cls(**kwargs)


def _dataclass_in(hint: Any) -> type | None:
    if dataclasses.is_dataclass(hint):
        return hint
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        for arg in typing.get_args(hint):
            if dataclasses.is_dataclass(arg):
                return arg
    return None


def load_config(cls: type[C], path: str | Path, overrides: dict[str, Any] | None = None) -> C:
    """`cls` from a YAML file; `overrides` (e.g. from the command line) win over the file."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"config file {str(path)!r} not found; presets live in configs/")
    data = yaml.safe_load(path.read_text()) or {}
    data.update({k: v for k, v in (overrides or {}).items() if v is not None})
    return from_dict(cls, data, str(path))


def to_dict(config: Any) -> dict[str, Any]:
    return dataclasses.asdict(config)
