"""GSPO's optimizer step with the group's prompt computed once (`shared_prompt`, the default) vs once per episode.

    .venv/bin/python bench/shared_prompt.py [--group 4] [--prompt 1500] [--completion 1600] [--steps 2] [--lora R]
                                            [--quick]

Both arms are `GSPOTrainer` steps with cpu-smoke's update settings (bf16 autocast, 1,024-position head tiles, no
checkpointing, micro-batches of one episode, one pass), fed by a rollout function that returns a group of synthetic
episodes: one prompt of `--prompt` tokens and `--completion` tokens after it (alternating 256-token model and
observation spans), rewards 0, 1, 0, ... so every step learns. cpu-smoke's episodes are ~1.5k prompt + ~1.6k
completion tokens, 8 to a group. Each arm runs in a process of its own; the first step pays one-off costs and is
left out when there are more. `--lora R`: both arms train LoRA adapters of rank R (alpha 2R, every linear layer, as
cpu-smoke's GSPO with R = 16) instead of all the weights. Printed: seconds per optimizer step of each arm and their ratio. That both compute the
same gradients is tests/train/test_shared_prompt.py's to check (fp32, every weight).
`--quick` (the small test model, short episodes; the test suite runs it) checks the machinery, not the figures.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

RESULT_MARK = "SHARED_PROMPT_RESULT "
SPAN = 256


def measure(spec: dict) -> dict:
    """`spec["steps"]` GSPO steps in this process; seconds per step."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch
    from datasets import Dataset
    from transformers import TrainerCallback

    from progagent_lib.train.gspo import GSPORunConfig, grpo_args, verifier_reward
    from progagent_lib.train.gspo_trainer import GSPOTrainer
    from progagent_lib.train.logits import lm_head_tile

    torch.manual_seed(0)
    if spec["quick"]:
        from progagent_lib.generation.tiny_model import TinyModelConfig, build_tiny_model

        model, tokenizer = build_tiny_model(REPO / "tasks", TinyModelConfig(vocab_size=1024, hidden_size=64,
                                                                            intermediate_size=128, head_dim=16))
    else:
        from progagent_lib.generation.sources import load_model

        model, tokenizer = load_model(spec["model"])
    vocab, group = model.config.vocab_size, spec["group"]
    generator = torch.Generator().manual_seed(1)
    completion = spec["completion"]
    model_tokens = [1 - (i // SPAN) % 2 for i in range(completion)]
    seconds: list[float] = []

    def rollout_func(prompts, trainer):
        prompt = torch.randint(0, vocab, (spec["prompt"],), generator=generator).tolist()
        return {"prompt_ids": [prompt] * len(prompts),
                "completion_ids": [torch.randint(0, vocab, (completion,), generator=generator).tolist()
                                   for _ in prompts],
                "logprobs": [[-1.0] * completion for _ in prompts], "env_mask": [model_tokens] * len(prompts),
                "verifier_reward": [float(i % 2) for i in range(len(prompts))]}

    class Clock(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            self.started = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            seconds.append(time.perf_counter() - self.started)

    with tempfile.TemporaryDirectory() as work:
        config = GSPORunConfig(output_dir=work, num_generations=group, prompts_per_step=1, minibatches=1,
                               num_iterations=1, micro_batch_size=1, max_steps=spec["steps"], save_steps=10**9,
                               max_turns=None, max_new_tokens=None, max_context_tokens=spec["prompt"] + completion,
                               learning_rate=1e-5, bf16=not spec["quick"], gradient_checkpointing=False,
                               logit_chunk_tokens=1024, shared_prompt=spec["shared"])
        peft_config = None
        if spec.get("lora"):
            from peft import LoraConfig

            peft_config = LoraConfig(r=spec["lora"], lora_alpha=2 * spec["lora"], lora_dropout=0.0,
                                     target_modules="all-linear", task_type="CAUSAL_LM")
        dataset = Dataset.from_list([{"prompt": [{"role": "user", "content": "x"}]}] * spec["steps"] * group)
        trainer = GSPOTrainer(model=model, processing_class=tokenizer, reward_funcs=[verifier_reward],
                              args=grpo_args(config), train_dataset=dataset, rollout_func=rollout_func,
                              callbacks=[Clock()], importance_sampling_cap=config.importance_sampling_cap,
                              shared_prompt=config.shared_prompt, peft_config=peft_config)
        with lm_head_tile(config.logit_chunk_tokens):
            trainer.train()
    return {"shared": trainer.shared_prompts is not None, "step_seconds": seconds,
            "prompt_tokens_saved": trainer.shared_prompts.prompt_tokens_saved if trainer.shared_prompts else 0}


def run_child(spec: dict) -> dict:
    done = subprocess.run([sys.executable, __file__, "--measure", json.dumps(spec)], cwd=REPO, capture_output=True,
                          text=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT_MARK)]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"the {'shared' if spec['shared'] else 'whole'} arm failed (exit {done.returncode}):\n"
                         + done.stderr[-3000:])
    return json.loads(lines[-1][len(RESULT_MARK):])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # internal: one arm, in a child process
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--group", type=int, default=4, help="episodes per group, one optimizer step (default 4)")
    parser.add_argument("--prompt", type=int, default=1500, help="prompt tokens (default 1500)")
    parser.add_argument("--completion", type=int, default=1600, help="completion tokens per episode (default 1600)")
    parser.add_argument("--steps", type=int, default=2, help="optimizer steps per arm (default 2; the first is "
                        "left out when there are more)")
    parser.add_argument("--lora", type=int, default=0, metavar="R",
                        help="train LoRA adapters of rank R in both arms (default 0: all the weights)")
    parser.add_argument("--quick", action="store_true", help="the tiny test model, short episodes")
    args = parser.parse_args()
    if args.measure:
        print(RESULT_MARK + json.dumps(measure(json.loads(args.measure))))
        return 0
    if min(args.group, args.prompt, args.completion, args.steps) < 1 or args.group < 2:
        parser.error("--group must be at least 2, and --prompt, --completion and --steps at least 1")
    spec = {"model": args.model, "group": args.group, "prompt": args.prompt, "completion": args.completion,
            "steps": args.steps, "quick": args.quick, "lora": args.lora}
    if args.quick:
        spec.update(group=2, prompt=96, completion=64, steps=2)
    arms = {name: run_child({**spec, "shared": name == "shared"}) for name in ("whole", "shared")}
    if not arms["shared"]["shared"]:
        raise SystemExit("the shared arm's trainer did not share its prompts")

    def per_step(arm: dict) -> float:
        timed = arm["step_seconds"][1:] or arm["step_seconds"]
        return sum(timed) / len(timed)

    whole, shared = per_step(arms["whole"]), per_step(arms["shared"])
    result = {**spec, "whole_step_seconds": round(whole, 2), "shared_step_seconds": round(shared, 2),
              "speedup": round(whole / shared, 2),
              "prompt_tokens_saved": arms["shared"]["prompt_tokens_saved"]}
    trained = f"LoRA r{args.lora}" if args.lora else "all weights"
    print(f"{spec['group']} episodes of {spec['prompt']} + {spec['completion']} tokens per step ({trained}): whole {whole:.1f} s, "
          f"shared prompt {shared:.1f} s, {whole / shared:.2f}x")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
