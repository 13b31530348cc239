"""Pass rate of a checkpoint under any harness on held-out seeds (the cross-harness table)."""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .gspo import select_tasks
from .rollout import EpisodeSpec, HFTurnGenerator, RolloutLimits, VLLMServerTurnGenerator, run_token_episodes


@dataclass
class EvalConfig:
    model: str = "runs/gspo/final"
    output_dir: str = "runs/eval"
    tasks_root: str = "tasks"
    task_ids: list[str] = field(default_factory=list)
    harnesses: list[str] = field(default_factory=lambda: ["dtc", "ptc", "hybrid"])
    scales: list[str] = field(default_factory=lambda: ["v0"])
    seeds: list[int] = field(default_factory=lambda: [1000, 1001])   # held out: training uses low seeds
    samples: int = 1                        # episodes per (task, scale, seed, harness)
    batch_size: int = 8                     # episodes played in lockstep (one generate call per turn)
    temperature: float = 0.0                # 0: greedy
    max_turns: int = 8
    max_new_tokens: int = 256
    max_completion_tokens: int = 2048
    max_observation_chars: int = 4000
    max_tool_calls: int = 100
    error_mode: str = "is_error"
    vllm_server_base_url: str | None = None   # gpu-paper: a `trl vllm-serve` server holding `model` generates
    seed: int = 0


@dataclass
class EvalRecord:
    task_id: str
    harness: str
    scale: str
    seed: int
    sample: int
    reward: float
    score: float
    end_reason: str
    turns: int
    tool_calls: int
    tool_output_tokens: int


@dataclass
class PassRateRow:
    harness: str
    episodes: int
    pass_rate: float
    mean_score: float
    claim_done_rate: float


def pass_rate_table(records: list[EvalRecord]) -> list[PassRateRow]:
    by_harness: dict[str, list[EvalRecord]] = defaultdict(list)
    for record in records:
        by_harness[record.harness].append(record)
    return [PassRateRow(h, len(rs), sum(r.reward for r in rs) / len(rs), sum(r.score for r in rs) / len(rs),
                        sum(r.end_reason == "claim_done" for r in rs) / len(rs))
            for h, rs in sorted(by_harness.items())]


def format_table(rows: list[PassRateRow]) -> str:
    lines = ["| harness | episodes | pass rate | mean R~ | claim_done rate |", "|---|---|---|---|---|"]
    lines += [f"| {r.harness} | {r.episodes} | {r.pass_rate:.3f} | {r.mean_score:.3f} | {r.claim_done_rate:.3f} |" for r in rows]
    return "\n".join(lines)


def evaluate(config: EvalConfig, model: Any = None, tokenizer: Any = None) -> tuple[list[EvalRecord], list[PassRateRow]]:
    """Play every (harness, task, scale, seed, sample) with the checkpoint; write records and the table."""
    import torch

    from .models import load_model

    torch.manual_seed(config.seed)
    greedy = config.temperature <= 0
    if config.vllm_server_base_url:
        from transformers import AutoTokenizer
        from trl.generation.vllm_client import VLLMClient

        tokenizer = tokenizer or AutoTokenizer.from_pretrained(config.model)
        generate = VLLMServerTurnGenerator(VLLMClient(base_url=config.vllm_server_base_url), temperature=config.temperature)
    else:
        if model is None:
            model, tokenizer = load_model(config.model)
        generate = HFTurnGenerator(model, tokenizer, temperature=config.temperature if not greedy else 1.0,
                                   do_sample=not greedy)
    limits = RolloutLimits(max_turns=config.max_turns, max_new_tokens=config.max_new_tokens,
                           max_completion_tokens=config.max_completion_tokens,
                           max_observation_chars=config.max_observation_chars, max_tool_calls=config.max_tool_calls,
                           temperature=config.temperature)
    records = []
    specs = [EpisodeSpec(task, scale, seed) for task in select_tasks(config.tasks_root, config.task_ids)
             for scale in config.scales for seed in config.seeds for _ in range(config.samples)]
    for harness in config.harnesses:
        for start in range(0, len(specs), config.batch_size):
            batch = specs[start:start + config.batch_size]
            episodes = run_token_episodes(batch, harness, tokenizer, generate, limits, error_mode=config.error_mode)
            for index, (spec, e) in enumerate(zip(batch, episodes), start):
                records.append(EvalRecord(spec.task.id, harness, spec.scale, spec.seed, index % config.samples, e.reward,
                                          e.score, e.end_reason, e.turns, e.tool_calls, e.tool_output_tokens))
    table = pass_rate_table(records)
    output_dir = Path(config.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / "episodes.jsonl").write_text("".join(json.dumps(asdict(r)) + "\n" for r in records))
    (output_dir / "pass_rates.json").write_text(json.dumps([asdict(r) for r in table], indent=2))
    (output_dir / "pass_rates.md").write_text(format_table(table) + "\n")
    return records, table
