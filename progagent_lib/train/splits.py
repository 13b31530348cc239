"""Evaluation splits that separate learning from memorising one string.

Three held-out splits, each a list of (task, scale, seed) instances labelled with its split:

- `seeds` (a): trained tasks, seeds never trained on whose instruction parameters equal those of a trained
  instance. Same request, other data: a model that memorised the trained program for that request passes.
- `params` (b): trained tasks, seeds whose parameters differ from every trained instance's. Another request of a
  known task: the replayed program carries the wrong parameters (certification checks that it then fails).
- `tasks` (c): tasks never trained on, including whole domains with no trained task.

A trained (task, parameters, seed) never lands in a held-out split: `make_splits` draws the candidates from
`first_seed` up, skipping every trained seed of the task, and `check_disjoint` proves the result against the
training instances (it runs on every split set that `make_splits` returns).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

from ..task.scales import SCALES
from ..config import ConfigError

SPLITS = ("seeds", "params", "tasks")
SPLIT_LABELS = {"seeds": "(a) held-out seeds", "params": "(b) held-out parameters", "tasks": "(c) held-out tasks"}


class SplitError(ConfigError):
    """A split that cannot be built or would leak a trained instance (raised before any compute)."""


@dataclass
class SplitConfig:
    """How many held-out instances each split gets. Every field is validated in `__post_init__`."""

    seeds_per_task: int = field(
        default=1, metadata={"help": "(a) instances per trained task (same parameters as a trained instance)."}
    )
    params_per_task: int = field(
        default=1,
        metadata={
            "help": "(b) instances per trained task whose request no trained instance had (with values_per_task: "
            "each of its values drawn by some trained instance)."
        },
    )
    values_per_task: int = field(
        default=0,
        metadata={
            "help": "More (b) instances per trained task, each with a request value (a category, a threshold) that no "
            "trained instance drew: the values a training stage's seeds leave out are held out."
        },
    )
    max_trained_tasks: int | None = field(
        default=None,
        metadata={
            "help": "(a) and (b) on at most this many trained tasks, taken round-robin over their domains (None: every "
            "trained task)."
        },
    )
    held_out_tasks: list[str] = field(default_factory=list, metadata={"help": "(c) task ids never trained on."})
    seeds_per_held_out_task: int = field(default=1, metadata={"help": "(c) instances per held-out task."})
    first_seed: int = field(
        default=1000, metadata={"help": "Held-out seeds are drawn from here up (training uses low seeds)."}
    )
    search: int = field(default=400, metadata={"help": "Seeds tried per task before a split is declared impossible."})
    scale: str = field(default="v0", metadata={"help": "The scale (v0..v3) every held-out instance is played at."})

    def __post_init__(self) -> None:
        for name in ("seeds_per_task", "params_per_task", "values_per_task", "seeds_per_held_out_task"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise SplitError(f"splits.{name}={value!r}: must be an integer >= 0")
        if self.max_trained_tasks is not None and (
            not isinstance(self.max_trained_tasks, int) or self.max_trained_tasks < 1
        ):
            raise SplitError(f"splits.max_trained_tasks={self.max_trained_tasks!r}: must be an integer >= 1 or null")
        if not isinstance(self.search, int) or self.search < 1:
            raise SplitError(f"splits.search={self.search!r}: must be an integer >= 1")
        if not isinstance(self.first_seed, int) or self.first_seed < 0:
            raise SplitError(f"splits.first_seed={self.first_seed!r}: must be an integer >= 0")
        if self.scale not in SCALES:
            raise SplitError(f"splits.scale={self.scale!r}: must be one of {', '.join(SCALES)}")
        if not isinstance(self.held_out_tasks, list) or not all(isinstance(t, str) for t in self.held_out_tasks):
            raise SplitError(f"splits.held_out_tasks={self.held_out_tasks!r}: must be a list of task ids")
        if len(set(self.held_out_tasks)) != len(self.held_out_tasks):
            raise SplitError(f"splits.held_out_tasks lists a task twice: {self.held_out_tasks}")


@dataclass(frozen=True)
class Instance:
    task_id: str
    scale: str
    seed: int
    split: str
    params: str = "{}"  # the instance's parameters as canonical JSON (what the split was decided on)
    new_values: str = ""  # (b): the request values no trained instance drew, "name=value; ..." ("" when none)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class TrainedInstances:
    """Everything training sees: per task, the seeds (at any scale) it was trained on."""

    seeds: dict[str, set[int]] = field(default_factory=dict)

    def add(self, task_ids: Iterable[str], seeds: Iterable[int]) -> "TrainedInstances":
        seeds = list(seeds)
        for task_id in task_ids:
            self.seeds.setdefault(task_id, set()).update(int(s) for s in seeds)
        return self

    @property
    def task_ids(self) -> list[str]:
        return sorted(self.seeds)


def params_key(params: dict) -> str:
    return json.dumps(params, sort_keys=True, separators=(",", ":"))


def trained_params(task: Any, seeds: Iterable[int]) -> set[str]:
    return {params_key(task.params_for(seed)) for seed in seeds}


def trained_values(task: Any, seeds: Iterable[int]) -> dict[str, set[str]]:
    """Per request parameter, the values (as canonical JSON) the trained seeds drew."""
    seen: dict[str, set[str]] = {}
    for seed in seeds:
        for name, value in task.params_for(seed).items():
            seen.setdefault(name, set()).add(json.dumps(value, sort_keys=True))
    return seen


def new_values(params: dict, seen: dict[str, set[str]]) -> str:
    """The values of `params` that `seen` (trained_values) lacks, as "name=value; ..." ("" when none)."""
    return "; ".join(
        f"{name}={value}"
        for name, value in sorted(params.items())
        if json.dumps(value, sort_keys=True) not in seen.get(name, set())
    )


def make_splits(tasks_by_id: dict[str, Any], trained: TrainedInstances, config: SplitConfig) -> list[Instance]:
    """The held-out instances of the three splits (in split, task, seed order). Raises SplitError, naming the task,
    when a held-out task is also trained, a task is unknown, or a split that asks for instances gets none."""
    unknown = [t for t in [*trained.task_ids, *config.held_out_tasks] if t not in tasks_by_id]
    if unknown:
        raise SplitError(f"unknown task id(s) {unknown}: not in the pool")
    both = sorted(set(config.held_out_tasks) & set(trained.task_ids))
    if both:
        raise SplitError(
            f"held-out task(s) {both} are also trained on: split (c) holds only tasks never trained "
            "(remove them from splits.held_out_tasks or from the training tasks)"
        )
    instances: list[Instance] = []
    for task_id in spread_over_domains(trained.task_ids, config.max_trained_tasks):
        task = tasks_by_id[task_id]
        seen = trained_params(task, trained.seeds[task_id])
        values = trained_values(task, trained.seeds[task_id])
        # "values": (b) instances with a request value no trained seed drew; "params": (b) with every value seen
        want = {"seeds": config.seeds_per_task, "params": config.params_per_task, "values": config.values_per_task}
        found: dict[str, list[Instance]] = {"seeds": [], "params": [], "values": []}
        for seed in range(config.first_seed, config.first_seed + config.search):
            if seed in trained.seeds[task_id]:
                continue
            params = task.params_for(seed)
            key, unseen = params_key(params), new_values(params, values)
            # without values_per_task, params_per_task counts every new request, new values or not
            kind = "seeds" if key in seen else "values" if unseen and config.values_per_task else "params"
            if len(found[kind]) < want[kind]:
                split = "seeds" if kind == "seeds" else "params"
                found[kind].append(Instance(task_id, config.scale, seed, split, key, unseen))
            if all(len(found[k]) >= want[k] for k in want):
                break
        for kind, what, knob in (
            ("seeds", "drew a trained instance's parameters again", "seeds_per_task"),
            ("params", "drew a new request of values trained instances drew", "params_per_task"),
            ("values", "drew a request value no trained instance drew", "values_per_task"),
        ):
            if len(found[kind]) < want[kind]:
                raise SplitError(
                    f"split {SPLIT_LABELS['seeds' if kind == 'seeds' else 'params']}: on {task_id}, only "
                    f"{len(found[kind])} of seeds {config.first_seed}-{config.first_seed + config.search - 1} {what} "
                    f"(wanted {want[kind]}); raise splits.search or lower splits.{knob}"
                )
            instances += found[kind]
    for task_id in config.held_out_tasks:
        task = tasks_by_id[task_id]
        for seed in range(config.first_seed, config.first_seed + config.seeds_per_held_out_task):
            instances.append(Instance(task_id, config.scale, seed, "tasks", params_key(task.params_for(seed))))
    for split, wanted in (
        ("seeds", config.seeds_per_task),
        ("params", config.params_per_task + config.values_per_task),
        ("tasks", config.seeds_per_held_out_task * bool(config.held_out_tasks)),
    ):
        if wanted and not any(i.split == split for i in instances):
            raise SplitError(f"split {SPLIT_LABELS[split]} has no instance")
    order = {s: i for i, s in enumerate(SPLITS)}
    instances.sort(key=lambda i: (order[i.split], i.task_id, i.seed))
    check_disjoint(instances, tasks_by_id, trained)
    return instances


def check_disjoint(instances: list[Instance], tasks_by_id: dict[str, Any], trained: TrainedInstances) -> None:
    """Raise SplitError if any held-out instance is a trained (task, seed), a (b) instance carries trained
    parameters, an (a) instance does not, or a (c) instance's task is trained."""
    for inst in instances:
        seeds = trained.seeds.get(inst.task_id)
        where = f"{inst.task_id} seed {inst.seed} in split {SPLIT_LABELS.get(inst.split, inst.split)}"
        if inst.split == "tasks":
            if seeds is not None:
                raise SplitError(f"{where}: the task is trained on")
            continue
        if seeds is None:
            raise SplitError(f"{where}: the task is not trained on (it belongs in split (c))")
        if inst.seed in seeds:
            raise SplitError(f"{where}: the seed is a training seed")
        same = params_key(tasks_by_id[inst.task_id].params_for(inst.seed)) in trained_params(
            tasks_by_id[inst.task_id], seeds
        )
        if inst.split == "params" and same:
            raise SplitError(f"{where}: its parameters are a trained instance's")
        if inst.split == "seeds" and not same:
            raise SplitError(f"{where}: its parameters are no trained instance's (it belongs in split (b))")


def spread_over_domains(task_ids: list[str], limit: int | None) -> list[str]:
    """At most `limit` of `task_ids` (sorted), one domain after another: a.x, b.x, c.x, a.y, b.y, ..."""
    by_domain: dict[str, list[str]] = {}
    for task_id in sorted(task_ids):
        by_domain.setdefault(task_id.split("/")[0], []).append(task_id)
    order: list[str] = []
    while any(by_domain.values()):
        for queue in by_domain.values():
            if queue:
                order.append(queue.pop(0))
    return sorted(order[:limit] if limit is not None else order)


def domains(task_ids: Iterable[str]) -> set[str]:
    return {t.split("/")[0] for t in task_ids}


__all__ = [
    "SPLITS",
    "SPLIT_LABELS",
    "Instance",
    "SplitConfig",
    "SplitError",
    "TrainedInstances",
    "check_disjoint",
    "domains",
    "make_splits",
    "params_key",
    "spread_over_domains",
    "trained_params",
]
