"""A training run's results as Markdown tables: `progagent train report RUN_DIR`.

The tables that docs/results.md and closing notes quote, written from the run's own files instead of by hand:
- pass rate by split and stage, one table per recipe and decoding: passed/episodes, the 95% Wilson interval and the
  mean R~ (learning.jsonl), with (b)'s instances whose request has a value no training seed drew as a row of their own;
- GSPO's optimizer steps that updated, and the probe's prompts before and after RL (dynamics.jsonl,
  pre_rl_pass_rates.json, post_rl_pass_rates.json);
- the paired differences on the same instances: GSPO against SFT, the SFT control and RFT (paired.json);
- each stage's wall time (seconds.json).

`RUN_DIR` is a pipeline's output folder (`runs/<profile>`) or a flat copy of its files (figures/cpu-smoke-5c4bde5):
each file is looked up by name at the top, then one level down (the GSPO folder, `gspo-<recipe>/`). A file that is
missing leaves its section out, and says so in one line.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..train.common import (
    DYNAMICS_FILE,
    LEARNING_FILE,
    PAIRED_FILE,
    POST_PROBE_FILE,
    SPLIT_ORDER,
    STAGE_LABELS,
    STAGES,
    read_json_lines,
)

SPLITS = tuple(zip(SPLIT_ORDER, ("(a)", "(b)", "(c)")))
DECODINGS = ("greedy", "sampled")


def find(folder: Path, name: str) -> Path | None:
    """`folder/name`, else the one `folder/*/name` in name order (the first recipe's GSPO folder); None if neither."""
    top = folder / name
    if top.is_file():
        return top
    below = sorted(p for p in folder.glob(f"*/{name}") if p.is_file())
    return below[0] if below else None


def _interval(low: Any, high: Any) -> str:
    if not all(isinstance(x, (int, float)) and math.isfinite(x) for x in (low, high)):
        return ""
    return f"{low:.2f}-{high:.2f}"


def _cell(passed: Any, total: Any, low: Any, high: Any, score: Any = None) -> str:
    text = f"{passed}/{total}"
    span = _interval(low, high)
    if span and total and total > 2:  # at n <= 2 an interval says nothing a reader cannot see
        text += f", {span}"
    if isinstance(score, (int, float)) and math.isfinite(score):
        text += f" ({score:.2f})"
    return text


def learning_tables(rows: list[dict]) -> str:
    """Split x stage, one table per (recipe, decoding); each recipe under its own harness."""
    own = [r for r in rows if r.get("recipe") == r.get("harness")]
    out = []
    for recipe in sorted({str(r.get("recipe")) for r in own}):
        for decoding in DECODINGS:
            part = [r for r in own if r.get("recipe") == recipe and r.get("decoding") == decoding]
            if not part:
                continue
            stages = [s for s in STAGES if any(r.get("stage") == s for r in part)]
            k = sorted({int(r.get("samples") or 1) for r in part})
            temperature = sorted({float(r.get("temperature") or 0.0) for r in part})
            what = "greedy" if decoding == "greedy" else f"sampled, {'/'.join(map(str, k))} per instance"
            out.append(
                f"{recipe.upper()} recipe, {what} (T = {'/'.join(f'{t:g}' for t in temperature)}); "
                "passed/episodes, 95% Wilson interval, mean R~:\n"
            )
            out.append("| split | " + " | ".join(STAGE_LABELS.get(s, s) for s in stages) + " |")
            out.append("|---" * (len(stages) + 1) + "|")
            for split, label in SPLITS:
                by_stage = {r["stage"]: r for r in part if r.get("split") == split}
                if not by_stage:
                    continue
                instances = max(int(r.get("instances") or 0) for r in by_stage.values())
                cells = [
                    _cell(
                        r.get("passed"), r.get("episodes"), r.get("pass_low"), r.get("pass_high"), r.get("mean_score")
                    )
                    if (r := by_stage.get(s))
                    else ""
                    for s in stages
                ]
                out.append(f"| {label} {instances} | " + " | ".join(cells) + " |")
                if split == "params" and any(r.get("new_values_instances") for r in by_stage.values()):
                    news = [
                        _cell(
                            r.get("new_values_passed"),
                            r.get("new_values_instances"),
                            r.get("new_values_pass_low"),
                            r.get("new_values_pass_high"),
                        )
                        if (r := by_stage.get(s)) and r.get("new_values_instances")
                        else ""
                        for s in stages
                    ]
                    count = max(int(r.get("new_values_instances") or 0) for r in by_stage.values())
                    out.append(f"| (b) new values only, {count} | " + " | ".join(news) + " |")
            out.append("")
    return "\n".join(out)


def gspo_section(dynamics: list[dict], post: dict | None) -> str:
    """Steps that updated (a skipped step logs `skipped: true`), and the probe before and after RL."""
    lines = []
    if dynamics:
        steps = {int(r["step"]): r for r in dynamics if "step" in r}
        acted = sum(1 for r in steps.values() if not r.get("skipped"))
        lines.append(f"- GSPO updated on {acted} of {len(steps)} optimizer steps (dynamics.jsonl).")
        batches = [r for r in steps.values() if r.get("pass", 1) == 1]
        if batches:
            rates = ", ".join(f"{r.get('pass_rate', float('nan')):.3f}" for r in batches)
            cut = ", ".join(f"{r.get('truncation_rate', float('nan')):.3f}" for r in batches)
            lines.append(f"- Batch pass rates {rates}; budget-truncation rates {cut}.")
    if post:
        lines.append(f"- The probe's prompts, {post.get('summary', 'no summary')} (post_rl_pass_rates.json).")
        for p in post.get("prompts", []):
            samples = p.get("samples") or 0
            lines.append(
                f"  - {p.get('task_id')} {p.get('scale')} seed {p.get('seed')}: "
                f"{_count(p.get('before'), samples)} -> {_count(p.get('after'), samples)}"
            )
    return "\n".join(lines) + ("\n" if lines else "")


def _count(rate: Any, samples: int) -> str:
    if isinstance(rate, (int, float)) and math.isfinite(rate) and samples:
        return f"{round(rate * samples)}/{samples}"
    return "?"


def paired_table(pairs: Iterable[dict]) -> str:
    """B - A on the same instances, with its 95% paired bootstrap interval and McNemar's exact p."""
    out = [
        "| split, decoding | A -> B | A | B | B - A (95% CI) | only A passes | only B passes | p |",
        "|---|---|---|---|---|---|---|---|",
    ]
    order = {s: i for i, (s, _) in enumerate(SPLITS)}
    labels = dict(SPLITS)
    rows = sorted(
        pairs,
        key=lambda p: (
            str(p.get("recipe")),
            DECODINGS.index(p["decoding"]) if p.get("decoding") in DECODINGS else 9,
            order.get(str(p.get("split")), 9),
        ),
    )
    for p in rows:
        a, b = (STAGE_LABELS.get(str(p.get(x)), p.get(x)) for x in ("a", "b"))
        value = p.get("p_value")
        shown = "" if value is None else ("< 0.001" if value < 0.001 else f"{value:.3g}")
        out.append(
            f"| {labels.get(str(p.get('split')), p.get('split'))} {p.get('units')}, {p.get('decoding')} | {a} -> {b} "
            f"| {p.get('a_mean', float('nan')):.2f} | {p.get('b_mean', float('nan')):.2f} "
            f"| {p.get('difference', float('nan')):+.2f} ({p.get('low', float('nan')):+.2f} to "
            f"{p.get('high', float('nan')):+.2f}) | {p.get('a_only')} | {p.get('b_only')} | {shown} |"
        )
    return "\n".join(out) + "\n"


def seconds_section(seconds: dict) -> str:
    total = sum(v for v in seconds.values() if isinstance(v, (int, float)))
    parts = ", ".join(f"{name} {value:,.0f} s" for name, value in seconds.items() if isinstance(value, (int, float)))
    return f"- {parts}; in all {total:,.0f} s ({total / 60:.0f} min) in the pipeline's stages.\n"


def run_report(folder: str | Path) -> str:
    """The Markdown report of a run folder (see the module's docstring)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no such run folder")
    sections: list[str] = [f"# Results of {folder}\n"]

    def missing(name: str) -> None:
        sections.append(f"({name}: not in this run)\n")

    if learning := find(folder, LEARNING_FILE):
        rows = read_json_lines(learning)
        commits = sorted({str(r.get("commit")) for r in rows if r.get("commit")})
        if commits:
            sections.append(f"Commit {', '.join(commits)}.\n")
        sections.append("## Pass rate by split and stage\n")
        sections.append(learning_tables(rows))
    else:
        missing(LEARNING_FILE)
    dynamics = find(folder, DYNAMICS_FILE)
    post = find(folder, POST_PROBE_FILE)
    if dynamics or post:
        sections.append("## GSPO\n")
        sections.append(
            gspo_section(read_json_lines(dynamics) if dynamics else [], json.loads(post.read_text()) if post else None)
        )
    if paired := find(folder, PAIRED_FILE):
        sections.append("## Paired on the same instances\n")
        sections.append(paired_table(json.loads(paired.read_text())))
    else:
        missing(PAIRED_FILE)
    if seconds := find(folder, "seconds.json"):
        sections.append("## Stage times\n")
        sections.append(seconds_section(json.loads(seconds.read_text())))
    return "\n".join(sections)


__all__ = ["run_report", "learning_tables", "paired_table", "gspo_section"]
