"""Certification of task folders, and pool statistics per scale.

For every task, scale and seed, certification checks what makes a task usable for training and
evaluation: the oracle reaches R = 1, the instruction and tool schemas do not change across scales,
generation is deterministic, an empty answer scores R = 0, and the oracle's work is long-horizon
(several distinct tools, more than one page of some listing at v0, changes to the environment).

A task with instance parameters is certified on at least `MIN_PARAM_DRAWS` seeds whose parameters differ
(more seeds are taken when the given ones draw fewer), and on each instance the oracle bound to another
draw's parameters must fail (`one_program_cannot_pass_all`): no single program passes every instance.
At v0 each parameter must matter on its own too (`each_parameter_matters`): the oracle bound to the
instance's parameters with that one changed to another of its values must fail.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from ..cache import READY
from .scales import SCALES
from .task import Task, TaskLoadError, find_task_dirs, state_fingerprint

if TYPE_CHECKING:
    import polars as pl

MIN_PARAM_DRAWS = 4  # distinct parameter draws a parametrised task is certified on
MIN_PARAM_VALUES = 4  # values each parameter must take across the draws checked by `param_ranges`
PARAM_RANGE_SEEDS = 64  # seeds drawn to see a parameter's range

WRITE_HINTS = (
    "create",
    "update",
    "write",
    "set",
    "add",
    "assign",
    "cancel",
    "delete",
    "record",
    "approve",
    "reject",
    "book",
    "schedule",
    "issue",
    "send",
    "place",
    "post",
    "flag",
    "mark",
    "close",
    "submit",
)


@dataclass
class Check:
    task: str
    scale: str
    seed: int | None
    name: str
    passed: bool
    detail: str = ""


@dataclass
class CertifyReport:
    checks: list[Check] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    def add(self, *args, **kwargs) -> None:
        self.checks.append(Check(*args, **kwargs))

    def table(self) -> pl.DataFrame:
        """One row per task: per scale "ok" or the failed checks, the instances (seeds, each its own parameter
        draw for a parametrised task) certified, and the first problem found."""
        import polars as pl

        rows: dict[str, dict] = {}
        seeds: dict[str, set] = {}
        for c in self.checks:
            row = rows.setdefault(c.task, {"task": c.task, "checks": 0, "failed": 0, "first_problem": ""})
            row["checks"] += 1
            if c.seed is not None:
                seeds.setdefault(c.task, set()).add(c.seed)
            cell = row.setdefault(c.scale, "ok")
            if not c.passed:
                row["failed"] += 1
                row[c.scale] = c.name if cell == "ok" else (cell if c.name in cell.split(",") else f"{cell},{c.name}")
                row["first_problem"] = row["first_problem"] or f"{c.scale}/{c.seed}: {c.detail}"[:160]
        scales = sorted(dict.fromkeys(c.scale for c in self.checks), key=lambda s: (s == "all", s))
        records = [
            {
                "task": r["task"],
                **{s: r.get(s, "-") for s in scales},
                "draws": len(seeds.get(r["task"], ())),
                "checks": r["checks"],
                "failed": r["failed"],
                "first_problem": r["first_problem"],
            }
            for r in rows.values()
        ]
        return pl.DataFrame(records) if records else pl.DataFrame({"task": []})


def param_draw_seeds(task: Task, seeds: Iterable[int], draws: int = MIN_PARAM_DRAWS, search: int = 256) -> list[int]:
    """`seeds`, extended by the smallest further seeds until at least `draws` distinct parameter draws are covered."""
    chosen = list(dict.fromkeys(int(s) for s in seeds))
    if not task.parametrised:
        return chosen
    distinct = {json.dumps(task.params_for(s), sort_keys=True) for s in chosen}
    candidate = 0
    while len(distinct) < draws and candidate < search:
        key = json.dumps(task.params_for(candidate), sort_keys=True)
        if candidate not in chosen and key not in distinct:
            chosen.append(candidate)
            distinct.add(key)
        candidate += 1
    return chosen


def param_ranges(task: Task, seeds: int = PARAM_RANGE_SEEDS) -> dict[str, list]:
    """Each parameter's distinct values over the first `seeds` seeds (JSON-encoded, sorted)."""
    values: dict[str, set] = {name: set() for name in task.param_names}
    for seed in range(seeds):
        for name, value in task.params_for(seed).items():
            values[name].add(json.dumps(value, sort_keys=True))
    return {name: sorted(found) for name, found in values.items()}


