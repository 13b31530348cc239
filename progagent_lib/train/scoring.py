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

INSTANCE = tuple[str, str, int]   # (task_id, scale, seed)


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
    low, high = wilson_rate(pass_rate, n) if n else (0.0, 1.0)   # k samples: the pooled rate at the instance count
    mean_score = sum(scores) / n if n else float("nan")
    score_low, score_high = wilson_rate(mean_score, n) if n else (0.0, 1.0)   # conservative for a [0, 1] mean
    per_task: dict[str, list[float]] = defaultdict(list)
    for (task_id, _, _), rate in zip(by_instance, passes):
        per_task[task_id].append(rate)
    task_rates = {task: sum(r) / len(r) for task, r in sorted(per_task.items())}
    return {"instances": n, "tasks": len(task_rates), "episodes": len(trajectories),
            "errored": len(trajectories) - len(scored), "passed": sum(t.reward == 1.0 for t in scored),
            "pass_rate": pass_rate, "pass_low": low, "pass_high": high,
            "mean_score": mean_score, "score_low": score_low, "score_high": score_high,
            "task_pass_min": min(task_rates.values()) if task_rates else float("nan"),
            "task_pass_max": max(task_rates.values()) if task_rates else float("nan"),
            "tasks_with_a_pass": sum(r > 0 for r in task_rates.values()), "per_task": task_rates,
            **process_metrics(scored)}


def learning_rows(trajectories: list[Any], split_of: dict[INSTANCE, str], **fields: Any) -> list[dict]:
    """One row per (harness, split) of `trajectories`, each carrying `fields` (stage, recipe, decoding, model, run
    identity, ...). Every episode must belong to a split (KeyError naming it otherwise)."""
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
        rows.append({**fields, "harness": harness, "split": split, "seeds": sorted({t.seed for t in group}),
                     "scales": sorted({t.scale for t in group}), **summarise(group)})
    return rows


def config_hash(config: Any) -> str:
    """A short hash of a config (a dataclass or dict), ignoring where things are (an engine's URL changes per start;
    output and task folders differ between checkouts)."""
    from dataclasses import asdict, is_dataclass

    data = asdict(config) if is_dataclass(config) else dict(config)

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in sorted(value.items()) if k not in ("engine_url", "engine_model", "output_dir", "tasks_root")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return hashlib.sha256(json.dumps(strip(data), sort_keys=True, default=str).encode()).hexdigest()[:12]


def commit_of(repo: str | Path | None = None) -> str:
    """The checkout's commit, with "+dirty" when tracked files outside figures/ differ from it; "unknown" outside git."""
    cwd = str(repo or Path(__file__).resolve().parents[2])
    try:
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=cwd, capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        # figures/ is rewritten by the notebooks themselves: a run's own outputs do not make its source dirty
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)figures"],
                               cwd=cwd, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def format_learning_table(rows: Iterable[dict]) -> str:
    """Markdown: per split, stage and decoding, pass rate and mean R~ with intervals, and the process metrics."""
    lines = ["| split | stage | recipe | harness | decoding | instances | episodes | pass rate (95% CI) | mean R~ (95% CI) "
             "| valid programs | runtime errors | claim_done | task-tool use | tool-output tokens |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def pct(value: float) -> str:
        return "-" if value != value else f"{value:.2f}"

    for r in rows:
        lines.append(
            f"| {r['split']} | {r['stage']} | {r.get('recipe', r['harness'])} | {r['harness']} | {r['decoding']} | "
            f"{r['instances']} | {r['episodes']} | {r['pass_rate']:.2f} ({r['pass_low']:.2f}-{r['pass_high']:.2f}) | "
            f"{r['mean_score']:.2f} ({r['score_low']:.2f}-{r['score_high']:.2f}) | {pct(r['valid_program_rate'])} | "
            f"{pct(r['runtime_error_rate'])} | {pct(r['claim_done_rate'])} | {pct(r['task_tool_call_rate'])} | "
            f"{r['tool_output_tokens']:.0f} |")
    return "\n".join(lines)


__all__ = ["commit_of", "config_hash", "format_learning_table", "learning_rows", "process_metrics", "summarise"]
