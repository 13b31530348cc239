"""Run configs from YAML: one dataclass per entry point, every knob with its default and a one-line help (TRL's
XConfig style), validated in `__post_init__` with the checks below.

Every check raises `ConfigError` naming the config's field and what it may be, e.g.
`GSPORunConfig.reward='bianry': must be one of binary, dense`. Checks that need the disk (task ids that exist under
`tasks_root`) are not run at construction, which stays cheap: the run entry points call `validate_tasks()`.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, TypeVar

import yaml

from .errors import ConfigError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

C = TypeVar("C", bound="DataclassInstance")


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
        kwargs[name] = (
            from_dict(kind, value, f"{where}.{name}") if kind is not None and isinstance(value, dict) else value
        )
    try:
        return cls(**kwargs)
    except ConfigError as exc:  # say which file (and which section of it) holds the bad value
        raise type(exc)(f"{where}: {exc}") from None


def _dataclass_in(hint: Any) -> type[DataclassInstance] | None:
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return hint
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        for arg in typing.get_args(hint):
            if isinstance(arg, type) and dataclasses.is_dataclass(arg):
                return arg
    return None


def load_config(cls: type[C], path: str | Path, overrides: dict[str, Any] | None = None) -> C:
    """`cls` from a YAML file; `overrides` (e.g. from the command line) win over the file."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"config file {str(path)!r} not found; presets live in configs/")
    data = yaml.safe_load(path.read_text()) or {}
    if isinstance(data, dict):
        data.update({k: v for k, v in (overrides or {}).items() if v is not None})
    return from_dict(cls, data, str(path))


def to_dict(config: Any) -> dict[str, Any]:
    return dataclasses.asdict(config)


def help_of(cls: type, name: str) -> str:
    """A field's one-line help (its `metadata["help"]`)."""
    return next(f.metadata.get("help", "") for f in dataclasses.fields(cls) if f.name == name)


# --- checks for __post_init__: each names `<Config>.<field>=<value>` and what the field may be -------------------


