"""The SFT curve: how the sampled pass rate on held-out instances grows with SFT's optimizer steps.

One SFT run of a pipeline config's recipe (its teacher data, model and settings, `max_steps` raised to the last step
asked for) keeps its weights every `every` steps; each kept checkpoint and the final model are then sampled, at GSPO's
rollout temperature and the evaluation's budgets, on the held-out instances of one split. Each point is a pass rate
with its Wilson interval over instances, beside that step's training loss and token accuracy. The points answer
"how much SFT before RL has something to learn from": a rate near 0 leaves GSPO's groups flat, one near 1 as well.

    progagent train sft-curve --config configs/cpu-smoke.yaml --engine --every 4 --max-steps 24 --samples 2
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from .evaluate import evaluate
from .pipeline import PipelineConfig, Recipe
from .ranks import on_main
from .scoring import summarise

CURVE_FILE = "sft_curve.json"


def checkpoints(folder: Path, final: int) -> list[tuple[int, Path]]:
    """(step, folder) of every `checkpoint-N` under `folder`, then the final model at `final` steps."""
    kept = sorted(
        (int(p.name.split("-")[1]), p)
        for p in folder.glob("checkpoint-*")
        if p.name.split("-")[1].isdigit() and (p / "config.json").exists()
    )
    return [(step, path) for step, path in kept if step < final] + [(final, folder / "final")]


def step_metrics(folder: Path) -> dict[int, dict[str, float]]:
    """Per optimizer step, the loss and token accuracy the SFT run logged (`log_history.jsonl`, one record a step)."""
    path = folder / "log_history.jsonl"
    metrics: dict[int, dict[str, float]] = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        record = json.loads(line)
        if isinstance(record, dict) and isinstance(record.get("step"), int) and "loss" in record:
            metrics[record["step"]] = {k: record[k] for k in ("loss", "mean_token_accuracy") if k in record}
    return metrics


def sft_curve(
    config: PipelineConfig, output_dir: str | Path, *, every: int, max_steps: int, samples: int, split: str = "params"
) -> list[dict[str, Any]]:
    """Train once (keeping weights every `every` steps up to `max_steps`), then sample each kept model `samples`
    times on every held-out instance of `split` (default (b)); the points go to `<output_dir>/sft_curve.json`."""
    if every < 1 or max_steps < every:
        raise ValueError(f"sft-curve: --every {every} and --max-steps {max_steps}: need 1 <= every <= max_steps")
    if samples < 1:
        raise ValueError(f"sft-curve: --samples {samples}: must be >= 1")
    out = Path(output_dir)
    # the recipe's own SFT stage, run longer and keeping its weights every `every` steps
    sft = replace(config.sft, max_steps=max_steps, save_steps=every)
    recipe = Recipe(replace(config, output_dir=str(out), sft=sft, sft_max_steps={}), out)
    harness = config.rl_harnesses[0]
    instances = [i for i in recipe.instances() if i.split == split]
    if not instances:
        raise ValueError(f"sft-curve: the config's splits have no instance in split {split!r}")
    trajectories = recipe.teacher()[harness]
    sft_dir = out / f"sft-{harness}"
    started = time.perf_counter()
    if not (sft_dir / "final").is_dir():
        recipe.sft(harness, trajectories)
    seconds_sft = time.perf_counter() - started
    metrics = step_metrics(sft_dir)
    points = []
    for step, model in checkpoints(sft_dir, max_steps):
        started = time.perf_counter()
        evaluation = replace(
            config.eval,
            model=str(model),
            stage=f"sft-step-{step}",
            chat_template=config.chat_template,
            output_dir=str(out / "curve" / f"step-{step}"),
            harnesses=[harness],
            instances=[[i.task_id, i.scale, i.seed] for i in instances],
            samples=samples,
            temperature=config.gspo.temperature,
            **recipe.engine(),
        )
        trajectories_at, _ = evaluate(evaluation)
        summary = summarise(trajectories_at)
        points.append(
            {
                "step": step,
                "split": split,
                "instances": summary["instances"],
                "samples": samples,
                "temperature": config.gspo.temperature,
                "passed": summary["passed"],
                "episodes": summary["episodes"],
                "pass_rate": summary["pass_rate"],
                "pass_low": summary["pass_low"],
                "pass_high": summary["pass_high"],
                **metrics.get(step, {}),
                "seconds_eval": time.perf_counter() - started,
            }
        )
    record = {
        "points": points,
        "seconds_sft": seconds_sft,
        "harness": harness,
        "teacher_trajectories": len(trajectories),
    }
    on_main(lambda: (out / CURVE_FILE).write_text(json.dumps(record, indent=2)))
    return points


def format_curve(points: list[dict[str, Any]]) -> str:
    lines = [
        "| SFT steps | loss | token accuracy | instances x samples | passed | sampled pass rate (95% CI) |",
        "|---|---|---|---|---|---|",
    ]
    for p in points:
        loss = f"{p['loss']:.4f}" if "loss" in p else "-"
        accuracy = f"{p['mean_token_accuracy']:.3f}" if "mean_token_accuracy" in p else "-"
        lines.append(
            f"| {p['step']} | {loss} | {accuracy} | {p['instances']} x {p['samples']} | {p['passed']}/{p['episodes']} "
            f"| {p['pass_rate']:.2f} ({p['pass_low']:.2f}-{p['pass_high']:.2f}) |"
        )
    return "\n".join(lines)
