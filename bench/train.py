"""Where an RL step's time goes: environment (kernel, tools, verifier) vs generation vs the update.

    .venv/bin/python bench/train.py [--model runs/cpu-smoke/sft/final] [--steps 3] [--harnesses dtc,ptc]

Runs a short GSPO run per harness (the cpu-smoke settings, fresh output folder) and reads the per-step timings
of its dynamics log. Shares are of the step's wall time, so they are comparable across machines; absolute
seconds are printed too. Without --model a tiny model is built (it rarely calls tools, so the environment
share is then a lower bound); the SFT model of `progagent train pipeline --config configs/cpu-smoke.yaml` is
the representative one.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from progagent_lib.train.config import load_config  # noqa: E402
from progagent_lib.train.gspo import run_gspo  # noqa: E402
from progagent_lib.train.models import build_tiny_model  # noqa: E402
from progagent_lib.train.pipeline import PipelineConfig  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=str(REPO / "runs/cpu-smoke/sft/final"))
    parser.add_argument("--config", default=str(REPO / "configs/cpu-smoke.yaml"))
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--harnesses", default="dtc,ptc")
    args = parser.parse_args()

    smoke = load_config(PipelineConfig, args.config)
    work = Path(tempfile.mkdtemp(prefix="bench-train-"))
    model = args.model
    if not (Path(model) / "config.json").is_file():
        print(f"{model} not found: using an untrained tiny model (run the cpu-smoke pipeline for a representative one)")
        model = str(work / "tiny")
        build_tiny_model(smoke.sft.tasks_root, smoke.sft.tiny, save_to=model)
    rows = []
    try:
        for harness in args.harnesses.split(","):
            config = replace(smoke.gspo, model=model, harness=harness, output_dir=str(work / f"gspo-{harness}"),
                             max_steps=args.steps, save_steps=args.steps)
            steps = run_gspo(config, resume=False)["dynamics"]
            # The first step pays one-off costs (kernel pool, first compilation): report the later ones when any.
            measured = steps[1:] or steps
            total = sum(s["seconds_step"] for s in measured)
            env = sum(s["seconds_environment"] for s in measured)
            gen = sum(s["seconds_generate"] for s in measured)
            update = sum(s["seconds_update"] for s in measured)
            rows.append({"harness": harness, "steps": len(measured), "seconds_per_step": total / len(measured),
                         "environment_share": env / total, "generation_share": gen / total, "update_share": update / total,
                         "other_share": max(total - env - gen - update, 0.0) / total,
                         "tool_calls_per_episode": sum(s["model_tool_calls_per_episode"] for s in measured) / len(measured)})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("| harness | steps | s/step | environment | generation | update | other | model tool calls/episode |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['harness']} | {r['steps']} | {r['seconds_per_step']:.1f} | {r['environment_share']:.1%} | "
              f"{r['generation_share']:.1%} | {r['update_share']:.1%} | {r['other_share']:.1%} | {r['tool_calls_per_episode']:.1f} |")
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