def _certify_params(task: Task, ranges: dict[str, list], report: CertifyReport) -> None:
    """Each parameter takes at least MIN_PARAM_VALUES values (`ranges`: `param_ranges`), and there are at least two."""
    report.add(task.id, "all", None, "params_ge_2", len(ranges) >= 2, f"parameters: {list(ranges)}")
    narrow = {name: len(values) for name, values in ranges.items() if len(values) < MIN_PARAM_VALUES}
    report.add(
        task.id,
        "all",
        None,
        "param_values_ge_4",
        not narrow,
        f"values over {PARAM_RANGE_SEEDS} seeds: " + ", ".join(f"{n}: {len(v)}" for n, v in ranges.items()),
    )


def _certify_other_draw(task: Task, scale: str, seed: int, others: list[int], report: CertifyReport) -> None:
    """The oracle bound to another draw's parameters, on this instance, must not reach R = 1."""
    mine = task.params_for(seed)
    other = next((s for s in others if task.params_for(s) != mine), None)
    if other is None:
        report.add(
            task.id, scale, seed, "one_program_cannot_pass_all", False, "no other seed draws different parameters"
        )
        return
    env = task.instantiate(scale, seed)
    try:
        try:
            answer = task.oracle(env.tools, task.params_for(other))
        except Exception as exc:  # noqa: BLE001 - the other draw's program failing on this instance is a pass
            answer = f"(the program raised {type(exc).__name__})"
        result = env.verify(answer)
        report.add(
            task.id,
            scale,
            seed,
            "one_program_cannot_pass_all",
            result.reward == 0.0,
            f"the oracle bound to seed {other}'s parameters {task.params_for(other)} scored R={result.reward} "
            f"(R~={result.score:.2f}) on seed {seed} {mine}",
        )
    finally:
        env.close()


def _certify_each_parameter(task: Task, scale: str, seed: int, ranges: dict[str, list], report: CertifyReport) -> None:
    """Change one parameter at a time to another value of its range: the oracle bound to that must fail here."""
    mine = task.params_for(seed)
    passed_with = []
    for name, values in ranges.items():
        other = next((json.loads(v) for v in values if json.loads(v) != mine[name]), None)
        if other is None:
            continue
        env = task.instantiate(scale, seed)
        try:
            try:
                answer = task.oracle(env.tools, {**mine, name: other})
            except Exception as exc:  # noqa: BLE001 - the changed program failing on this instance is a pass
                answer = f"(the program raised {type(exc).__name__})"
            if env.verify(answer).reward != 0.0:
                passed_with.append(f"{name}={other!r} (instance: {mine[name]!r})")
        finally:
            env.close()
    report.add(
        task.id,
        scale,
        seed,
        "each_parameter_matters",
        not passed_with,
        "the oracle still reaches R = 1 with " + "; ".join(passed_with) if passed_with else "",
    )


def _certify_instance(task: Task, scale: str, seed: int, report: CertifyReport) -> tuple[str, str]:
    """Oracle and empty-answer checks for one (scale, seed). Returns (instruction, schemas json) for cross-scale checks."""
    env = task.instantiate(scale, seed)
    try:
        schemas = json.dumps(env.tool_schemas(), sort_keys=True)
        instruction = env.instruction
        before = state_fingerprint(env.db_path, env.workspace)
        started = time.perf_counter()
        answer = task.oracle(env.tools)
        seconds = time.perf_counter() - started
        result = env.verify(answer)
        failed = ", ".join(c.name for c in result.failed())
        report.add(
            task.id,
            scale,
            seed,
            "oracle_R1",
            result.reward == 1.0,
            f"R~={result.score:.2f}; failed: {failed}" if failed else f"{seconds:.2f}s, {len(env.call_log)} calls",
        )
        used = {c.name for c in env.call_log if c.ok}
        report.add(task.id, scale, seed, "uses_3_tools", len(used) >= 3, f"distinct tools used: {sorted(used)}")
        changed = state_fingerprint(env.db_path, env.workspace) != before
        report.add(
            task.id, scale, seed, "changes_state", changed, "the oracle left the database and workspace unchanged"
        )
        report.add(
            task.id,
            scale,
            seed,
            "final_response",
            isinstance(answer, str) and bool(answer.strip()),
            "the oracle returned an empty final response",
        )
        if scale == "v0":
            paged = any(c.ok and c.arguments.get("page", 1) >= 2 for c in env.call_log)
            report.add(task.id, scale, seed, "multi_page", paged, "no listing needed a second page at v0")
        criteria = len(result.criteria)
        report.add(task.id, scale, seed, "criteria_ge_4", criteria >= 4, f"{criteria} criteria")
    finally:
        env.close()
    env = task.instantiate(scale, seed)
    try:
        empty = env.verify("")
        report.add(task.id, scale, seed, "empty_R0", empty.reward == 0.0, f"an empty answer scored R={empty.reward}")
    finally:
        env.close()
    return instruction, schemas


