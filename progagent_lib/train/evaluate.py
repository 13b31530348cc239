"""A checkpoint's episodes on held-out seeds, under any harness: trajectories and the pass-rate table.

Evaluation plays the same `Episode` as `progagent run` through the token adapter, and writes
`trajectories.jsonl` in `progagent run`'s format (readable by `progagent_lib.harness.read_jsonl`), so the
summary tables, the HTML view and the program-structure analysis read trained models' episodes too.
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..harness.trajectory import Trajectory, write_jsonl
from .gspo import limits_of, select_tasks
from .rollout import EpisodeSpec, HFTurnGenerator, VLLMServerTurnGenerator, run_token_episodes

TRAJECTORIES_FILE = "trajectories.jsonl"


@dataclass
class EvalConfig:
    model: str = "runs/gspo/final"          # a folder, a hub id or a registered name
    stage: str = ""                         # base | sft | gspo: names the policy "hf:<model>@<stage>"
    chat_template: str | None = None
    output_dir: str = "runs/eval"
    tasks_root: str = "tasks"
    task_ids: list[str] = field(default_factory=list)
    harnesses: list[str] = field(default_factory=lambda: ["dtc", "ptc", "hybrid"])
    scales: list[str] = field(default_factory=lambda: ["v0"])
    seeds: list[int] = field(default_factory=lambda: [1000, 1001])   # held out: training uses low seeds
    # Explicit [task_id, scale, seed] instances (the pipeline's held-out splits); when given, they replace the
    # task_ids x scales x seeds product.
    instances: list[list] = field(default_factory=list)
    samples: int = 1                        # episodes per (task, scale, seed, harness)
    batch_size: int = 8                     # episodes played in lockstep (one generate call per turn)
    temperature: float = 0.0                # 0: greedy
    max_turns: int = 8
    max_new_tokens: int = 256
    max_context_tokens: int = 8192
    max_observation_chars: int = 4000
    max_tool_calls: int = 100
    error_mode: str = "is_error"
    vllm_server_base_url: str | None = None   # gpu-paper: a `trl vllm-serve` server holding `model` generates
    engine_url: str | None = None            # a `progagent engine serve` server (http://127.0.0.1:P/v1) generates
    engine_model: str | None = None          # its served name (default: the model's short name)
    engine_load_weights: bool = True         # reload the server's weights from `model` first (a local folder)
    seed: int = 0


@dataclass
class PassRateRow:
    harness: str
    scale: str
    episodes: int
    errored: int          # infrastructure errors: not in the pass rate
    pass_rate: float
    mean_score: float
    claim_done_rate: float


def pass_rate_table(trajectories: list[Trajectory]) -> list[PassRateRow]:
    """Pass rate and mean R~ per (harness, scale), over the episodes that did not end by an infrastructure error."""
    groups: dict[tuple[str, str], list[Trajectory]] = defaultdict(list)
    for t in trajectories:
        groups[(t.harness, t.scale)].append(t)
    rows = []
    for (harness, scale), ts in sorted(groups.items()):
        scored = [t for t in ts if not t.errored]
        n = max(len(scored), 1)
        rows.append(PassRateRow(harness, scale, len(ts), len(ts) - len(scored), sum(t.reward for t in scored) / n,
                                sum(t.score for t in scored) / n, sum(t.end_reason == "claim_done" for t in scored) / n))
    return rows


def format_table(rows: list[PassRateRow]) -> str:
    lines = ["| harness | scale | episodes | errored | pass rate | mean R~ | claim_done rate |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {r.harness} | {r.scale} | {r.episodes} | {r.errored} | {r.pass_rate:.3f} | {r.mean_score:.3f} | "
              f"{r.claim_done_rate:.3f} |" for r in rows]
    return "\n".join(lines)


def policy_label(config: EvalConfig) -> str:
    return f"hf:{config.model}" + (f"@{config.stage}" if config.stage else "")


def evaluate(config: EvalConfig, model: Any = None, tokenizer: Any = None) -> tuple[list[Trajectory], list[PassRateRow]]:
    """Play every (harness, task, scale, seed, sample) with the checkpoint; write trajectories and the table."""
    import torch

    from ..harness.chat_format import ChatFormat
    from .models import load_model

    torch.manual_seed(config.seed)
    greedy = config.temperature <= 0
    if config.engine_url:
        from transformers import AutoTokenizer

        from ..engine.generator import EngineTurnGenerator
        from .models import resolve_model_source

        source = Path(resolve_model_source(config.model, config.chat_template))
        if config.engine_load_weights and any(source.glob("*.safetensors")):
            from ..engine.weights import reload_weights

            reload_weights(config.engine_url, source)   # the server generates with the evaluated model's weights
        tokenizer = tokenizer or AutoTokenizer.from_pretrained(str(source))
        chat = ChatFormat(tokenizer, model_name=config.model)
        generate = EngineTurnGenerator(config.engine_url, config.engine_model or Path(str(config.model)).name,
                                       chat.end_of_turn, temperature=max(config.temperature, 0.0), seed=config.seed)
    elif config.vllm_server_base_url:
        from transformers import AutoTokenizer
        from trl.generation.vllm_client import VLLMClient

        tokenizer = tokenizer or AutoTokenizer.from_pretrained(config.model)
        chat = ChatFormat(tokenizer, model_name=config.model)
        generate = VLLMServerTurnGenerator(VLLMClient(base_url=config.vllm_server_base_url), temperature=config.temperature)
    else:
        if model is None:
            model, tokenizer = load_model(config.model, chat_template=config.chat_template)
        chat = ChatFormat(tokenizer, model_name=config.model)
        generate = HFTurnGenerator(model, chat, temperature=config.temperature if not greedy else 1.0, do_sample=not greedy)
    limits = limits_of(config)
    if config.instances:
        tasks = select_tasks(config.tasks_root, list(dict.fromkeys(str(i[0]) for i in config.instances)))
        by_id = {t.id: t for t in tasks}
        specs = [EpisodeSpec(by_id[str(task_id)], str(scale), int(seed), sample)
                 for task_id, scale, seed in config.instances for sample in range(config.samples)]
    else:
        tasks = select_tasks(config.tasks_root, config.task_ids)
        specs = [EpisodeSpec(task, scale, seed, sample) for task in tasks
                 for scale in config.scales for seed in config.seeds for sample in range(config.samples)]
    from .feasibility import check_template_on_teacher

    for harness in config.harnesses:  # before any generation: the template renders a teacher episode consistently
        check_template_on_teacher(chat, tasks[0], harness)
    output_dir = Path(config.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    out_file = output_dir / TRAJECTORIES_FILE
    out_file.unlink(missing_ok=True)
    trajectories: list[Trajectory] = []
    from tqdm.auto import tqdm

    with tqdm(total=len(specs) * len(config.harnesses), desc=f"eval {config.stage or config.model}", leave=False) as bar:
        for harness in config.harnesses:
            for start in range(0, len(specs), config.batch_size):
                batch = specs[start:start + config.batch_size]
                episodes = run_token_episodes(batch, harness, chat, generate, limits, error_mode=config.error_mode,
                                              policy_name=policy_label(config))
                done = [e.trajectory for e in episodes]
                write_jsonl(done, out_file)
                trajectories += done
                bar.update(len(batch))
    table = pass_rate_table(trajectories)
    (output_dir / "pass_rates.json").write_text(json.dumps([asdict(r) for r in table], indent=2))
    (output_dir / "pass_rates.md").write_text(format_table(table) + "\n")
    (output_dir / "chat_format.json").write_text(json.dumps(chat.describe(), indent=2))
    return trajectories, table
