"""Helpers every training stage (SFT, GSPO, evaluation, the pipeline) shares: one module, so the stage files
import it and never each other in a circle."""

from __future__ import annotations

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