def config_error(config: Any, name: str, rule: str) -> ConfigError:
    return ConfigError(f"{type(config).__name__}.{name}={getattr(config, name)!r}: {rule}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _yaml_hint(value: Any) -> str:
    """YAML 1.1 reads `1e-5` (no dot) as text: say how to write it as a number."""
    if isinstance(value, str):
        try:
            float(value)
        except ValueError:
            return ""
        return f" (YAML reads {value} as text: write it with a dot, e.g. 1.0e-5)"
    return ""


def check_choice(config: Any, name: str, allowed: Iterable[str], optional: bool = False) -> None:
    """The field is one of `allowed` (or None when optional)."""
    value, allowed = getattr(config, name), tuple(allowed)
    if optional and value is None:
        return
    if not isinstance(value, str) or value not in allowed:
        raise config_error(config, name, f"must be one of {', '.join(allowed)}" + (" or null" if optional else ""))


def check_choices(config: Any, name: str, allowed: Iterable[str], empty: bool = False) -> None:
    """The field is a list of distinct values from `allowed` (non-empty unless `empty`)."""
    value, allowed = getattr(config, name), tuple(allowed)
    rule = f"must be a list of distinct values from {', '.join(allowed)}" + ("" if empty else " (at least one)")
    if not isinstance(value, (list, tuple)) or (not value and not empty):
        raise config_error(config, name, rule)
    bad = [v for v in value if not isinstance(v, str) or v not in allowed]
    if bad:
        raise config_error(config, name, f"{bad} not allowed; {rule}")
    if len(set(value)) != len(value):
        raise config_error(config, name, f"lists a value twice; {rule}")


def check_number(
    config: Any,
    name: str,
    *,
    above: float | None = None,
    at_least: float | None = None,
    at_most: float | None = None,
    optional: bool = False,
    why: str = "",
) -> None:
    """The field is a finite number in the range (bools and text are refused)."""
    value = getattr(config, name)
    if optional and value is None:
        return
    bounds = [
        f"> {above:g}" if above is not None else "",
        f">= {at_least:g}" if at_least is not None else "",
        f"<= {at_most:g}" if at_most is not None else "",
    ]
    rule = "must be a number " + " and ".join(b for b in bounds if b) + (" or null" if optional else "") + why
    if not _is_number(value):
        raise config_error(config, name, rule + _yaml_hint(value))
    if (
        (above is not None and not value > above)
        or (at_least is not None and value < at_least)
        or (at_most is not None and value > at_most)
    ):
        raise config_error(config, name, rule)


def check_int(
    config: Any, name: str, *, at_least: int = 0, optional: bool = False, also: tuple[int, ...] = (), why: str = ""
) -> None:
    """The field is an integer >= `at_least` (or one of `also`, or None when optional)."""
    value = getattr(config, name)
    if optional and value is None:
        return
    rule = (
        f"must be an integer >= {at_least}" + "".join(f" or {v}" for v in also) + (" or null" if optional else "") + why
    )
    if isinstance(value, bool) or not isinstance(value, int) or (value < at_least and value not in also):
        raise config_error(config, name, rule)


def check_ints(config: Any, name: str, *, at_least: int = 0, empty: bool = False) -> None:
    """The field is a list of integers >= `at_least` (non-empty unless `empty`)."""
    value = getattr(config, name)
    rule = f"must be a list of integers >= {at_least}" + ("" if empty else " (at least one)")
    if (
        not isinstance(value, (list, tuple))
        or (not value and not empty)
        or any(isinstance(v, bool) or not isinstance(v, int) or v < at_least for v in value)
    ):
        raise config_error(config, name, rule)


def check_bool(config: Any, name: str) -> None:
    if not isinstance(getattr(config, name), bool):
        raise config_error(config, name, "must be true or false")


def check_text(config: Any, name: str, optional: bool = False, empty: bool = False) -> None:
    """The field is a string (non-empty unless `empty`; None when optional)."""
    value = getattr(config, name)
    if optional and value is None:
        return
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise config_error(
            config,
            name,
            ("must be a string" if empty else "must be a non-empty string") + (" or null" if optional else ""),
        )


def check_texts(config: Any, name: str, empty: bool = True) -> None:
    """The field is a list of distinct non-empty strings."""
    value = getattr(config, name)
    if (
        not isinstance(value, (list, tuple))
        or (not value and not empty)
        or any(not isinstance(v, str) or not v.strip() for v in value)
    ):
        raise config_error(config, name, "must be a list of non-empty strings" + ("" if empty else " (at least one)"))
    if len(set(value)) != len(value):
        raise config_error(config, name, "lists a value twice; must be a list of distinct strings")


def check_url(config: Any, name: str) -> None:
    """The field is None or an http(s) URL."""
    value = getattr(config, name)
    if value is not None and (not isinstance(value, str) or not value.startswith(("http://", "https://"))):
        raise config_error(config, name, "must be an http:// or https:// URL or null")


def check_nested(config: Any, name: str, kind: type, optional: bool = False) -> None:
    """The field holds a `kind` (built from a mapping of its fields by from_dict)."""
    value = getattr(config, name)
    if not (isinstance(value, kind) or (optional and value is None)):
        fields = ", ".join(f.name for f in dataclasses.fields(kind))
        raise config_error(
            config, name, f"must be a mapping of {kind.__name__} fields ({fields})" + (" or null" if optional else "")
        )


def check_budgets(config: Any) -> None:
    """The episode budgets (`Limits`) of a GSPO or evaluation config: positive or null (no limit), and a turn that
    fits the context."""
    for name in ("max_turns", "max_tool_calls", "max_new_tokens", "max_context_tokens", "max_observation_chars"):
        check_int(config, name, at_least=1, optional=True, why=" (null: no limit)")
    if (
        config.max_new_tokens is not None
        and config.max_context_tokens is not None
        and config.max_new_tokens > config.max_context_tokens
    ):
        raise config_error(
            config,
            "max_new_tokens",
            f"must be <= max_context_tokens={config.max_context_tokens} "
            "(one turn cannot be longer than the whole context)",
        )


def check_engine(config: Any) -> None:
    """engine_url / engine_model: a URL, and a served name only beside one."""
    check_url(config, "engine_url")
    check_text(config, "engine_model", optional=True)
    if config.engine_model is not None and not config.engine_url:
        raise config_error(
            config,
            "engine_model",
            "names the engine's served model, so it needs engine_url; set engine_url or drop engine_model (null)",
        )


# Transformers' SchedulerType values known when this was written: checked without importing transformers (seconds),
# which is imported only to look up a value outside this list.
LR_SCHEDULERS = (
    "linear",
    "cosine",
    "cosine_with_restarts",
    "polynomial",
    "constant",
    "constant_with_warmup",
    "inverse_sqrt",
    "reduce_lr_on_plateau",
    "cosine_with_min_lr",
    "cosine_warmup_with_min_lr",
    "warmup_stable_decay",
)


def check_lr_scheduler(config: Any, name: str = "lr_scheduler_type") -> None:
    value = getattr(config, name)
    if isinstance(value, str) and value in LR_SCHEDULERS:
        return
    from transformers.trainer_utils import SchedulerType

    allowed = [s.value for s in SchedulerType]
    if value not in allowed:
        raise config_error(config, name, f"must be one of transformers' schedulers: {', '.join(allowed)}")


def task_ids_under(tasks_root: str | Path) -> set[str] | None:
    """The ids (task.toml `id`) of the tasks under `tasks_root`, read without loading them; None if no such folder."""
    import tomllib

    from .task.task import find_task_dirs

    if not Path(tasks_root).is_dir():
        return None
    ids = set()
    for folder in find_task_dirs(tasks_root):
        try:
            ids.add(tomllib.loads((folder / "task.toml").read_text())["id"])
        except (OSError, tomllib.TOMLDecodeError, KeyError):
            continue  # a broken task: loading the pool reports it
    return ids


def check_task_ids(config: Any, name: str, tasks_root: str | Path, ids: Iterable[str] | None = None) -> None:
    """Every id in the field (or in `ids`) names a task under `tasks_root` (skipped when the folder does not exist)."""
    known = task_ids_under(tasks_root)
    if known is None:
        return
    missing = sorted(set(getattr(config, name) if ids is None else ids) - known)
    if missing:
        raise ConfigError(
            f"{type(config).__name__}.{name}: task id(s) {missing} not found under "
            f"{str(tasks_root)!r}; known ids: {', '.join(sorted(known))}"
        )
