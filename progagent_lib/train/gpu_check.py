"""`make gpu-check`: two GSPO steps of a small model against a launched server, on this machine's GPU(s).

What it checks is the weight path between trainer and server: after step 1's update the server must generate step
2's episodes with the updated weights. GSPOTrainer logs, per generation batch, the mean |logp_sampler -
logp_trainer| over model tokens (`logp_mismatch_mean` in dynamics.jsonl); with the weights in sync it is rounding
(bf16 sampling against the trainer's forward pass) at both steps, and stale weights at step 2 show as a larger gap
(a learning rate large for the model makes step 1's update visible). Step 2's gap must be at most
`MISMATCH_SLACK[0]` times step 1's plus `MISMATCH_SLACK[1]`.

The model: Qwen/Qwen3-0.6B when it is in the Hugging Face cache, else a tiny from-scratch Qwen3 built here (saved in
bf16, head_dim 64 for vLLM's attention kernels). The server: with two GPUs or more, `trl vllm-serve` on GPU 0 and
the trainer on GPU 1 (the gpu-paper path: TRL's NCCL weight push); with one GPU, a `progagent engine serve` sharing
GPU 0 with the trainer (weights reloaded from a saved folder). Either way through `progagent launch`'s plan and
process management. The trainer's reward alternates 0, 1 within each group instead of the verifier's, so that every
step has an advantage and updates the weights (a small model rarely solves a task, and a step without advantage is
skipped and measures nothing).

It has not run yet: it was written on a machine without a GPU (docs/gpu.md).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import cast

import yaml

from ..harness.spec import BASELINE_HARNESS

MISMATCH_SLACK = (2.0, 0.02)  # step 2's gap <= 2 x step 1's + 0.02 nats per model token
SMALL_HUB_MODEL = "Qwen/Qwen3-0.6B"
NO_GPU = "gpu-check: no CUDA GPU here (torch.cuda.is_available() is False); run `make gpu-check` on a GPU node"


def alternating_reward(prompts: list, completions: list, verifier_reward: list[float], **_) -> list[float]:
    """0, 1, 0, 1, ...: every group has an advantage, so every step updates the weights."""
    return [float(index % 2) for index in range(len(prompts))]


def choose_model(out: Path) -> tuple[str, float]:
    """(model source, learning rate): Qwen3-0.6B when cached, else a tiny model built into `out`."""
    from ..generation.model_folder import save_model
    from ..generation.sources import hub_snapshot
    from ..generation.tiny_model import TinyModelConfig, build_tiny_model

    if hub_snapshot(SMALL_HUB_MODEL) is not None:
        return SMALL_HUB_MODEL, 2e-5
    folder = out / "tiny"
    if not (folder / "config.json").is_file():
        import torch

        model, tokenizer = build_tiny_model(
            "tasks",
            TinyModelConfig(
                vocab_size=1024,
                hidden_size=128,
                intermediate_size=256,
                num_hidden_layers=2,
                num_attention_heads=2,
                num_key_value_heads=1,
                head_dim=64,
                max_position_embeddings=8192,
            ),
        )
        save_model(model.to(torch.bfloat16), tokenizer, folder)
    return str(folder), 1e-3


def write_config(out: Path, model: str, learning_rate: float, server: str) -> Path:
    """A GSPO stage config: 2 optimizer steps, each on its own generation batch of one task's 4 episodes."""
    # The baseline harness (DTC): its episodes start no kernel.
    config = {
        "model": model,
        "output_dir": str(out / "gspo"),
        "task_ids": ["retail/restock_orders"],
        "harness": BASELINE_HARNESS,
        "scales": ["v0"],
        "train_seeds": [0, 1],
        "num_generations": 4,
        "prompts_per_step": 1,
        "num_iterations": 1,
        "max_steps": 2,
        "save_steps": 2,
        "max_turns": 2,
        "max_new_tokens": 64,
        "max_context_tokens": 4096,
        "learning_rate": learning_rate,
        "sample_episodes": 1,
        "bf16": True,
    }
    # the URL is the launched server's once `progagent launch` writes the trainer's copy
    config.update({"use_vllm": True} if server == "trl" else {"engine_url": "http://127.0.0.1:8000/v1"})
    path = out / "gpu-check.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def gpu_check_plan(config: Path, gpus: int):
    """The launch plan: the server and a one-process trainer (running `train` below instead of `train gspo`)."""
    from ..engine.server import free_port
    from .launch import LaunchOptions, plan_launch

    shared = gpus < 2
    plan = plan_launch(
        LaunchOptions(
            config=str(config),
            server_gpus=(0,),
            train_gpus=(0,) if shared else (1,),
            colocate=shared,
            server_port=free_port(),
            trainer_port=free_port(),
            health_timeout=900.0,
        )
    )
    assert plan.trainer is not None, "a GSPO config's launch plan always has a trainer"
    argv = list(plan.trainer.argv)
    at = argv.index("progagent_lib.train.cli")
    argv[at : at + 2] = ["progagent_lib.train.gpu_check", "train"]
    return replace(plan, trainer=replace(plan.trainer, argv=argv))


