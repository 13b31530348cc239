"""Where an RL step's time goes: environment (kernel, tools, verifier) vs generation vs the update.

    .venv/bin/python bench/train.py [--model runs/cpu-smoke-pipeline/sft/final] [--steps 3] [--harnesses dtc,ptc]

Two kinds of GSPO steps per harness, each through the real GRPOTrainer with the cpu-smoke settings:

- model: the checkpoint generates its own turns. A cpu-smoke model rarely writes a valid tool call, so its
  environment share is a lower bound.
- teacher-replay: the OracleTeacher's turns for the same episodes are fed in as tokens in place of generation
  (no model sampling), so the environment does the work of an episode that solves the task: real kernel, tools
  and verifier, and the update sees full-length sequences. Its generation share is ~0 by construction.

Shares are of the step's wall time (comparable across machines); seconds per step are printed too. The first
step of each run pays one-off costs and is left out when there are more.
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
from progagent_lib.train.gspo import run_gspo, select_tasks  # noqa: E402
from progagent_lib.train.models import build_tiny_model  # noqa: E402
from progagent_lib.train.pipeline import PipelineConfig  # noqa: E402
from progagent_lib.harness.chat_format import ChatFormat  # noqa: E402
from progagent_lib.train.rollout import ReplayTurns  # noqa: E402

REPLAY_TASKS = ["retail/restock_orders", "clinic_scheduling/rebook_clinician_leave"]  # the shortest DTC episodes


def teacher_runs(config, harness: str) -> dict[tuple, object]:
    from progagent_lib.harness.episode import run_episode
    from progagent_lib.policy import OracleTeacher

    scripts = {}
    for task in select_tasks(config.tasks_root, config.task_ids):
        for scale in config.scales:
            for seed in config.train_seeds:
                trajectory = run_episode(task, scale, seed, harness, OracleTeacher(harness))
                scripts[(task.id, scale, seed)] = trajectory
    return scripts


def shares(kind: str, harness: str, steps: list[dict]) -> dict:
    measured = steps[1:] or steps
    total = sum(s["seconds_step"] for s in measured)
    env, gen, update = (sum(s[k] for s in measured) for k in ("seconds_environment", "seconds_generate", "seconds_update"))
    return {"kind": kind, "harness": harness, "steps": len(measured), "seconds_per_step": total / len(measured),
            "environment_share": env / total, "generation_share": gen / total, "update_share": update / total,
            "other_share": max(total - env - gen - update, 0.0) / total,
            "tool_calls_per_episode": sum(s["tool_calls_per_episode"] for s in measured) / len(measured),
            "episode_tokens": sum(s["episode_length_tokens"] for s in measured) / len(measured),
            "mean_reward": sum(s["mean_reward"] for s in measured) / len(measured)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=str(REPO / "runs/cpu-smoke/sft-ptc/final"))
    parser.add_argument("--config", default=str(REPO / "configs/cpu-smoke.yaml"))
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--harnesses", default="dtc,ptc")
    parser.add_argument("--kinds", default="model,teacher-replay")
    args = parser.parse_args()

    smoke = load_config(PipelineConfig, args.config)
    work = Path(tempfile.mkdtemp(prefix="bench-train-"))
    model = args.model
    if not (Path(model) / "config.json").is_file():
        print(f"{model} not found: using an untrained tiny model (run the cpu-smoke pipeline for a representative one)")
        model = str(work / "tiny")
        build_tiny_model(smoke.sft.tasks_root, smoke.sft.tiny, save_to=model)
    from transformers import AutoConfig

    from progagent_lib.train.pipeline import model_positions

    positions = model_positions(AutoConfig.from_pretrained(model))  # a teacher replay may use all of them
    rows = []
    try:
        for harness in args.harnesses.split(","):
            passes = smoke.gspo.num_iterations if args.steps % smoke.gspo.num_iterations == 0 else 1
            base = replace(smoke.gspo, model=model, harness=harness, max_steps=args.steps, save_steps=args.steps,
                           num_iterations=passes)
            if "model" in args.kinds:
                config = replace(base, output_dir=str(work / f"model-{harness}"))
                rows.append(shares("model", harness, run_gspo(config, resume=False)["dynamics"]))
            if "teacher-replay" in args.kinds:
                config = replace(base, output_dir=str(work / f"replay-{harness}"), task_ids=REPLAY_TASKS,
                                 train_seeds=[0, 1], num_generations=2, max_turns=10_000, max_new_tokens=100_000,
                                 max_context_tokens=positions)
                runs = teacher_runs(config, harness)

                def replay(trainer, specs, runs=runs):
                    # The teacher's turns as the tokens the trainer's model would generate (its own chat template).
                    chat = ChatFormat(trainer.processing_class)
                    return ReplayTurns([chat.assistant_turns(runs[(s.task.id, s.scale, s.seed)].messages,
                                                             runs[(s.task.id, s.scale, s.seed)].tools) for s in specs])

                rows.append(shares("teacher-replay", harness, run_gspo(config, resume=False, turn_generator=replay)["dynamics"]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("| rollouts | harness | steps | s/step | environment | generation | update | other | task-tool calls/episode | tokens/episode | mean reward |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['kind']} | {r['harness']} | {r['steps']} | {r['seconds_per_step']:.1f} | {r['environment_share']:.1%} | "
              f"{r['generation_share']:.1%} | {r['update_share']:.1%} | {r['other_share']:.1%} | "
              f"{r['tool_calls_per_episode']:.1f} | {r['episode_tokens']:.0f} | {r['mean_reward']:.2f} |")
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
