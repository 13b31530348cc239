"""Learning rows a reviewer accepts: per split and decoding, pass rate and mean R~ with 95% intervals, the process
metrics, and who produced them (model, stage, config hash, commit, temperature, samples, limits, seeds).

Intervals are over instances, never over samples of one instance (samples of one request are not independent):
the pass rate's is Wilson's at the instance count (with k samples per instance, the pooled rate with n = instances),
the mean R~'s Wilson's at the instance count too (conservative for a mean in [0, 1]: progagent_lib.stats.wilson_rate). For held-out tasks the per-task spread comes too.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable

from ..stats import wilson_rate
from .common import HARNESS_LABELS, HARNESS_NAMES, SHARED_STAGES, STAGE_LABELS, STAGES

INSTANCE = tuple[str, str, int]  # (task_id, scale, seed)


def process_metrics(trajectories: list[Any]) -> dict[str, float]:
    """What the policy did, beyond the verdict: valid programs, runtime errors, claim_done, task-tool use, context."""
    n = len(trajectories)
    programs = [p for t in trajectories for p in t.programs]
    submitted = len(programs) + sum(t.malformed_calls for t in trajectories)
    valid = sum(p.parsed for p in programs)
    return {
        # programs that parse, among programs and tool-call blocks the parser could not read (DTC: no programs)
        "valid_program_rate": valid / submitted if submitted else float("nan"),
        "runtime_error_rate": sum(t.runtime_errors for t in trajectories) / len(programs) if programs else float("nan"),
        "claim_done_rate": sum(t.end_reason == "claim_done" for t in trajectories) / n if n else float("nan"),
        "task_tool_call_rate": sum(t.tool_calls > 0 for t in trajectories) / n if n else float("nan"),
        "tool_output_tokens": sum(t.tool_output_tokens for t in trajectories) / n if n else float("nan"),
        "tool_calls": sum(t.tool_calls for t in trajectories) / n if n else float("nan"),
        "turns": sum(t.turns for t in trajectories) / n if n else float("nan"),
    }


def summarise(trajectories: list[Any]) -> dict[str, Any]:
    """Pass rate and mean R~ (with intervals over instances) and the process metrics of one group of episodes;
    episodes ended by an infrastructure error are counted and left out."""
    scored = [t for t in trajectories if not t.errored]
    by_instance: dict[INSTANCE, list[Any]] = defaultdict(list)
    for t in scored:
        by_instance[(t.task_id, t.scale, t.seed)].append(t)
    passes = [sum(t.reward == 1.0 for t in ts) / len(ts) for ts in by_instance.values()]
    scores = [sum(t.score for t in ts) / len(ts) for ts in by_instance.values()]
    n = len(by_instance)
    pass_rate = sum(passes) / n if n else float("nan")
    low, high = wilson_rate(pass_rate, n) if n else (0.0, 1.0)  # k samples: the pooled rate at the instance count
    mean_score = sum(scores) / n if n else float("nan")
    score_low, score_high = wilson_rate(mean_score, n) if n else (0.0, 1.0)  # conservative for a [0, 1] mean
    per_task: dict[str, list[float]] = defaultdict(list)
    for (task_id, _, _), rate in zip(by_instance, passes):
        per_task[task_id].append(rate)
    task_rates = {task: sum(r) / len(r) for task, r in sorted(per_task.items())}
    return {
        "instances": n,
        "tasks": len(task_rates),
        "episodes": len(trajectories),
        "errored": len(trajectories) - len(scored),
        "passed": sum(t.reward == 1.0 for t in scored),
        "pass_rate": pass_rate,
        "pass_low": low,
        "pass_high": high,
        "mean_score": mean_score,
        "score_low": score_low,
        "score_high": score_high,
        "task_pass_min": min(task_rates.values()) if task_rates else float("nan"),
        "task_pass_max": max(task_rates.values()) if task_rates else float("nan"),
        "tasks_with_a_pass": sum(r > 0 for r in task_rates.values()),
        "per_task": task_rates,
        **process_metrics(scored),
    }


def learning_rows(
    trajectories: list[Any],
    split_of: dict[INSTANCE, str],
    new_values_of: dict[INSTANCE, str] | None = None,
    **fields: Any,
) -> list[dict]:
    """One row per (harness, split) of `trajectories`, each carrying `fields` (stage, recipe, decoding, model, run
    identity, ...). Every episode must belong to a split (KeyError naming it otherwise). With `new_values_of` (the
    request values no trained instance drew, per instance; splits.Instance.new_values), a row whose split holds
    such instances also says how those did: new_values_instances, _passed, _pass_rate, _pass_low, _pass_high."""
    groups: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for t in trajectories:
        key = (t.task_id, t.scale, t.seed)
        if key not in split_of:
            raise KeyError(f"episode {key} belongs to no evaluation split")
        groups[(t.harness, split_of[key])].append(t)
    from .splits import SPLITS

    order = {s: i for i, s in enumerate(SPLITS)}
    rows = []
    for (harness, split), group in sorted(groups.items(), key=lambda item: (item[0][0], order.get(item[0][1], 99))):
        rows.append(
            {
                **fields,
                "harness": harness,
                "split": split,
                "seeds": sorted({t.seed for t in group}),
                "scales": sorted({t.scale for t in group}),
                **summarise(group),
                **_new_values_summary(group, new_values_of or {}),
            }
        )
    return rows


def _new_values_summary(group: list[Any], new_values_of: dict[INSTANCE, str]) -> dict[str, Any]:
    fresh = [t for t in group if new_values_of.get((t.task_id, t.scale, t.seed))]
    if not fresh:
        return {}
    summary = summarise(fresh)
    return {f"new_values_{k}": summary[k] for k in ("instances", "passed", "pass_rate", "pass_low", "pass_high")}


def config_hash(config: Any) -> str:
    """A short hash of a config (a dataclass or dict), ignoring where things are (an engine's URL changes per start;
    output and task folders differ between checkouts) and where the logs are also sent (report_to)."""
    from dataclasses import asdict, is_dataclass

    data = asdict(config) if is_dataclass(config) and not isinstance(config, type) else dict(config)
    ignored = ("engine_url", "engine_model", "output_dir", "tasks_root", "report_to")

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in sorted(value.items()) if k not in ignored}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return hashlib.sha256(json.dumps(strip(data), sort_keys=True, default=str).encode()).hexdigest()[:12]


def commit_of(repo: str | Path | None = None) -> str:
    """The checkout's commit, with "+dirty" when tracked files outside figures/ differ from it; "unknown" outside git."""
    cwd = str(repo or Path(__file__).resolve().parents[2])
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        # figures/ is rewritten by the notebooks themselves: a run's own outputs do not make its source dirty
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)figures"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def format_learning_table(rows: Iterable[dict]) -> str:
    """Markdown: per split, stage and decoding, pass rate and mean R~ with intervals, and the process metrics."""
    lines = [
        "| split | stage | recipe | harness | decoding | instances | episodes | pass rate (95% CI) | mean R~ (95% CI) "
        "| valid programs | runtime errors | claim_done | task-tool use | tool-output tokens |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def pct(value: float) -> str:
        return "-" if value != value else f"{value:.2f}"

    for r in rows:
        lines.append(
            f"| {r['split']} | {r['stage']} | {r.get('recipe', r['harness'])} | {r['harness']} | {r['decoding']} | "
            f"{r['instances']} | {r['episodes']} | {r['pass_rate']:.2f} ({r['pass_low']:.2f}-{r['pass_high']:.2f}) | "
            f"{r['mean_score']:.2f} ({r['score_low']:.2f}-{r['score_high']:.2f}) | {pct(r['valid_program_rate'])} | "
            f"{pct(r['runtime_error_rate'])} | {pct(r['claim_done_rate'])} | {pct(r['task_tool_call_rate'])} | "
            f"{r['tool_output_tokens']:.0f} |"
        )
        if r.get("new_values_instances"):  # (b)'s instances whose request has a value no training seed drew
            lines.append(
                f"| {r['split']}: new values only | {r['stage']} | {r.get('recipe', r['harness'])} | {r['harness']} | "
                f"{r['decoding']} | {r['new_values_instances']} | - | {r['new_values_pass_rate']:.2f} "
                f"({r['new_values_pass_low']:.2f}-{r['new_values_pass_high']:.2f}) | - | - | - | - | - | - |"
            )
    return "\n".join(lines)


def _rank(names: Iterable[str], name: str) -> int:
    """Where `name` comes in `names` (a sequence or a live view of a table's keys); unknown names last."""
    names = list(names)
    return names.index(name) if name in names else len(names)


def cross_harness_rows(
    rows: Iterable[dict], decoding: str = "greedy", splits: Iterable[str] | None = None
) -> list[dict]:
    """The paper's cross-harness table from learning rows: one row per (stage, recipe, harness played), the splits
    pooled (passes and instances summed; the interval Wilson's at the pooled instance count; mean R~ and the process
    metrics weighted by instances). `splits` (default every split present) chooses which are pooled."""
    wanted = set(splits) if splits is not None else None
    groups: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
    for r in rows:
        if r.get("decoding") == decoding and (wanted is None or r["split"] in wanted):
            groups[(r["stage"], r.get("recipe", r["harness"]), r["harness"])].append(r)

    def order(key: tuple[str, str, str]) -> tuple:
        stage, recipe, harness = key
        shared = stage in SHARED_STAGES  # one model for every recipe: listed once, first
        return (
            not shared,
            _rank(STAGES, stage) if shared else 0,
            _rank(HARNESS_NAMES, recipe),
            _rank(STAGES, stage),
            _rank(HARNESS_NAMES, harness),
        )

    out, seen_shared = [], set()
    for key in sorted(groups, key=order):
        stage, recipe, harness = key
        group = groups[key]
        if stage in SHARED_STAGES:
            if (stage, harness) in seen_shared:  # the same model under every recipe (same_weights_as): once
                continue
            seen_shared.add((stage, harness))
        n = sum(r["instances"] for r in group)
        passed = sum(r["pass_rate"] * r["instances"] for r in group)
        low, high = wilson_rate(passed / n, n) if n else (float("nan"), float("nan"))

        def mean(name: str, group: list[dict] = group) -> float:
            values = [
                (r[name], r["instances"]) for r in group if r.get(name) == r.get(name) and r.get(name) is not None
            ]
            weight = sum(w for _, w in values)
            return sum(v * w for v, w in values) / weight if weight else float("nan")

        out.append(
            {
                "stage": stage,
                "recipe": "-" if stage in SHARED_STAGES else recipe,
                "harness": harness,
                "splits": sorted(r["split"] for r in group),
                "instances": n,
                "passed": round(passed, 3),
                "pass_rate": passed / n if n else float("nan"),
                "pass_low": low,
                "pass_high": high,
                "mean_score": mean("mean_score"),
                "tool_calls": mean("tool_calls"),
                "turns": mean("turns"),
                "tool_output_tokens": mean("tool_output_tokens"),
                "claim_done_rate": mean("claim_done_rate"),
                "same_weights_as": next((r["same_weights_as"] for r in group if r.get("same_weights_as")), None),
            }
        )
    return out


def model_label(stage: str, recipe: str) -> str:
    """'base model', 'memorization baseline' (one for every recipe), else e.g. 'DTC recipe, GSPO'."""
    if stage in SHARED_STAGES:
        return STAGE_LABELS[stage]
    return f"{HARNESS_LABELS.get(recipe, recipe)} recipe, {STAGE_LABELS.get(stage, stage)}"


def format_cross_harness_table(rows: Iterable[dict], decoding: str = "greedy") -> str:
    """Markdown: one line per model (stage, recipe), one column per harness played: passed/instances (95% CI) and
    mean R~."""
    table = cross_harness_rows(rows, decoding)
    harnesses = [h for h in HARNESS_NAMES if any(r["harness"] == h for r in table)]
    models = list(dict.fromkeys((r["stage"], r["recipe"]) for r in table))
    cells = {(r["stage"], r["recipe"], r["harness"]): r for r in table}
    lines = [
        "| model | " + " | ".join(f"under {HARNESS_LABELS[h]}" for h in harnesses) + " |",
        "|---|" + "---|" * len(harnesses),
    ]
    for stage, recipe in models:
        name = model_label(stage, recipe)
        same = next(
            (
                cells[(stage, recipe, h)]["same_weights_as"]
                for h in harnesses
                if (stage, recipe, h) in cells
                and cells[(stage, recipe, h)]["same_weights_as"]
                and stage not in SHARED_STAGES
            ),
            None,
        )
        name += f" (weights = {STAGE_LABELS.get(same, same)}'s)" if same else ""
        row = []
        for h in harnesses:
            c = cells.get((stage, recipe, h))
            row.append(
                "-"
                if c is None
                else f"{c['passed']:g}/{c['instances']} ({c['pass_low']:.2f}-{c['pass_high']:.2f}), "
                f"R~ {c['mean_score']:.2f}"
            )
        lines.append(f"| {name} | " + " | ".join(row) + " |")
    return "\n".join(lines)


__all__ = [
    "commit_of",
    "config_hash",
    "cross_harness_rows",
    "model_label",
    "format_cross_harness_table",
    "format_learning_table",
    "learning_rows",
    "process_metrics",
    "summarise",
]
