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

from .gspo import LoraSettings, select_tasks
from .models import TinyModelConfig, build_tiny_model, load_model, save_model


@dataclass
class SFTRunConfig:
    """Everything an SFT run needs."""

    model: str = "tiny"                      # "tiny": build the cpu-smoke model; else a local folder or hub id
    tiny: TinyModelConfig = field(default_factory=TinyModelConfig)
    output_dir: str = "runs/sft"
    tasks_root: str = "tasks"
    task_ids: list[str] = field(default_factory=list)      # empty: every task under tasks_root
    trajectories: list[str] = field(default_factory=list)  # JSON-lines files; empty: play the OracleTeacher now
    harnesses: list[str] = field(default_factory=lambda: ["dtc", "ptc", "hybrid"])
    scales: list[str] = field(default_factory=lambda: ["v0"])   # for teacher trajectories played here
    seeds: list[int] = field(default_factory=lambda: [0])       # for teacher trajectories played here
    min_score: float = 0.7
    per_harness: int | None = None           # trajectories per harness; None: as many as the smallest harness has
    max_length: int | None = 4096            # tokens per trajectory (longer ones are cut at the end)
    num_train_epochs: float = 1.0
    max_steps: int = -1
    learning_rate: float = 1e-5
    weight_decay: float = 0.0
    per_device_train_batch_size: int = 1
    gradient_accumulation_steps: int = 1
    lora: LoraSettings | None = None
    bf16: bool = False
    gradient_checkpointing: bool = False
    seed: int = 0


@dataclass
class SFTDatasetReport:
    kept: dict[str, int]          # harness -> trajectories in the dataset
    dropped_low_score: int
    available: dict[str, int]     # harness -> trajectories with R~ >= min_score
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
            calls = [{"id": c.get("id", ""), "type": "function",
                      "function": {"name": c["function"]["name"],
                                   "arguments": c["function"]["arguments"] if isinstance(c["function"]["arguments"], str)
                                   else json.dumps(c["function"]["arguments"], ensure_ascii=False)}}
                     for c in message["tool_calls"]]
        messages.append({"role": message["role"], "content": message.get("content") or "",
                         "reasoning_content": message.get("reasoning_content"), "tool_calls": calls,
                         "tool_call_id": message.get("tool_call_id"), "name": message.get("name")})
    return {"messages": messages, "tools": json.dumps(_field(trajectory, "tools"), ensure_ascii=False)}


def select_sft_trajectories(trajectories: Iterable[Any], *, min_score: float = 0.7, per_harness: int | None = None,
                            task_ids: list[str] | None = None) -> tuple[list[Any], SFTDatasetReport]:
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
    tasks = sorted(task_ids or {t for per_task in by_harness.values() for t in per_task})
    for harness, per_task in by_harness.items():
        missing = [t for t in tasks if not per_task.get(t)]
        if missing:
            raise ValueError(f"harness {harness!r} has no trajectory with R~ >= {min_score} for task(s) {missing}; "
                             "every task must be covered: add teacher episodes for them or drop them from task_ids")
    available = {h: sum(len(v) for t, v in per_task.items() if t in tasks) for h, per_task in by_harness.items()}
    count = per_harness or min(available.values())
    if count < len(tasks):
        raise ValueError(f"per_harness={count} is fewer than the {len(tasks)} tasks; every task needs one trajectory")
    if count > min(available.values()):
        raise ValueError(f"per_harness={count} but harness {min(available, key=available.get)!r} has only "
                         f"{min(available.values())} trajectories with R~ >= {min_score}")
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


def build_sft_dataset(trajectories: Iterable[Any], **selection: Any):
    """A `datasets.Dataset` of conversational rows, and the selection report."""
    from datasets import Dataset

    selected, report = select_sft_trajectories(trajectories, **selection)
    return Dataset.from_list([chat_row(t) for t in selected]), report


def teacher_trajectories(config: SFTRunConfig, tasks: list[Any], save_to: Path | None = None) -> list[Any]:
    """Play the OracleTeacher on every (task, harness, scale, seed) of the config."""
    from progagent_lib.harness.episode import run_episode
    from progagent_lib.harness.trajectory import write_jsonl
    from progagent_lib.policy import OracleTeacher

    trajectories = []
    for harness in config.harnesses:
        teacher = OracleTeacher(harness)
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
        output_dir=config.output_dir, assistant_only_loss=True, max_length=config.max_length,
        num_train_epochs=config.num_train_epochs, max_steps=config.max_steps, learning_rate=config.learning_rate,
        weight_decay=config.weight_decay, per_device_train_batch_size=config.per_device_train_batch_size,
        gradient_accumulation_steps=config.gradient_accumulation_steps, logging_steps=1, save_strategy="no",
        report_to="none", seed=config.seed, disable_tqdm=True, use_cpu=on_cpu, bf16=config.bf16 and not on_cpu,
        # TRL turns checkpointing on by default (under its old name); on CPU with a tiny model it only costs time.
        activation_checkpointing=config.gradient_checkpointing, dataset_num_proc=None,
    )


def run_sft(config: SFTRunConfig) -> dict:
    """Build (or load) the model, build the dataset, train, and save model + tokenizer to `<output_dir>/final`."""
    from trl import SFTTrainer

    output_dir = Path(config.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / "sft_config.json").write_text(json.dumps(asdict(config), indent=2))
    tasks = select_tasks(config.tasks_root, config.task_ids)
    if config.model == "tiny":
        model, tokenizer = build_tiny_model(config.tasks_root, config.tiny, save_to=output_dir / "initial")
    else:
        model, tokenizer = load_model(config.model)
    if config.trajectories:
        trajectories = load_trajectories(config.trajectories)
    else:
        teacher_file = output_dir / "teacher.jsonl"
        teacher_file.unlink(missing_ok=True)
        trajectories = teacher_trajectories(config, tasks, save_to=teacher_file)
    wanted = {t.id for t in tasks}
    trajectories = [t for t in trajectories if _field(t, "task_id") in wanted]
    dataset, report = build_sft_dataset(trajectories, min_score=config.min_score, per_harness=config.per_harness,
                                        task_ids=sorted(wanted))
    peft_config = None
    if config.lora is not None:
        from peft import LoraConfig

        peft_config = LoraConfig(r=config.lora.r, lora_alpha=config.lora.alpha, lora_dropout=config.lora.dropout,
                                 target_modules=config.lora.target_modules, task_type="CAUSAL_LM")
    trainer = SFTTrainer(model=model, args=sft_args(config), train_dataset=dataset, processing_class=tokenizer,
                         peft_config=peft_config)
    if len(trainer.train_dataset) == 0:
        raise ValueError(f"max_length={config.max_length} cuts every trajectory before its first assistant token "
                         "(the system prompt and tool schemas come first): raise max_length")
    result = trainer.train()
    final = output_dir / "final"
    trained = trainer.model.merge_and_unload() if config.lora is not None else trainer.model
    save_model(trained, tokenizer, final)
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    summary = {"final_model": str(final), "dataset": asdict(report), "steps": trainer.state.global_step,
               "first_loss": losses[0] if losses else None, "last_loss": losses[-1] if losses else None,
               "train_seconds": result.metrics.get("train_runtime")}
    (output_dir / "sft_summary.json").write_text(json.dumps(summary, indent=2))
    return summary
