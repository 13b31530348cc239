"""Cold-start SFT on teacher trajectories through TRL's SFTTrainer, with the loss on the assistant's tokens only.

The dataset keeps trajectories whose dense score R~ reaches `min_score` (0.7 in the paper), the same number per
harness, chosen round-robin over tasks so that every task is covered under every harness.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..harness.spec import PAPER_HARNESSES
from ..task.scales import SCALES
from ..config import (
    check_bool,
    check_choice,
    check_choices,
    check_int,
    check_ints,
    check_lr_scheduler,
    check_nested,
    check_number,
    check_task_ids,
    check_text,
    check_texts,
)
from .common import HARNESS_NAMES, select_tasks
from .gspo import LoraSettings
from .logits import lm_head_tile
from .monitoring import REPORT_TO, check_tracker_installed, training_progress
from .precision import check_bf16, master_weights_dtype
from .ranks import is_main, main_first, on_main
from .saving import save_final
from ..generation.sources import load_model
from ..generation.tiny_model import TinyModelConfig, build_tiny_model


@dataclass
class SFTRunConfig:
    """Everything an SFT run needs."""

    model: str = field(
        default="tiny",
        metadata={
            "help": "'tiny': build a from-scratch model (see tiny); else a registered name, a folder or a hub id."
        },
    )
    chat_template: str | None = field(
        default=None, metadata={"help": "None: the model's own (or its registered choice); 'qwen3' or a .jinja path."}
    )
    tiny: TinyModelConfig = field(
        default_factory=TinyModelConfig,
        metadata={"help": "The from-scratch model's size (read only when model is 'tiny')."},
    )
    output_dir: str = field(default="runs/sft", metadata={"help": "The dataset report, logs and the final model."})
    tasks_root: str = field(default="tasks", metadata={"help": "The task pool's folder."})
    task_ids: list[str] = field(
        default_factory=list,
        metadata={"help": "Training tasks by id (domain/name); empty: every task under tasks_root."},
    )
    trajectories: list[str] = field(
        default_factory=list,
        metadata={"help": "Teacher trajectories (JSON-lines files); empty: play the OracleTeacher now."},
    )
    harnesses: list[str] = field(
        default_factory=lambda: list(PAPER_HARNESSES),
        metadata={
            "help": "Harnesses whose trajectories are trained on, the same number each: dtc, ptc, hybrid (or any "
            "registered one)."
        },
    )
    scales: list[str] = field(
        default_factory=lambda: ["v0"], metadata={"help": "Scales (v0..v3) of the teacher trajectories played here."}
    )
    seeds: list[int] = field(
        default_factory=lambda: [0], metadata={"help": "Seeds of the teacher trajectories played here."}
    )
    teacher_reading: bool = field(
        default=False,
        metadata={
            "help": "The teacher prints the documents and records its program's literals come from before it writes "
            "the program (OracleTeacher(reading=True)): longer episodes whose programs use only what was shown."
        },
    )
    min_score: float = field(
        default=0.7, metadata={"help": "Keep trajectories with R~ >= this (the paper's 0.7), in [0, 1]."}
    )
    per_harness: int | None = field(
        default=None, metadata={"help": "Trajectories per harness; None: as many as the smallest harness has."}
    )
    max_length: int | None = field(
        default=8192,
        metadata={"help": "Tokens per trajectory; a longer teacher trajectory is refused, not cut (null: no limit)."},
    )
    save_steps: int | None = field(
        default=None,
        metadata={
            "help": "Also keep the weights every this many optimizer steps (<output_dir>/checkpoint-N, model only: "
            "the SFT curve evaluates them); null: only the final model."
        },
    )
    num_train_epochs: float = field(default=1.0, metadata={"help": "Passes over the dataset (when max_steps is -1)."})
    max_steps: int = field(default=-1, metadata={"help": "Optimizer steps; -1: num_train_epochs decides."})
    learning_rate: float = field(default=1e-5, metadata={"help": "AdamW's peak learning rate (> 0)."})
    lr_scheduler_type: str = field(
        default="linear",
        metadata={"help": "A transformers scheduler: linear | constant | cosine | ... (transformers' SchedulerType)."},
    )
    warmup_steps: int = field(default=0, metadata={"help": "Steps of linear warm-up from 0."})
    weight_decay: float = field(default=0.0, metadata={"help": "AdamW's weight decay (>= 0)."})
    per_device_train_batch_size: int = field(default=1, metadata={"help": "Trajectories per forward pass."})
    gradient_accumulation_steps: int = field(default=1, metadata={"help": "Forward passes per optimizer step."})
    lora: LoraSettings | None = field(default=None, metadata={"help": "LoRA adapters; null: full fine-tuning."})
    bf16: bool = field(
        default=False,
        metadata={
            "help": "bf16 autocast for forward and backward, fp32 weights and optimizer state: on a GPU, or a CPU with AVX-512 BF16/AMX (refused on a CPU without; train.precision)."
        },
    )
    gradient_checkpointing: bool = field(
        default=False, metadata={"help": "Recompute activations in the backward pass: less memory, slower."}
    )
    logit_chunk_tokens: int | None = field(
        default=None,
        metadata={
            "help": "Positions per tile of the fused LM head in the loss (the full logits never exist; on a CPU "
            "train.logits.TiledLogProbs); smaller: less memory, a CPU tile holding three tile x vocabulary arrays. "
            "null: TRL's 4096."
        },
    )
    seed: int = field(default=0, metadata={"help": "Seed of the trainer (data order, dropout)."})
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
        check_nested(self, "tiny", TinyModelConfig)
        check_text(self, "output_dir")
        check_text(self, "tasks_root")
        check_texts(self, "task_ids")
        check_texts(self, "trajectories")
        check_choices(self, "harnesses", HARNESS_NAMES)
        check_choices(self, "scales", SCALES)
        check_ints(self, "seeds")
        check_number(self, "min_score", at_least=0, at_most=1)
        check_int(self, "per_harness", at_least=1, optional=True)
        check_int(self, "save_steps", at_least=1, optional=True)
        check_int(self, "max_length", at_least=1, optional=True, why=" (null: no limit)")
        check_number(self, "num_train_epochs", above=0)
        check_int(self, "max_steps", at_least=1, also=(-1,), why=" (-1: num_train_epochs decides)")
        check_number(self, "learning_rate", above=0)
        check_lr_scheduler(self)
        check_int(self, "warmup_steps", at_least=0)
        check_number(self, "weight_decay", at_least=0)
        check_int(self, "per_device_train_batch_size", at_least=1)
        check_int(self, "gradient_accumulation_steps", at_least=1)
        check_nested(self, "lora", LoraSettings, optional=True)
        check_bool(self, "bf16")
        check_bool(self, "teacher_reading")
        check_bool(self, "gradient_checkpointing")
        check_int(self, "logit_chunk_tokens", at_least=1, optional=True, why=" (null: TRL's tile)")
        check_int(self, "seed", at_least=0)
        check_choice(self, "report_to", REPORT_TO)
        check_tracker_installed(self)

    def validate_tasks(self) -> None:
        """The task ids exist under tasks_root (when that folder exists): called by run_sft, not at construction."""
        check_task_ids(self, "task_ids", self.tasks_root)


@dataclass
class SFTDatasetReport:
    kept: dict[str, int]  # harness -> trajectories in the dataset
    dropped_low_score: int
    available: dict[str, int]  # harness -> trajectories with R~ >= min_score
    tasks: list[str]


def _field(trajectory: Any, name: str) -> Any:
    return trajectory[name] if isinstance(trajectory, dict) else getattr(trajectory, name)


def chat_row(trajectory: Any) -> dict:
    """A trajectory as one conversational row (messages + tools) in the shape TRL tokenises.

    Every message gets the same keys so the rows form one Arrow schema; tool-call arguments stay JSON text
    (the Qwen3 template writes a string argument as is) and tool schemas travel as JSON text (TRL decodes it).
    """
    messages = []
    for message in _field(trajectory, "messages"):
        calls = None
        if message.get("tool_calls"):
            calls = [
                {
                    "id": c.get("id", ""),
                    "type": "function",
                    "function": {
                        "name": c["function"]["name"],
                        "arguments": c["function"]["arguments"]
                        if isinstance(c["function"]["arguments"], str)
                        else json.dumps(c["function"]["arguments"], ensure_ascii=False),
                    },
                }
                for c in message["tool_calls"]
            ]
        messages.append(
            {
                "role": message["role"],
                "content": message.get("content") or "",
                "reasoning_content": message.get("reasoning_content"),
                "tool_calls": calls,
                "tool_call_id": message.get("tool_call_id"),
                "name": message.get("name"),
            }
        )
    return {"messages": messages, "tools": json.dumps(_field(trajectory, "tools"), ensure_ascii=False)}


def select_sft_trajectories(
    trajectories: Iterable[Any],
    *,
    min_score: float = 0.7,
    per_harness: int | None = None,
    task_ids: list[str] | None = None,
    harnesses: list[str] | None = None,
) -> tuple[list[Any], SFTDatasetReport]:
    """Keep R~ >= min_score; the same number per harness; every task covered under every harness."""
    by_harness: dict[str, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    dropped = 0
    for trajectory in trajectories:
        if _field(trajectory, "score") < min_score:
            dropped += 1
            continue
        by_harness[_field(trajectory, "harness")][_field(trajectory, "task_id")].append(trajectory)
    if not by_harness:
        raise ValueError(f"no trajectory has R~ >= {min_score}; play more teacher episodes or lower min_score")
    for harness in harnesses or []:
        if harness not in by_harness:
            raise ValueError(
                f"harness {harness!r} keeps no trajectory with R~ >= {min_score}: its SFT dataset would be "
                "empty; add teacher episodes for it or drop it from harnesses"
            )
    tasks = sorted(task_ids or {t for per_task in by_harness.values() for t in per_task})
    for harness, per_task in by_harness.items():
        missing = [t for t in tasks if not per_task.get(t)]
        if missing:
            raise ValueError(
                f"harness {harness!r} has no trajectory with R~ >= {min_score} for task(s) {missing}; "
                "every task must be covered: add teacher episodes for them or drop them from task_ids"
            )
    available = {h: sum(len(v) for t, v in per_task.items() if t in tasks) for h, per_task in by_harness.items()}
    count = per_harness or min(available.values())
    if count < len(tasks):
        raise ValueError(f"per_harness={count} is fewer than the {len(tasks)} tasks; every task needs one trajectory")
    if count > min(available.values()):
        raise ValueError(
            f"per_harness={count} but harness {min(available, key=available.__getitem__)!r} has only "
            f"{min(available.values())} trajectories with R~ >= {min_score}"
        )
    selected = []
    for harness in sorted(by_harness):
        queues = {t: list(by_harness[harness][t]) for t in tasks}
        chosen: list[Any] = []
        while len(chosen) < count:  # round-robin over tasks: coverage first, then balance
            for task in tasks:
                if queues[task] and len(chosen) < count:
                    chosen.append(queues[task].pop(0))
        selected += chosen
    report = SFTDatasetReport({h: count for h in by_harness}, dropped, available, tasks)
    return selected, report


def build_sft_dataset(
    trajectories: Iterable[Any], chat: Any = None, *, max_length: int | None = None, **selection: Any
):
    """A `datasets.Dataset` and the selection report. With a `ChatFormat`, rows are tokenised here (input_ids and
    assistant_masks: exactly the spans the model generates turn by turn in rollouts); without, conversational rows."""
    from datasets import Dataset

    selected, report = select_sft_trajectories(trajectories, **selection)
    if chat is None:
        return Dataset.from_list([chat_row(t) for t in selected]), report
    rows = []
    for trajectory in selected:
        row = chat_row(trajectory)
        ids, mask = chat.tokenize_conversation(row["messages"], json.loads(row["tools"]))
        if max_length is not None and len(ids) > max_length:
            raise ValueError(
                f"SFT max_length={max_length} is shorter than the {_field(trajectory, 'harness')} teacher "
                f"trajectory of {_field(trajectory, 'task_id')} (seed {_field(trajectory, 'seed')}), which "
                f"needs {len(ids)} tokens: cutting it would drop its claim_done. Raise max_length to at "
                f"least {len(ids)} or leave that task out"
            )
        rows.append({"input_ids": ids, "assistant_masks": mask})
    return Dataset.from_list(rows), report


def teacher_trajectories(config: SFTRunConfig, tasks: list[Any], save_to: Path | None = None) -> list[Any]:
    """Play the OracleTeacher on every (task, harness, scale, seed) of the config."""
    from progagent_lib.harness.episode import run_episode
    from progagent_lib.harness.trajectory import write_jsonl
    from progagent_lib.policy import OracleTeacher

    trajectories = []
    for harness in config.harnesses:
        teacher = OracleTeacher(harness, reading=config.teacher_reading)
        for task in tasks:
            for scale in config.scales:
                for seed in config.seeds:
                    trajectory = run_episode(task, scale, seed, harness, teacher)
                    trajectories.append(trajectory)
                    if save_to is not None:
                        write_jsonl(trajectory, save_to)
    return trajectories


def load_trajectories(paths: list[str]) -> list[Any]:
    from progagent_lib.harness.trajectory import read_jsonl

    return [t for path in paths for t in read_jsonl(path)]


def sft_args(config: SFTRunConfig):
    import torch
    from trl import SFTConfig

    on_cpu = not torch.cuda.is_available()
    return SFTConfig(
        # Rows come tokenised with their assistant masks (ChatFormat), so TRL neither renders nor truncates them.
        output_dir=config.output_dir,
        assistant_only_loss=False,
        max_length=None,
        num_train_epochs=config.num_train_epochs,
        max_steps=config.max_steps,
        learning_rate=config.learning_rate,
        lr_scheduler_type=config.lr_scheduler_type,
        warmup_steps=config.warmup_steps,
        weight_decay=config.weight_decay,
        per_device_train_batch_size=config.per_device_train_batch_size,
        gradient_accumulation_steps=config.gradient_accumulation_steps,
        logging_steps=1,
        save_strategy="steps" if config.save_steps else "no",
        save_steps=config.save_steps or 500,
        save_only_model=True,
        # The bar is train.monitoring's (a widget in notebooks), so transformers' own is off.
        report_to=config.report_to,
        project="progagent",
        disable_tqdm=True,
        seed=config.seed,
        use_cpu=on_cpu,
        bf16=check_bf16(config.bf16, "SFTRunConfig.bf16"),
        # TRL turns checkpointing on by default (under its old name); on CPU with a tiny model it only costs time.
        activation_checkpointing=config.gradient_checkpointing,
        dataset_num_proc=None,
    )


def run_sft(config: SFTRunConfig, trajectories: list[Any] | None = None, *, preselected: bool = False) -> dict:
    """Build (or load) the model, build the dataset, train, and save model + tokenizer to `<output_dir>/final`.

    `trajectories` (else the config's files, else the teacher played now) are selected by R~ and balanced over
    harnesses and tasks, unless `preselected` (the pipeline balances all harnesses first, then trains one per harness).
    """
    from trl import SFTTrainer

    from ..harness.chat_format import ChatFormat

    output_dir = Path(config.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    if is_main():
        (output_dir / "sft_config.json").write_text(json.dumps(asdict(config), indent=2))
    config.validate_tasks()
    check_bf16(config.bf16, "SFTRunConfig.bf16")  # before any compute
    tasks = select_tasks(config.tasks_root, config.task_ids)
    model, tokenizer = initial_model(config, output_dir)
    chat = ChatFormat(tokenizer, model_name=config.model)
    if trajectories is None and config.trajectories:
        trajectories = load_trajectories(config.trajectories)
    elif trajectories is None:  # played once, on the main rank, and written once; every rank trains on them
        trajectories = on_main(_play_teacher, config, tasks, output_dir / "teacher.jsonl")
    wanted = {t.id for t in tasks}
    trajectories = [
        t for t in trajectories if _field(t, "task_id") in wanted and _field(t, "harness") in config.harnesses
    ]
    # Before any compute: the template renders a teacher episode the same whole and turn by turn.
    for harness in config.harnesses:
        sample = next((t for t in trajectories if _field(t, "harness") == harness), None)
        if sample is not None:
            chat.check_conversation(_field(sample, "messages"), _field(sample, "tools"))
    selection = {
        "min_score": config.min_score,
        "task_ids": sorted(wanted),
        "harnesses": config.harnesses,
        "per_harness": None if preselected else config.per_harness,
    }
    dataset, report = build_sft_dataset(trajectories, chat, max_length=config.max_length, **selection)
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
    trainer = SFTTrainer(
        model=model,
        args=sft_args(config),
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=[training_progress("SFT")],
    )
    with lm_head_tile(config.logit_chunk_tokens):  # every forward and backward of the run
        result = trainer.train()
    # The whole weights, gathered from every rank (ZeRO-3, FSDP), LoRA merged on them; every rank waits for the folder.
    final = save_final(trainer.model_wrapped, tokenizer, output_dir / "final", accelerator=trainer.accelerator)
    logs = [entry for entry in trainer.state.log_history if "loss" in entry]
    if is_main():
        (output_dir / "log_history.jsonl").write_text("".join(json.dumps(entry) + "\n" for entry in logs))
    losses = [entry["loss"] for entry in logs]
    summary = {
        "final_model": str(final),
        "dataset": asdict(report),
        "steps": trainer.state.global_step,
        "first_loss": losses[0] if losses else None,
        "last_loss": losses[-1] if losses else None,
        "train_seconds": result.metrics.get("train_runtime"),
        "chat_format": chat.describe(),
        "tokens": sum(len(r) for r in dataset["input_ids"]),
        "trained_tokens": sum(sum(m) for m in dataset["assistant_masks"]),
    }
    if is_main():
        (output_dir / "sft_summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def initial_model(config: SFTRunConfig, output_dir: Path) -> tuple[Any, Any]:
    """(model, tokenizer) SFT starts from, its weights fp32 masters (train.precision). The tiny model is built and
    saved to `<output_dir>/initial` by the main rank and loaded from there by the others: one initialisation and one
    trained tokenizer for every rank."""
    if config.model != "tiny":
        return load_model(config.model, chat_template=config.chat_template, dtype=master_weights_dtype())
    initial = output_dir / "initial"
    with main_first():
        if is_main():
            built = build_tiny_model(config.tasks_root, config.tiny, save_to=initial)
        else:
            built = load_model(initial, dtype=master_weights_dtype())
    return built


def _play_teacher(config: SFTRunConfig, tasks: list[Any], path: Path) -> list[Any]:
    path.unlink(missing_ok=True)
    return teacher_trajectories(config, tasks, save_to=path)