def _certify_near_miss(task: Task, scale: str, seed: int, report: CertifyReport) -> None:
    """The task's near miss (a plausible wrong program) fails on the first certified instance of every scale, and at
    v0 it is near: some criterion passes (at larger scales one mistake may reach every criterion). Other instances are
    not asked: a draw of the data or the request may make its one mistake harmless there, or touch every criterion."""
    env = task.instantiate(scale, seed)
    try:
        result = env.verify(task.near_miss(env.tools))
        near = result.score > 0.0 or scale != "v0"
        report.add(
            task.id,
            scale,
            seed,
            "near_miss_R0",
            result.reward == 0.0 and near,
            f"the near miss scored R={result.reward}, R~={result.score:.2f} (it must fail, and at v0 pass something)",
        )
    finally:
        env.close()


def _certify_determinism(task: Task, scale: str, seed: int, report: CertifyReport) -> None:
    cached = task.state_dir(scale, seed)
    scratch = Path(tempfile.mkdtemp(prefix="progagent-certify-"))
    try:
        task.generate_into(scratch / "state", scale, seed)
        fresh = state_fingerprint(scratch / "state" / "data.db", scratch / "state" / "workspace")
        same = fresh == (cached / READY).read_text().strip()
        report.add(task.id, scale, seed, "deterministic", same, "regenerating gave a different database or workspace")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def certify_task(
    task: Task,
    scales: Iterable[str] = SCALES,
    seeds: Iterable[int] = (0, 1),
    report: CertifyReport | None = None,
    draws: int = MIN_PARAM_DRAWS,
) -> CertifyReport:
    """Certify one task on `seeds` at `scales`; a parametrised task on at least `draws` distinct parameter draws."""
    report = report or CertifyReport()
    seeds = param_draw_seeds(task, seeds, draws)
    ranges = param_ranges(task) if task.parametrised else {}
    if task.parametrised:
        _certify_params(task, ranges, report)
    seen: dict[str, tuple[str, str]] = {}
    for scale in scales:
        for seed in seeds:
            try:
                _certify_determinism(task, scale, seed, report)
                instruction, schemas = _certify_instance(task, scale, seed, report)
                if seed == seeds[0]:  # the same instance at every scale: its instruction and schemas must agree
                    seen[scale] = (instruction, schemas)
                    if task.has_near_miss:  # one plausible mistake, shown on one instance per scale
                        _certify_near_miss(task, scale, seed, report)
                if task.parametrised:
                    _certify_other_draw(
                        task, scale, seed, seeds[seeds.index(seed) + 1 :] + seeds[: seeds.index(seed)], report
                    )
                    if scale == "v0":
                        _certify_each_parameter(task, scale, seed, ranges, report)
            except Exception as exc:  # noqa: BLE001 - a broken task is reported, and certification goes on
                report.add(task.id, scale, seed, "runs", False, f"{type(exc).__name__}: {exc}")
    if len({prompt for prompt, _ in seen.values()}) > 1 or len({s for _, s in seen.values()}) > 1:
        report.add(
            task.id, "all", None, "same_across_scales", False, "the instruction or tool schemas differ between scales"
        )
    elif seen:
        report.add(task.id, "all", None, "same_across_scales", True)
    return report


def certify_paths(
    paths: Iterable[str | Path], scales: Iterable[str] = SCALES, seeds: Iterable[int] = (0, 1), progress: bool = True
) -> CertifyReport:
    """Certify every task under `paths`; a task that fails to load is reported and skipped."""
    from tqdm.auto import tqdm

    report = CertifyReport()
    folders = [folder for path in paths for folder in find_task_dirs(path)]
    if not folders:
        report.add(", ".join(map(str, paths)), "all", None, "found", False, "no task.toml under the given paths")
    scales, seeds = list(scales), list(seeds)
    for folder in tqdm(folders, desc="certify", unit="task", disable=not progress):
        try:
            task = Task(folder)
        except TaskLoadError as exc:
            report.add(str(folder), "all", None, "loads", False, str(exc))
            continue
        certify_task(task, scales, seeds, report)
    return report


@dataclass
class ScaleStats:
    task: str
    domain: str
    scale: str
    db_kb: float
    files: int
    tools: int


def pool_stats(tasks: list[Task], scales: Iterable[str] = SCALES, seed: int = 0) -> list[ScaleStats]:
    rows = []
    for task in tasks:
        for scale in scales:
            state = task.state_dir(scale, seed)
            files = sum(1 for p in (state / "workspace").rglob("*") if p.is_file())
            rows.append(
                ScaleStats(
                    task.id,
                    task.domain,
                    scale,
                    (state / "data.db").stat().st_size / 1024,
                    files,
                    len(task.env_class.tool_specs),
                )
            )
    return rows
