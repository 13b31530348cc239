"""Helpers every training stage (SFT, GSPO, evaluation, the pipeline) shares: one module, so the stage files
import it and never each other in a circle."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..generation.rope import model_positions as model_positions  # the stages read it here
from ..harness.episode import Limits
from ..harness.spec import HARNESS_LABELS as HARNESS_LABELS  # the stages read it here
from ..harness.spec import HARNESSES

HARNESS_NAMES = HARNESSES.keys()  # live: a harness registered later (harness.spec.register_harness) is valid too
# The pipeline's stages, in the order they run and are listed. base: the model before training; memorize: the
# memorization baseline (no model); control: SFT continued for as many optimizer steps as GSPO took, on the same
# teacher data; rft: rejection-sampling fine-tuning, SFT on the SFT policy's own R = 1 samples of GSPO's prompts drawn
# with GSPO's rollout budget, for as many optimizer steps. Read by the pipeline, the learning tables (train.scoring) and the figures (analysis.learning).
STAGES = ("base", "memorize", "sft", "gspo", "control", "rft")
STAGE_LABELS = {
    "base": "base model",
    "memorize": "memorization baseline",
    "sft": "SFT",
    "gspo": "GSPO",
    "control": "SFT control",
    "rft": "RFT control",
}
SHARED_STAGES = ("base", "memorize")  # one model (or none) for every recipe
# The held-out splits, in the order tables list them: (a) seeds, (b) params, (c) tasks (train.splits).
SPLIT_ORDER = ("seeds", "params", "tasks")

# The files a run writes, named once: the stages write them, the tables and figures (analysis) read them.
LEARNING_FILE = "learning.jsonl"  # the run folder: one row per (stage, recipe, harness, split, decoding)
PAIRED_FILE = "paired.json"  # the run folder: GSPO against SFT and the controls on the same instances
DYNAMICS_FILE = "dynamics.jsonl"  # the GSPO folder: one line per optimizer step
PROBE_FILE = "pre_rl_pass_rates.json"  # the GSPO folder: the SFT policy's pass rate per candidate prompt
POST_PROBE_FILE = "post_rl_pass_rates.json"  # the same prompts, sampled the same way, after RL (train.pipeline)
PROBE_DIR = "probe"  # the probe's episodes, in the GSPO folder (RFT counts them towards its samples)
# The paired probe's two halves, in the GSPO folder: the SFT model's fresh samples of the chosen prompts (RFT counts
# them too) and the GSPO model's, each with its PROBE_DIR inside (train.pipeline, Recipe.probe_after)
BEFORE_RL_DIR, AFTER_RL_DIR = "before", "after"
TRAJECTORIES_FILE = "trajectories.jsonl"  # an evaluation's folder: every episode


def read_json_lines(path: str | Path) -> list[dict]:
    """JSON lines, blank lines skipped; a line that is not a JSON object is a one-line error naming it."""
    path = Path(path)
    rows = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        if not isinstance(row, dict):
            raise ValueError(f"{path}:{number}: not a JSON object")
        rows.append(row)
    return rows


def limits_of(config: Any) -> Limits:
    """The episode budgets of a GSPO or evaluation config: one `Limits` for every path."""
    return Limits(
        max_tool_calls=config.max_tool_calls,
        max_turns=config.max_turns,
        max_context_tokens=config.max_context_tokens,
        max_new_tokens=config.max_new_tokens,
        max_observation_chars=config.max_observation_chars,
    )


def select_tasks(tasks_root: str | Path, task_ids: list[str]) -> list[Any]:
    from progagent_lib import load_pool

    pool = load_pool(tasks_root, strict=False)
    if not task_ids:
        return pool
    by_id = {t.id: t for t in pool}
    missing = [t for t in task_ids if t not in by_id]
    if missing:
        raise ValueError(f"task id(s) {missing} not found under {str(tasks_root)!r}; known: {sorted(by_id)}")
    return [by_id[t] for t in task_ids]
