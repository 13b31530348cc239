"""What RL adds, paired: GSPO against SFT, against more SFT (the control) and against RFT, on the same instances.

Two stages of a recipe are evaluated on the same held-out instances, so their difference is read instance by
instance: the paired bootstrap interval of the pass-rate difference and McNemar's exact test on the instances only
one of them passes (`progagent_lib.stats.paired_difference`). A stage whose weights are another's (its learning rows
say `same_weights_as`) is read through that stage's episodes: the difference is then exactly 0.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..stats import paired_difference
from .common import PAIRED_FILE
from .evaluate import TRAJECTORIES_FILE

# (A, B): B's gain over A, for each pair a run has both of
COMPARISONS = (("sft", "gspo"), ("control", "gspo"), ("rft", "gspo"))
INSTANCE = tuple[str, str, int]


def stage_trajectories(out: Path, stage: str, recipe: str, decoding: str, learning: Sequence[dict]) -> list[Any]:
    """The evaluation episodes of (stage, recipe) in `out`, following `same_weights_as` to the stage whose episodes
    they are; [] when the run has none."""
    from ..harness.trajectory import read_jsonl

    path = out / "eval" / f"{stage}-{recipe}" / decoding / TRAJECTORIES_FILE
    if path.exists():
        return list(read_jsonl(path))
    same = {r.get("same_weights_as") for r in learning if r["stage"] == stage and r.get("recipe") == recipe} - {None}
    if len(same) == 1:
        source = str(same.pop())
        source_stage, _, source_recipe = source.partition("-")
        if (source_stage, source_recipe or recipe) != (stage, recipe):
            return stage_trajectories(out, source_stage, source_recipe or recipe, decoding, learning)
    return []


def outcomes(trajectories: Sequence[Any]) -> dict[tuple[str, INSTANCE], float]:
    """(harness, instance) -> the instance's pass rate over its samples (errored ones left out; 1 sample when greedy)."""
    grouped: dict[tuple[str, INSTANCE], list[float]] = {}
    for t in trajectories:
        if not t.errored:
            grouped.setdefault((t.harness, (t.task_id, t.scale, int(t.seed))), []).append(float(t.reward == 1.0))
    return {key: sum(values) / len(values) for key, values in grouped.items()}


def paired_rows(
    out: Path, recipe: str, split_of: dict[INSTANCE, str], decodings: Sequence[str], learning: Sequence[dict]
) -> list[dict]:
    """One row per (comparison, harness, split, decoding) the run has both stages of."""
    rows = []
    for a, b in COMPARISONS:
        for decoding in decodings:
            first = outcomes(stage_trajectories(out, a, recipe, decoding, learning))
            second = outcomes(stage_trajectories(out, b, recipe, decoding, learning))
            shared = sorted(set(first) & set(second), key=lambda k: (k[0], split_of.get(k[1], ""), k[1]))
            groups: dict[tuple[str, str], list[tuple[str, INSTANCE]]] = {}
            for key in shared:
                if key[1] in split_of:
                    groups.setdefault((key[0], split_of[key[1]]), []).append(key)
            for (harness, split), keys in groups.items():
                difference = paired_difference([first[k] for k in keys], [second[k] for k in keys])
                rows.append(
                    {
                        "recipe": recipe,
                        "harness": harness,
                        "split": split,
                        "decoding": decoding,
                        "a": a,
                        "b": b,
                        **asdict(difference),
                    }
                )
    return rows


def write_paired(out: Path, rows: Sequence[dict]) -> None:
    (out / PAIRED_FILE).write_text(json.dumps(list(rows), indent=2))


def format_paired(rows: Sequence[dict]) -> str:
    """The rows as a Markdown table: B - A in pass rate, its interval, the discordant instances, McNemar's p."""
    lines = [
        "| recipe | harness | split | decoding | B vs A | instances | A | B | B - A [95% CI] | only B / only A | p |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        p = f"{r['p_value']:.3g}" if r["p_value"] is not None else "-"
        lines.append(
            f"| {r['recipe']} | {r['harness']} | {r['split']} | {r['decoding']} | {r['b']} vs {r['a']} | {r['units']} "
            f"| {r['a_mean']:.2f} | {r['b_mean']:.2f} | {r['difference']:+.2f} [{r['low']:+.2f}, {r['high']:+.2f}] "
            f"| {r['b_only']} / {r['a_only']} | {p} |"
        )
    return "\n".join(lines)
