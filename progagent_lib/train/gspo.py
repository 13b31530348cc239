"""GSPO reinforcement learning through TRL's GRPOTrainer, with our own multi-turn rollouts.

TRL does the machinery (group-normalised advantages, micro-batches, the optimizer, checkpoints); the loss is
written out in `gspo_trainer.GSPOTrainer`: GSPO's by default (sequence-level importance ratio, clipping, no KL term),
TRL's variants by the config's fields (importance_sampling_level, loss_type, beta, epsilon, epsilon_high), with
truncated importance sampling against the sampler and no optimizer step where there is nothing to learn.
`rollout_func` below plays the episodes and hands back token ids, an `env_mask` that removes observation tokens from
the loss, the sampler's log-probs and the verifier's reward. Each optimizer step appends one line to
`<output_dir>/dynamics.jsonl` (see DynamicsLog).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..harness.episode import Limits
from ..harness.spec import DEFAULT_HARNESS
from ..runtime.error_modes import ERROR_MODES
from ..task.scales import SCALES
from ..config import (
    check_bool,
    check_budgets,
    check_choice,
    check_choices,
    check_engine,
    check_int,
    check_ints,
    check_nested,
    check_number,
    check_task_ids,
    check_text,
    check_texts,
    check_url,
    config_error,
)
from .common import DYNAMICS_FILE, HARNESS_NAMES, limits_of, model_positions, select_tasks
from .env_hosts import HELP as ENV_HOST_HELP, check_env_hosts, episode_host
from .logits import lm_head_tile
from .monitoring import REPORT_TO, check_tracker_installed, training_progress
from .precision import check_bf16, master_weights_dtype, sharded_by_launcher
from .ranks import barrier, gather_lists, is_main, on_main, rank, world_size
from .saving import save_final
from ..generation import generator_config, make_generator
from .informative import PROMPT_ORDERS, DynamicSampler, PromptRate, group_is_flat, prompt_of, training_prompts
from .rollout import EpisodeTokens, RolloutSpec, rollout_summary, run_token_episodes

SAMPLES_FILE = "samples.jsonl"
IMPORTANCE_SAMPLING = ("none", "truncated")
IMPORTANCE_SAMPLING_LEVELS = ("sequence", "token")  # = gspo_trainer's (a test checks)
LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo", "luspo")  # = gspo_trainer's: the losses it computes
REWARDS = ("binary", "dense")
LR_SCHEDULERS = ("constant", "linear", "cosine")


@dataclass
class LoraSettings:
    """LoRA adapters (peft) instead of full fine-tuning; merged into a plain checkpoint when the run ends."""

    r: int = field(default=16, metadata={"help": "Rank of each adapter (>= 1)."})
    alpha: int = field(default=32, metadata={"help": "Scaling numerator: the update is scaled by alpha / r (> 0)."})
    dropout: float = field(default=0.05, metadata={"help": "Dropout on the adapters' input, in [0, 1)."})
    target_modules: str | list[str] = field(
        default="all-linear",
        metadata={"help": "The modules that get adapters: peft's 'all-linear' or a list of module names."},
    )

    def __post_init__(self) -> None:
        check_int(self, "r", at_least=1)
        check_number(self, "alpha", above=0)
        check_number(self, "dropout", at_least=0)
        if self.dropout >= 1:
            raise config_error(self, "dropout", "must be a number >= 0 and < 1")
        if isinstance(self.target_modules, str):
            check_text(self, "target_modules")
        else:
            check_texts(self, "target_modules", empty=False)


@dataclass
class GSPORunConfig:
    """Everything a GSPO run needs. Same task pool and hyper-parameters for every harness."""

    model: str = field(
        default="runs/cpu-smoke-pipeline/sft-ptc/final",
        metadata={"help": "The policy to train: a folder (e.g. the SFT output), a hub id or a registered name."},
    )
    chat_template: str | None = field(
        default=None, metadata={"help": "None: the model's own (or its registered choice); 'qwen3' or a .jinja path."}
    )
    output_dir: str = field(
        default="runs/gspo",
        metadata={"help": "Checkpoints, the final model, dynamics.jsonl and samples.jsonl; a run here resumes."},
    )
    tasks_root: str = field(default="tasks", metadata={"help": "The task pool's folder."})
    task_ids: list[str] = field(
        default_factory=list,
        metadata={"help": "Training tasks by id (domain/name); empty: every task under tasks_root."},
    )
    harness: str = field(
        default=DEFAULT_HARNESS,
        metadata={
            "help": "The harness episodes are played under (harness.spec.HARNESSES: dtc | ptc | hybrid, or a registered "
            "one); its row sets the tools, the prompt and the program output bound."
        },
    )
    scales: list[str] = field(
        default_factory=lambda: ["v0", "v1", "v2", "v3"],
        metadata={"help": "Environment scales trained on (v0..v3); ['v0']: the scale ablation."},
    )
    train_seeds: list[int] = field(
        default_factory=lambda: list(range(8)),
        metadata={"help": "Instance seeds trained on (evaluation holds out higher ones)."},
    )
    error_mode: str = field(
        default="is_error",
        metadata={"help": "How a failing tool shows: is_error (the paper's) | off (the isError ablation) | detect."},
    )
    reward: str = field(
        default="binary", metadata={"help": "The reward optimised: binary (R, the paper's) | dense (R~)."}
    )
    # The loss (train.gspo_trainer): GSPO's by default; TRL's variants are these fields, handed to GRPOConfig as named.
    importance_sampling_level: str = field(
        default="sequence",
        metadata={
            "help": "The importance ratio: sequence (GSPO: one per episode, its tokens' mean log-ratio) | token (GRPO)."
        },
    )
    loss_type: str = field(
        default="grpo",
        metadata={
            "help": "How token losses are normalised (TRL's names): grpo | bnpo | dr_grpo | dapo | luspo (sequence)."
        },
    )
    beta: float = field(
        default=0.0,
        metadata={
            "help": "Weight of a KL term to a frozen reference (the starting model), >= 0; 0: none, none loaded."
        },
    )
    epsilon: float = field(
        default=3e-4,
        metadata={
            "help": "Lower clip, at 1 - epsilon, in [0, 1] (sequence ratio: GSPO paper, its authors 1e-2; token ~0.2)."
        },
    )
    epsilon_high: float = field(
        default=4e-4,
        metadata={
            "help": "Upper clip, at 1 + epsilon_high, >= 0 (sequence ratio: GSPO paper, its authors 2e-2; token ~0.28)."
        },
    )
    negative_advantage_weight: float = field(
        default=1.0,
        metadata={
            "help": "What an episode with a negative advantage weighs in the loss, in [0, 1] (1: GSPO; 0: only the "
            "episodes that beat their group's mean are reinforced, none pushed down)."
        },
    )
    positive_advantage_weight: float = field(
        default=1.0,
        metadata={
            "help": "What an episode with a positive advantage weighs in the loss, in [0, 1] (1: GSPO; 0: only the "
            "episodes below their group's mean are pushed down, none reinforced). Not 0 with the negative weight 0."
        },
    )
    learning_rate: float = field(default=1e-6, metadata={"help": "AdamW's learning rate (> 0)."})
    lr_scheduler_type: str = field(
        default="constant",
        metadata={"help": "How the learning rate moves over the run: constant | linear (to 0) | cosine (to 0)."},
    )
    weight_decay: float = field(default=0.1, metadata={"help": "AdamW's weight decay (>= 0)."})
    adam_epsilon: float = field(
        default=1e-8,
        metadata={
            "help": "AdamW's epsilon (> 0). Its first steps move each weight by about the learning rate whatever its "
            "gradient's size (g / |g|); an epsilon near the gradients' size moves weights with small gradients less."
        },
    )
    temperature: float = field(
        default=1.0,
        metadata={
            "help": "Sampling temperature of the rollouts (> 0: a group of identical greedy episodes has no advantage)."
        },
    )
    num_generations: int = field(default=4, metadata={"help": "Rollouts per task in a group (>= 2)."})
    # RL that acts (train.informative): prompts chosen by the policy's own pass rate, flat groups replaced.
    probe_samples: int = field(
        default=0,
        metadata={
            "help": "Samples per candidate prompt (task_ids x scales x train_seeds) at the rollout temperature before "
            "RL; > 0: train only on prompts passed sometimes but not always (refused if none); 0: no probe."
        },
    )
    paired_probe_samples: int | None = field(
        default=None,
        metadata={
            "help": "Samples per trained prompt that the SFT and the GSPO model each play after RL, for the paired "
            "before/after pass rate (post_rl_pass_rates.json); null: probe_samples."
        },
    )
    sampling_batch_size: int = field(
        default=32,
        metadata={
            "help": "Episodes the probes and RFT's sampling play at once (the engine batches their turns; each holds up "
            "to max_context_tokens of its KV cache)."
        },
    )
    prompt_order: str = field(
        default="shuffled",
        metadata={
            "help": "Which chosen prompts the batches and refills take first: shuffled (TRL's seeded shuffle) | "
            "informative (sampled pass rate nearest 1/2 first, then lower: groups with both outcomes and room to rise; "
            "needs probe_samples)."
        },
    )
    dynamic_sampling: bool = field(
        default=False,
        metadata={"help": "DAPO: a group whose rewards are all equal is replaced by a fresh group of another prompt."},
    )
    refill_groups: int = field(
        default=2,
        metadata={"help": "With dynamic_sampling: groups played per generation batch to replace flat ones, at most."},
    )
    prompts_per_step: int = field(default=1, metadata={"help": "Tasks (groups) per generation batch."})
    # Each generation batch (num_generations x prompts_per_step episodes) is split into `minibatches`, one optimizer
    # step each, and passed over `num_iterations` times: minibatches x num_iterations optimizer steps per batch.
    # Past the first, the policy has moved since the batch was sampled, so the sequence ratio and its clip act.
    minibatches: int = field(
        default=1, metadata={"help": "Optimizer steps each pass over a generation batch is split into."}
    )
    num_iterations: int = field(default=2, metadata={"help": "Passes over each generation batch."})
    micro_batch_size: int = field(
        default=1, metadata={"help": "Episodes per forward pass; gradients accumulate over a minibatch."}
    )
    max_steps: int = field(
        default=2,
        metadata={
            "help": "Optimizer steps in all: a multiple of minibatches x num_iterations (the steps of one batch)."
        },
    )
    save_steps: int = field(default=1, metadata={"help": "A checkpoint every this many optimizer steps."})
    sample_episodes: int = field(
        default=2, metadata={"help": "Decoded episodes kept per generation batch in samples.jsonl (0: none)."}
    )
    max_turns: int | None = field(default=8, metadata={"help": "Assistant turns per episode (null: no limit)."})
    max_new_tokens: int | None = field(
        default=256, metadata={"help": "Tokens per assistant turn; a longer turn is cut (null: no limit)."}
    )
    max_context_tokens: int | None = field(
        default=8192,
        metadata={"help": "Prompt + turns + observations; must fit the model's positions (null: no limit)."},
    )
    max_observation_chars: int | None = field(
        default=4000, metadata={"help": "Characters of one observation, cut with a visible marker (null: no limit)."}
    )
    max_tool_calls: int | None = field(
        default=100,
        metadata={"help": "Tool calls per episode, a program counting once (the paper's budget; null: no limit)."},
    )
    # Where the episodes live (train.env_hosts): on environment servers, or here with a bounded number of kernels.
    env_servers: list[str] = field(default_factory=list, metadata={"help": ENV_HOST_HELP["env_servers"]})
    env_server_token_file: str | None = field(default=None, metadata={"help": ENV_HOST_HELP["env_server_token_file"]})
    max_local_kernels: int | None = field(default=None, metadata={"help": ENV_HOST_HELP["max_local_kernels"]})
    engine_url: str | None = field(
        default=None,
        metadata={
            "help": "A `progagent engine serve` server (CPU or GPU) generates; the trainer's weights reach it by a reload "
            "from a saved folder each batch. None: transformers' generate in this process."
        },
    )
    engine_model: str | None = field(
        default=None,
        metadata={"help": "The engine's served name (default: the model's short name); only with engine_url."},
    )
    use_vllm: bool = field(default=False, metadata={"help": "gpu-paper: generation by a `trl vllm-serve` server."})
    vllm_server_base_url: str | None = field(
        default=None, metadata={"help": "That server's URL (only with use_vllm; null: TRL's default host and port)."}
    )
    # The sampler (the engine's vLLM in bf16, transformers' generate) is not exactly the trainer. "truncated":
    # truncated importance sampling at token level, each model token's loss times min(p_trainer / p_sampler, cap),
    # p_trainer taken before any update on the batch (as TRL does on its own vLLM path, whose correction is then
    # off); "none": no correction (the dynamics lines and gspo_config.json say so). Either way the mismatch is logged.
    importance_sampling: str = field(
        default="truncated", metadata={"help": "Correction for the sampler-trainer mismatch: none | truncated."}
    )
    importance_sampling_cap: float = field(default=2.0, metadata={"help": "The truncation of the IS weight (>= 1)."})
    # True: an episode that ended on a budget (max_turns, max_tool_calls, max_context_tokens, a turn cut at
    # max_new_tokens) is dropped like an errored one: no token trained, its group's mean reward. Off by default:
    # evaluation plays under the same budgets, which every shipped config is checked to let the teacher meet, so
    # running out of one is the policy's own failure (looping, rambling) and its R = 0 is a signal to learn from.
    # Masking suits budgets that cut off episodes that might still have succeeded (DAPO's overlong filtering).
    mask_truncated: bool = field(
        default=False, metadata={"help": "Drop episodes that ended on a budget from the loss, as errored ones are."}
    )
    bf16: bool = field(
        default=False,
        metadata={
            "help": "bf16 autocast for forward and backward, fp32 weights and optimizer state: on a GPU, or a CPU with AVX-512 BF16/AMX (refused on a CPU without; train.precision)."
        },
    )
    gradient_checkpointing: bool = field(
        default=False, metadata={"help": "Recompute activations in the backward pass: less memory, ~40% slower."}
    )
    logit_chunk_tokens: int | None = field(
        default=None,
        metadata={
            "help": "Positions per tile of the fused LM head in the log-probs (the full logits never exist; on a CPU "
            "train.logits.TiledLogProbs); smaller: less memory, a CPU tile holding three tile x vocabulary arrays. "
            "null: TRL's 4096."
        },
    )
    shared_prompt: bool = field(
        default=True,
        metadata={
            "help": "Run a group's prompt through the model once per optimizer step, not once per episode "
            "(train.shared_prompt): the same gradients, the prompt's share of the update's compute saved (about "
            "half of it on cpu-smoke). With one process, micro-batches of one episode and no gradient checkpointing "
            "(all the weights or LoRA adapters); elsewhere each episode runs whole."
        },
    )
    lora: LoraSettings | None = field(default=None, metadata={"help": "LoRA adapters; null: full fine-tuning."})
    seed: int = field(default=0, metadata={"help": "Seed of the trainer and the sampler."})
    report_to: str = field(
        default="none",
        metadata={
            "help": "A tracker the trainer's logs also go to: none | tensorboard (event files under <output_dir>/runs, "
            "offline) | trackio | wandb (train.monitoring)."
        },
    )

    def __post_init__(self) -> None:
        check_text(self, "model")
        check_text(self, "chat_template", optional=True)
        check_text(self, "output_dir")
        check_text(self, "tasks_root")
        check_texts(self, "task_ids")
        check_choice(self, "harness", HARNESS_NAMES)
        check_choices(self, "scales", SCALES)
        check_ints(self, "train_seeds")
        check_choice(self, "error_mode", ERROR_MODES)
        check_choice(self, "reward", REWARDS)
        check_loss(self)
        check_number(self, "learning_rate", above=0)
        check_number(self, "weight_decay", at_least=0)
        check_number(self, "adam_epsilon", above=0)
        check_number(
            self,
            "temperature",
            above=0,
            why=" (GSPO learns from differences within a group; greedy rollouts of one prompt are all the same)",
        )
        check_int(self, "num_generations", at_least=2, why=" (a group of one has no advantage to learn from)")
        for name in (
            "prompts_per_step",
            "minibatches",
            "num_iterations",
            "micro_batch_size",
            "max_steps",
            "save_steps",
        ):
            check_int(self, name, at_least=1)
        check_int(self, "sample_episodes", at_least=0)
        check_choice(self, "lr_scheduler_type", LR_SCHEDULERS)
        check_int(self, "probe_samples", at_least=0, why=" (0: no probe; otherwise at least 2 to see both outcomes)")
        check_int(self, "paired_probe_samples", at_least=1, optional=True)
        if self.probe_samples == 1:
            raise config_error(self, "probe_samples", "is 1: one sample cannot show a prompt passed only sometimes")
        check_int(self, "sampling_batch_size", at_least=1)
        check_choice(self, "prompt_order", PROMPT_ORDERS)
        if self.prompt_order == "informative" and not self.probe_samples:
            raise config_error(
                self, "prompt_order", "is informative: the order is the probe's rates; set probe_samples"
            )
        check_bool(self, "dynamic_sampling")
        check_int(self, "refill_groups", at_least=0)
        check_budgets(self)
        check_env_hosts(self)
        group = self.num_generations * self.prompts_per_step
        if group % (self.micro_batch_size * self.minibatches):
            raise config_error(
                self,
                "micro_batch_size",
                f"times minibatches={self.minibatches} must divide the "
                f"generation batch of {group} episodes "
                "(num_generations x prompts_per_step)",
            )
        per_batch = self.minibatches * self.num_iterations
        if self.max_steps % per_batch:
            raise config_error(
                self,
                "max_steps",
                f"must be a multiple of minibatches x num_iterations = {per_batch} "
                "(the optimizer steps of one generation batch)",
            )
        check_engine(self)
        check_bool(self, "use_vllm")
        check_url(self, "vllm_server_base_url")
        if self.use_vllm and self.engine_url:
            raise config_error(
                self,
                "engine_url",
                "and use_vllm=True name two generators; keep one: engine_url (a "
                "`progagent engine serve` server) or use_vllm (a `trl vllm-serve` server)",
            )
        if self.vllm_server_base_url and not self.use_vllm:
            raise config_error(self, "vllm_server_base_url", "is read only with use_vllm=True; set use_vllm or drop it")
        check_choice(self, "importance_sampling", IMPORTANCE_SAMPLING)
        cap = self.importance_sampling_cap
        if isinstance(cap, bool) or not isinstance(cap, (int, float)) or not cap >= 1.0 or cap == float("inf"):
            raise config_error(
                self,
                "importance_sampling_cap",
                "must be a finite number >= 1 (a cap below 1 would "
                "shrink the loss of tokens the sampler and the trainer agree on)",
            )
        for name in ("mask_truncated", "bf16", "gradient_checkpointing", "shared_prompt"):
            check_bool(self, name)
        check_int(self, "logit_chunk_tokens", at_least=1, optional=True, why=" (null: TRL's tile)")
        check_nested(self, "lora", LoraSettings, optional=True)
        check_int(self, "seed", at_least=0)
        check_choice(self, "report_to", REPORT_TO)
        check_tracker_installed(self)

    def validate_tasks(self) -> None:
        """The task ids exist under tasks_root (when that folder exists): called by run_gspo, not at construction."""
        check_task_ids(self, "task_ids", self.tasks_root)

    def limits(self) -> Limits:
        return limits_of(self)


def prompt_key(task_id: str, scale: str, seed: int) -> str:
    """task|scale|seed: the episode a TRL prompt stands for, read back by the rollout function."""
    return f"{task_id}|{scale}|{seed}"


def build_prompt_dataset(tasks: list[Any], prompts: list[PromptRate]):
    """One row per prompt (task, scale, seed). TRL hands rollout_func only the prompts, so each carries its key."""
    from datasets import Dataset

    by_id = {task.id: task for task in tasks}
    rows = [
        {
            "prompt": [
                {
                    "role": "user",
                    "content": by_id[p.task_id].instruction(p.seed),
                    "episode": prompt_key(p.task_id, p.scale, p.seed),
                }
            ]
        }
        for p in prompts
    ]
    return Dataset.from_list(rows)


class DynamicsLog:
    """One JSON line per optimizer step: the step's loss, its GSPO diagnostics (sequence ratio, entropy, clip
    fractions, importance weights, whether the update was skipped: see STEP_LOG_KEYS) and the summary of the
    generation batch it trained on (with the sampler-trainer log-prob mismatch on the batch's first line).

    A generation batch is trained on `steps_per_batch` times (`minibatches` x `num_iterations`); its lines say
    which (`generation`, `pass` of `passes`), and carry the batch's episode summary, the same on each of them.
    Rollout and weight-sync seconds are on the batch's first line (they are spent once per batch).
    Samples (`samples.jsonl`): the first `sample_episodes` decoded episodes of each batch.
    """

    def __init__(
        self,
        path: Path,
        group_size: int = 1,
        sample_episodes: int = 2,
        steps_per_batch: int = 1,
        reward: str = "binary",
        importance_sampling: str | None = None,
    ):
        self.path, self.steps_per_batch, self.reward = path, max(steps_per_batch, 1), reward
        self.importance_sampling = importance_sampling  # the run's correction, named on every line ("none" too)
        self.samples_path = path.with_name(SAMPLES_FILE)
        self.group_size, self.sample_episodes = group_size, sample_episodes
        self.pending: list[EpisodeTokens] = []  # this process's episodes of the batch not yet summarised
        self.rollout_seconds = 0.0
        self.weight_sync_seconds = 0.0  # saving the weights and the engine reloading them (engine generation)
        self.batch: dict[str, Any] = {}  # the summary of the generation batch being trained on
        self.batch_episodes: list[EpisodeTokens] = []  # and its episodes (samples.jsonl takes the first few)
        self.sampling: dict[str, Any] = {}  # dynamic sampling's counts of the batch (train.informative)

    def add(self, episodes: list[EpisodeTokens], seconds: float) -> None:
        self.pending.extend(episodes)
        self.rollout_seconds += seconds

    def position(self, step: int) -> dict[str, int]:
        """Which generation batch optimizer step `step` (1-based) trained on, and which pass over it."""
        return {
            "generation": (step - 1) // self.steps_per_batch + 1,
            "pass": (step - 1) % self.steps_per_batch + 1,
            "passes": self.steps_per_batch,
        }

    def summarise(self, episodes: list[EpisodeTokens] | None = None) -> dict[str, Any]:
        """Start a new generation batch from `episodes` (every process's, when distributed; default this process's)."""
        episodes = self.pending if episodes is None else episodes
        self.batch = {
            **rollout_summary(episodes),
            **zero_variance(episodes, self.group_size, self.reward),
            **self.sampling,
            "seconds_rollout": self.rollout_seconds,
            "seconds_weight_sync": self.weight_sync_seconds,
        }
        self.batch_episodes = list(episodes)
        self.pending, self.rollout_seconds, self.weight_sync_seconds, self.sampling = [], 0.0, 0.0, {}
        return self.batch

    def write(self, step: int, step_seconds: float, log: dict | None = None) -> dict:
        """Append the line of optimizer step `step` (TRL's `log` of it: loss, clip fractions, grad norm)."""
        where = self.position(step)
        first = where["pass"] == 1
        record = {"step": step, **where, **self.batch, **_step_log(log or {}), "seconds_step": step_seconds}
        if self.importance_sampling is not None:
            record["importance_sampling"] = self.importance_sampling
        if not first:
            record["seconds_rollout"] = record["seconds_weight_sync"] = 0.0
        record["seconds_update"] = max(
            step_seconds - record.get("seconds_rollout", 0.0) - record.get("seconds_weight_sync", 0.0), 0.0
        )
        with self.path.open("a") as f:
            f.write(json.dumps(record) + "\n")
        if first and self.sample_episodes:
            with self.samples_path.open("a", encoding="utf-8") as f:
                for episode in self.batch_episodes[: self.sample_episodes]:
                    f.write(
                        json.dumps(
                            {"step": step, "generation": where["generation"], **episode.trajectory.to_dict()},
                            ensure_ascii=False,
                        )
                        + "\n"
                    )
        return record

    def truncate_after(self, step: int) -> None:
        """Drop lines of steps past `step` (written by a killed run after its last checkpoint)."""
        if not self.path.exists():
            return
        for path in (self.path, self.samples_path):
            if path.exists():
                kept = [
                    line for line in path.read_text().splitlines() if line.strip() and json.loads(line)["step"] <= step
                ]
                path.write_text("".join(line + "\n" for line in kept))

    @staticmethod
    def read(path: str | Path) -> list[dict]:
        """The dynamics lines of a run (one per optimizer step)."""
        path = Path(path)
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def zero_variance(episodes: list[EpisodeTokens], group_size: int, reward: str = "binary") -> dict[str, Any]:
    """The share of groups (consecutive `group_size` rollouts of one prompt) whose rewards (the ones optimised:
    R, or R~ when `reward` is dense) are all equal: such a group has zero advantage everywhere and teaches nothing."""
    groups = [episodes[i : i + group_size] for i in range(0, len(episodes), max(group_size, 1))]
    groups = [g for g in groups if g]
    flat = [group_is_flat(g, reward) for g in groups]  # dynamic sampling's test of the same groups
    return {
        "groups": len(groups),
        "zero_variance_group_share": sum(flat) / len(groups) if groups else 0.0,
        # Each group's prompt, passes, episodes and whether its rewards differ: the prompts a batch trained on.
        "group_prompts": [
            [*prompt_of(g[0].trajectory), sum(e.reward == 1.0 for e in g), len(g), not f] for g, f in zip(groups, flat)
        ],
    }


def trained_prompts(lines: list[dict]) -> list[tuple[str, str, int]]:
    """The prompts of the informative groups GSPO trained on (`group_prompts` of its dynamics lines), first seen
    first: a flat group moved nothing. Empty for a log written before lines carried them."""
    seen: dict[tuple[str, str, int], None] = {}
    for line in lines:
        for task_id, scale, seed, _passed, _episodes, informative in line.get("group_prompts", []):
            if informative:
                seen.setdefault((task_id, scale, int(seed)), None)
    return list(seen)


# TRL's log of an optimizer step -> the dynamics line's key. The gspo/ metrics come from GSPOTrainer (gspo_trainer.py).
STEP_LOG_KEYS = {
    "loss": "loss",
    "grad_norm": "grad_norm",
    "learning_rate": "learning_rate",
    "clip_ratio/low_mean": "clip_low",
    "clip_ratio/high_mean": "clip_high",
    "clip_ratio/region_mean": "clip_region",
    "entropy": "entropy",  # per model token
    "kl": "kl",  # per model token, beta > 0
    # per episode (per model token with importance_sampling_level "token")
    "gspo/ratio_mean": "ratio_mean",
    "gspo/ratio_min": "ratio_min",
    "gspo/ratio_max": "ratio_max",
    "gspo/is_weight_mean": "is_weight_mean",
    "gspo/is_weight_min": "is_weight_min",
    "gspo/is_weight_max": "is_weight_max",
    # |logp_sampler - logp_trainer| over the generation batch's model tokens: on its first step's line only
    "gspo/logp_mismatch_mean": "logp_mismatch_mean",
    "gspo/logp_mismatch_max": "logp_mismatch_max",
}


def _step_log(log: dict) -> dict[str, Any]:
    """What the dynamics line keeps of TRL's log of one optimizer step (and whether its update was skipped)."""
    kept: dict[str, Any] = {
        name: log[key]
        for key, name in STEP_LOG_KEYS.items()
        if isinstance(log.get(key), (int, float)) and not isinstance(log.get(key), bool)
    }
    if "gspo/optimizer_step_skipped" in log:
        kept["skipped"] = bool(log["gspo/optimizer_step_skipped"])
    return kept


def make_rollout_func(
    config: GSPORunConfig,
    tasks: list[Any],
    dynamics: DynamicsLog | None = None,
    turn_generator: Callable[[Any, list[RolloutSpec]], Any] | None = None,
    chat: Any = None,
    pool: list[PromptRate] | None = None,
):
    """The function TRL calls instead of its own generation: one full episode per prompt it is given, and with
    dynamic_sampling, flat groups replaced by groups of `pool`'s prompts (train.informative.DynamicSampler).

    `turn_generator(trainer, specs)` replaces the trainer's model as the source of assistant turns (bench/train.py
    replays teacher turns through it to time the environment on episodes that really use tools)."""
    tasks_by_id = {t.id: t for t in tasks}
    limits = config.limits()
    env_host = episode_host(config)  # environment servers (checked to answer now), bounded local kernels, or None
    http_clients: dict[str, Any] = {}

    def vllm_client(trainer: Any) -> Any:
        # TRL gives only the main process a client (it also syncs weights); other ranks generate over plain HTTP.
        client = getattr(trainer.vllm_generation, "vllm_client", None)
        if client is None:
            if "own" not in http_clients:
                from trl.generation.vllm_client import VLLMClient

                http_clients["own"] = VLLMClient(
                    base_url=trainer.args.vllm_server_base_url
                    or f"http://{trainer.args.vllm_server_host}:{trainer.args.vllm_server_port}"
                )
            client = http_clients["own"]
        return client

    # The engine's requests are seeded from (seed, call, position), the seed offset by the rank so that ranks playing
    # the same prompt do not sample alike; the trainer's own model samples from torch's global generator (seeded by the
    # trainer, per rank): a seeded generator made anew each batch would repeat one stream.
    choice = generator_config(
        model=config.model,
        temperature=config.temperature,
        seed=config.seed + rank() if config.engine_url else None,
        engine_url=config.engine_url,
        engine_model=config.engine_model,
        use_vllm=config.use_vllm,
        vllm_server_base_url=config.vllm_server_base_url,
    )
    chat_formats: dict[int, Any] = {id(chat.tokenizer): chat} if chat is not None else {}
    sampler = (
        DynamicSampler(
            pool or [],
            config.num_generations,
            config.refill_groups,
            config.reward,
            config.seed + rank(),
            shuffle=config.prompt_order == "shuffled",
        )
        if config.dynamic_sampling
        else None
    )
    engine_state: dict[str, Any] = {}
    vllm_state: dict[str, Any] = {}

    def engine_generator(trainer: Any, chat: Any) -> Any:
        """The engine generates; when the trainer has stepped since the last batch, its weights are saved and the
        server reloads them first (no NCCL on CPU: see progagent_lib.engine.weights)."""
        from ..engine.weights import sync_weights

        engine_url = config.engine_url
        assert engine_url is not None  # the engine backend is chosen by engine_url

        def push() -> float:
            if trainer.state.global_step > 0 or engine_state:
                return sum(
                    sync_weights(
                        trainer.accelerator.unwrap_model(trainer.model),
                        engine_url,
                        Path(config.output_dir) / "engine-weights",
                    ).values()
                )
            # the run's first batch: the server may hold other weights (an earlier stage's, another run's)
            from ..engine.weights import reload_weights
            from ..generation.sources import resolve_model_source

            source = Path(resolve_model_source(config.model, config.chat_template))
            return reload_weights(engine_url, source) if any(source.glob("*.safetensors")) else 0.0

        if engine_state.get("step") != trainer.state.global_step:
            # One push, by the main rank; every rank waits for it, so none samples from the weights it replaces.
            seconds = on_main(push)
            if dynamics is not None:
                dynamics.weight_sync_seconds += seconds
            engine_state["step"] = trainer.state.global_step
        if "generator" not in engine_state:
            engine_state["generator"] = make_generator(choice, chat)
        return engine_state["generator"]

    def rollout_func(prompts: list[list[dict]], trainer: Any) -> dict[str, list]:
        from ..harness.chat_format import ChatFormat

        started = time.perf_counter()
        tokenizer = trainer.processing_class
        if id(tokenizer) not in chat_formats:  # a trainer whose tokenizer is not the one run_gspo checked
            chat_formats[id(tokenizer)] = ChatFormat(tokenizer, model_name=config.model)
        chat = chat_formats[id(tokenizer)]
        specs = []
        for prompt in prompts:
            task_id, scale, seed = prompt[-1]["episode"].split("|")
            specs.append(RolloutSpec(tasks_by_id[task_id], scale, int(seed)))
        if choice.backend == "trl-vllm" and vllm_state.get("step") != trainer.state.global_step:
            # TRL has just pushed the new weights from the main rank (sync_weights, no barrier after it): wait for the
            # push before any rank samples from the server.
            barrier()
            vllm_state["step"] = trainer.state.global_step
        if turn_generator is not None:
            generate_turn = turn_generator(trainer, specs)
        elif choice.backend == "engine":  # cached, with the trainer's weights synced to the server first
            generate_turn = engine_generator(trainer, chat)
        else:
            generate_turn = make_generator(
                choice,
                chat,
                model=trainer.accelerator.unwrap_model(trainer.model),
                vllm_client=vllm_client(trainer) if choice.backend == "trl-vllm" else None,
            )

        def play(specs: list[RolloutSpec]) -> list[EpisodeTokens]:
            # Episodes of one step are played as one batch: on the engine each asks for its next turn as soon as its
            # last was played; with any other generator in lockstep, each turn one batched generate call.
            return run_token_episodes(
                specs,
                config.harness,
                chat,
                generate_turn,
                limits,
                error_mode=config.error_mode,
                policy_name=f"hf:{config.model}@gspo-{config.harness}",
                env_host=env_host,
            )

        episodes = play(specs)
        if sampler is not None:
            n = config.num_generations
            episodes, sampling = sampler.refill(
                episodes,
                lambda prompts: play(
                    [RolloutSpec(tasks_by_id[p.task_id], p.scale, p.seed) for p in prompts for _ in range(n)]
                ),
            )
            if dynamics is not None:
                dynamics.sampling = sampling
        if dynamics is not None:
            dynamics.add(episodes, time.perf_counter() - started)
        rewards = [e.reward if config.reward == "binary" else e.score for e in episodes]
        # An episode that ended by an infrastructure error (and, with mask_truncated, one that ran out of a budget)
        # is dropped from the loss (no token is trained) and given its group's mean reward, so it moves neither the
        # baseline nor the policy.
        dropped = [e.errored or (config.mask_truncated and e.truncated) for e in episodes]
        rewards = group_mean_for_dropped(rewards, dropped, config.num_generations)
        return {
            "prompt_ids": [e.prompt_ids for e in episodes],
            "completion_ids": [e.completion_ids for e in episodes],
            "logprobs": [e.logprobs for e in episodes],
            "env_mask": [[0] * len(e.env_mask) if gone else e.env_mask for e, gone in zip(episodes, dropped)],
            "verifier_reward": rewards,
        }

    return rollout_func


def group_mean_for_dropped(rewards: list[float], dropped: list[bool], group_size: int) -> list[float]:
    """This rank's rewards, each dropped episode's replaced by the mean of its group's kept ones (0 if none is kept).
    A group may be split across ranks (TRL hands rank r the r-th contiguous slice of the generation batch), so the
    groups are read on every rank's episodes, gathered in rank order."""
    everything = gather_lists(list(zip(rewards, dropped)))
    start = rank() * len(rewards) if len(everything) > len(rewards) else 0
    filled = []
    for index in range(start, start + len(rewards)):
        reward, gone = everything[index]
        if gone:
            first = index - index % group_size
            kept = [r for r, g in everything[first : first + group_size] if not g]
            reward = sum(kept) / len(kept) if kept else 0.0
        filled.append(reward)
    return filled


def verifier_reward(prompts: list, completions: list, verifier_reward: list[float], **_: Any) -> list[float]:
    """The reward TRL optimises: the verifier's verdict computed inside the rollout (binary R by default)."""
    return list(verifier_reward)


def _dynamics_callback(dynamics: DynamicsLog):
    from transformers import TrainerCallback

    class DynamicsCallback(TrainerCallback):
        """One dynamics line per optimizer step, written when TRL logs it (after on_step_end)."""

        step_started: float | None = None

        def on_step_begin(self, args, state, control, **kwargs):
            if self.step_started is None:
                self.step_started = time.perf_counter()

        def on_log(self, args, state, control, logs=None, **kwargs):
            if not (logs and "loss" in logs):
                return
            if dynamics.position(state.global_step)["pass"] == 1 or dynamics.pending:
                from accelerate.utils import gather_object

                # A new generation batch: every process played part of it, and all must join this collective.
                dynamics.summarise(gather_object(dynamics.pending))
            if state.is_world_process_zero:
                dynamics.write(state.global_step, time.perf_counter() - self.step_started, logs)
            self.step_started = None

    return DynamicsCallback()


def _resume_point(output_dir: Path, dynamics: DynamicsLog, resume: bool) -> str | None:
    """The checkpoint a run resumes from (None: from the start), with the dynamics lines past it dropped."""
    checkpoint = last_checkpoint(output_dir) if resume else None
    if checkpoint is not None:
        state = json.loads((Path(checkpoint) / "trainer_state.json").read_text())
        dynamics.truncate_after(state["global_step"])
    else:
        dynamics.truncate_after(0)
    return checkpoint


def last_checkpoint(output_dir: str | Path) -> str | None:
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(str(output_dir)) if Path(output_dir).is_dir() else None


def grpo_args(config: GSPORunConfig, processes: int = 1):
    """TRL's arguments for `config` trained by `processes` ranks. A generation batch is the config's
    num_generations x prompts_per_step episodes whatever the number of ranks: each rank plays and trains its share."""
    import torch
    from trl import GRPOConfig

    on_cpu = not torch.cuda.is_available()
    check_processes(config, processes)
    group = config.num_generations * config.prompts_per_step // processes  # this rank's episodes of a batch
    return GRPOConfig(
        output_dir=config.output_dir,
        # The loss's variant (GSPO's by default: a sequence-level ratio, loss_type grpo, no KL term), as TRL names it.
        importance_sampling_level=config.importance_sampling_level,
        loss_type=config.loss_type,
        beta=config.beta,
        epsilon=config.epsilon,
        epsilon_high=config.epsilon_high,
        learning_rate=config.learning_rate,
        lr_scheduler_type=config.lr_scheduler_type,
        weight_decay=config.weight_decay,
        adam_epsilon=config.adam_epsilon,
        temperature=config.temperature,
        num_generations=config.num_generations,
        # Micro-batches of a few episodes, accumulated over a minibatch (one optimizer step); TRL's
        # steps_per_generation counts micro-batches, so a generation batch holds all of them.
        per_device_train_batch_size=config.micro_batch_size,
        gradient_accumulation_steps=group // (config.micro_batch_size * config.minibatches),
        steps_per_generation=group // config.micro_batch_size,
        num_iterations=config.num_iterations,
        max_steps=config.max_steps,
        save_strategy="steps",
        save_steps=config.save_steps,
        # The bar is train.monitoring's (a widget in notebooks), so transformers' own is off.
        logging_steps=1,
        report_to=config.report_to,
        project="progagent",
        disable_tqdm=True,
        seed=config.seed,
        shuffle_dataset=config.prompt_order == "shuffled",  # informative: the dataset's rows in their order
        max_completion_length=config.max_context_tokens,
        use_cpu=on_cpu,
        bf16=check_bf16(config.bf16, "GSPORunConfig.bf16"),
        # TRL turns checkpointing on by default (under its old name); on CPU with a tiny model it only costs time.
        activation_checkpointing=config.gradient_checkpointing,
        use_vllm=config.use_vllm,
        vllm_mode="server",
        # The sampler correction is GSPOTrainer's on every generation path (config.importance_sampling), not TRL's.
        vllm_importance_sampling_correction=False,
        vllm_server_base_url=config.vllm_server_base_url or None,  # None (TRL's default): its host and port
    )


def check_loss(config: GSPORunConfig) -> None:
    """The loss's fields: each in its range, and a loss type that fits the ratio and the budgets."""
    check_choice(config, "importance_sampling_level", IMPORTANCE_SAMPLING_LEVELS)
    check_choice(config, "loss_type", LOSS_TYPES)
    check_number(config, "beta", at_least=0, why=" (0: no KL term)")
    check_number(config, "epsilon", at_least=0, at_most=1, why=" (the lower clip, 1 - epsilon, is not negative)")
    check_number(config, "epsilon_high", at_least=0)
    check_number(config, "negative_advantage_weight", at_least=0, at_most=1)
    check_number(config, "positive_advantage_weight", at_least=0, at_most=1)
    if config.negative_advantage_weight == config.positive_advantage_weight == 0:
        raise config_error(
            config,
            "positive_advantage_weight",
            "with negative_advantage_weight 0 every advantage is 0: nothing is learnt",
        )
    if config.loss_type == "luspo" and config.importance_sampling_level != "sequence":
        raise config_error(
            config,
            "loss_type",
            "weighs each episode's sequence ratio by its length: set "
            "importance_sampling_level: sequence, or another loss_type",
        )
    if config.loss_type == "dr_grpo" and config.max_context_tokens is None:
        raise config_error(
            config,
            "loss_type",
            "divides by max_context_tokens, which is null: set max_context_tokens, or another loss_type",
        )


def check_processes(config: GSPORunConfig, processes: int) -> None:
    """Refuse a generation batch that `processes` ranks cannot share in whole micro-batches and minibatches."""
    from ..config import ConfigError

    group = config.num_generations * config.prompts_per_step
    if processes > 1 and group % (config.micro_batch_size * config.minibatches * processes):
        raise ConfigError(
            f"GSPORunConfig: a generation batch of {group} episodes (num_generations x prompts_per_step) "
            f"cannot be shared by {processes} ranks in micro-batches of {config.micro_batch_size} and "
            f"{config.minibatches} minibatch(es): make it a multiple of micro_batch_size x minibatches x "
            f"{processes} (e.g. raise prompts_per_step), or launch fewer ranks"
        )
    if processes > 1 and config.dynamic_sampling and (group // processes) % config.num_generations:
        raise ConfigError(
            f"GSPORunConfig.dynamic_sampling: each of {processes} ranks plays {group // processes} episodes of a "
            f"batch, not whole groups of {config.num_generations}, so a rank cannot replace a flat group alone: make "
            "prompts_per_step a multiple of the ranks, or turn dynamic_sampling off"
        )
    if processes > 1 and config.engine_url and sharded_by_launcher():
        raise ConfigError(
            "GSPORunConfig.engine_url: the engine's weights are pushed from the main rank's model, which "
            "a sharded launch (DeepSpeed ZeRO-3, FSDP) holds only a shard of; generate through use_vllm "
            "(TRL gathers the weights for its server) or launch without sharding"
        )


def run_gspo(
    config: GSPORunConfig, *, resume: bool = True, turn_generator: Callable[[Any, list[RolloutSpec]], Any] | None = None
) -> dict:
    """Train; a run whose output_dir holds checkpoints resumes from the last one (step count and dynamics log)."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from .gspo_trainer import GSPOTrainer
    from ..generation.sources import load_model

    output_dir = Path(config.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    if is_main():
        (output_dir / "gspo_config.json").write_text(json.dumps(asdict(config), indent=2))
    config.validate_tasks()
    check_bf16(config.bf16, "GSPORunConfig.bf16")  # before any compute
    args = grpo_args(config, world_size())  # refuses a batch the ranks cannot share, before any compute
    tasks = select_tasks(config.tasks_root, config.task_ids)
    resuming = resume and last_checkpoint(output_dir) is not None
    # The prompts to train on: with probe_samples, those the policy passes sometimes but not always (train.informative)
    prompts = on_main(training_prompts, config, tasks, resuming)
    dataset = build_prompt_dataset(tasks, prompts)
    model, tokenizer = load_model(config.model, chat_template=config.chat_template, dtype=master_weights_dtype())
    positions = model_positions(model.config)
    if positions is not None and config.max_context_tokens is not None and config.max_context_tokens > positions:
        raise ValueError(
            f"max_context_tokens={config.max_context_tokens} exceeds the {positions} positions of "
            f"{config.model!r}: lower it, or name the model with a scaled context (e.g. smollm2@32k)"
        )

    from ..harness.chat_format import ChatFormat
    from .feasibility import check_template_on_teacher

    chat = ChatFormat(tokenizer, model_name=config.model)
    check_template_on_teacher(chat, tasks[0], config.harness)
    if is_main():
        (output_dir / "chat_format.json").write_text(json.dumps(chat.describe(), indent=2))  # recorded with the run

    dynamics = DynamicsLog(
        output_dir / DYNAMICS_FILE,
        config.num_generations,
        config.sample_episodes,
        config.minibatches * config.num_iterations,
        config.reward,
        config.importance_sampling,
    )
    # Which checkpoint to resume from is the main rank's decision, and its rewrite of the log the only one.
    checkpoint = on_main(_resume_point, output_dir, dynamics, resume)

    peft_config = None
    if config.lora is not None:
        from peft import LoraConfig

        peft_config = LoraConfig(
            r=config.lora.r,
            lora_alpha=config.lora.alpha,
            lora_dropout=config.lora.dropout,
            target_modules=config.lora.target_modules,
            task_type="CAUSAL_LM",
        )
    trainer = GSPOTrainer(
        model=model,
        processing_class=tokenizer,
        reward_funcs=[verifier_reward],
        args=args,
        train_dataset=dataset,
        rollout_func=make_rollout_func(config, tasks, dynamics, turn_generator, chat, prompts),
        peft_config=peft_config,
        callbacks=[_dynamics_callback(dynamics), training_progress("GSPO")],
        importance_sampling_cap=config.importance_sampling_cap if config.importance_sampling == "truncated" else None,
        shared_prompt=config.shared_prompt,
        negative_advantage_weight=config.negative_advantage_weight,
        positive_advantage_weight=config.positive_advantage_weight,
    )
    with lm_head_tile(config.logit_chunk_tokens):  # every forward and backward of the run
        trainer.train(resume_from_checkpoint=checkpoint)
    # A plain checkpoint of the whole weights (gathered under ZeRO-3/FSDP, LoRA merged on them), so evaluation and the
    # next stage need no adapter or shard logic; every rank waits until it is written.
    save_final(trainer.model_wrapped, tokenizer, output_dir / "final", accelerator=trainer.accelerator)
    return {
        "global_step": trainer.state.global_step,
        "prompts": len(prompts),
        "dynamics": DynamicsLog.read(dynamics.path),
        "final_model": str(output_dir / "final"),
    }