def verdict(dynamics: list[dict]) -> tuple[bool, str]:
    """Whether step 2's sampler-trainer gap is as small as step 1's, and the line that says so."""
    gaps = [line.get("logp_mismatch_mean") for line in dynamics[:2]]
    if len(gaps) < 2 or any(gap is None for gap in gaps):
        return False, (
            f"gpu-check: FAILED: {len(dynamics)} step line(s), gaps {gaps}: a step without the sampler "
            "comparison (no advantage, or no sampler log-probs); see the trainer's log"
        )
    first, second = cast("list[float]", gaps)  # the check above returned on a missing gap
    bound = MISMATCH_SLACK[0] * first + MISMATCH_SLACK[1]
    ok = second <= bound
    return ok, (
        f"gpu-check: {'ok' if ok else 'FAILED'}: mean |logp_sampler - logp_trainer| per model token: step 1 "
        f"{first:.4f}, step 2 {second:.4f} (bound {bound:.4f})"
        + ("" if ok else ": the server generated step 2 with stale weights")
    )


def check(out: Path) -> int:
    import torch

    from .gspo import DYNAMICS_FILE, DynamicsLog
    from .launch import LaunchRefused, execute, log_tail, machine_problems

    if not torch.cuda.is_available():
        print(NO_GPU, file=sys.stderr)
        return 2
    gpus = torch.cuda.device_count()
    model, learning_rate = choose_model(out)
    try:
        plan = gpu_check_plan(write_config(out, model, learning_rate, "trl" if gpus >= 2 else "engine"), gpus)
    except LaunchRefused as exc:
        print(f"gpu-check: {exc}", file=sys.stderr)
        return 2
    problems = list(machine_problems(plan))
    if problems:
        print(f"gpu-check: {problems[0]}", file=sys.stderr)
        return 2
    print(f"gpu-check: {model} on {gpus} GPU(s), server {plan.servers[0].what}", flush=True)
    code = execute(plan, health_timeout=900.0, say=lambda text: print(text, flush=True))
    if code != 0:
        print(
            f"gpu-check: FAILED: the trainer exited with {code}; its log ends:\n{log_tail(plan.trainer.log)}",
            file=sys.stderr,
        )
        return 1
    ok, line = verdict(DynamicsLog.read(out / "gspo" / DYNAMICS_FILE))
    print(line)
    return 0 if ok else 1


def train(config_path: str) -> int:
    """The trainer's side: two GSPO steps with the alternating reward."""
    from ..config import load_config
    from . import gspo

    gspo.verifier_reward = alternating_reward  # read when run_gspo builds the trainer
    gspo.run_gspo(load_config(gspo.GSPORunConfig, config_path), resume=False)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m progagent_lib.train.gpu_check", description=__doc__.split("\n")[0])
    parser.add_argument("role", nargs="?", default="check", choices=("check", "train"))
    parser.add_argument("--out", default="runs/gpu-check", help="the run's folder (default runs/gpu-check)")
    parser.add_argument("--config", help="train: the GSPO config (the launcher's copy)")
    args = parser.parse_args(argv)
    if args.role == "train":
        return train(args.config)
    return check(Path(args.out))


if __name__ == "__main__":
    sys.exit(main())
