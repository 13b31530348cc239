"""A checkpoint's episodes on held-out seeds, under any harness: trajectories and the pass-rate table.

Evaluation plays the same `Episode` as `progagent run` through the token adapter (`evaluate`), or one turn at a time
with any message-level policy (`evaluate_policy`: the oracle teacher, a baseline, an endpoint), and writes
`trajectories.jsonl` in `progagent run`'s format (readable by `progagent_lib.harness.read_jsonl`), so the
summary tables, the HTML view and the program-structure analysis read trained models' episodes too.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from ..harness.spec import PAPER_HARNESSES
from ..harness.trajectory import Trajectory, write_jsonl
from ..runtime.error_modes import ERROR_MODES
from ..task.scales import SCALES
from ..config import (
    ConfigError,
    check_bool,
    check_budgets,
    check_choice,
    check_choices,
    check_engine,
    check_int,
    check_ints,
    check_number,
    check_task_ids,
    check_text,
    check_texts,
    check_url,
    config_error,
)
from .common import HARNESS_NAMES, TRAJECTORIES_FILE, limits_of, model_positions, select_tasks
from .env_hosts import HELP as ENV_HOST_HELP, check_env_hosts, episode_host
from ..generation import generator_config, make_generator
from .ranks import on_main
from .rollout import RolloutSpec, run_token_episodes


@dataclass
class EvalConfig:
    """A checkpoint's evaluation: which episodes, under which budgets, generated where."""

    model: str = field(
        default="runs/gspo/final", metadata={"help": "The model: a folder, a hub id or a registered name."}
    )
    stage: str = field(
        default="",
        metadata={
            "help": "A label (base, sft, gspo, sft-ptc, ...) naming the policy 'hf:<model>@<stage>'; empty: no label."
        },
    )
    chat_template: str | None = field(
        default=None, metadata={"help": "None: the model's own (or its registered choice); 'qwen3' or a .jinja path."}
    )
    output_dir: str = field(
        default="runs/eval", metadata={"help": "trajectories.jsonl, pass_rates.json/.md and chat_format.json."}
    )
    tasks_root: str = field(default="tasks", metadata={"help": "The task pool's folder."})
    task_ids: list[str] = field(
        default_factory=list,
        metadata={"help": "Evaluated tasks by id (domain/name); empty: every task under tasks_root."},
    )
    harnesses: list[str] = field(
        default_factory=lambda: list(PAPER_HARNESSES),
        metadata={"help": "Harnesses every episode is played under: dtc, ptc, hybrid (or any registered one)."},
    )
    scales: list[str] = field(default_factory=lambda: ["v0"], metadata={"help": "Scales (v0..v3) evaluated at."})
    seeds: list[int] = field(
        default_factory=lambda: [1000, 1001], metadata={"help": "Held-out instance seeds (training uses low seeds)."}
    )
    # The pipeline's held-out splits name their instances one by one.
    instances: list[list] = field(
        default_factory=list,
        metadata={
            "help": "Explicit [task_id, scale, seed] instances; when given, they replace task_ids x scales x seeds."
        },
    )
    samples: int = field(default=1, metadata={"help": "Episodes per (task, scale, seed, harness)."})
    first_sample: int = field(
        default=0,
        metadata={
            "help": "The first sample's number (samples first_sample .. first_sample + samples - 1). On the engine a "
            "sampled turn's random numbers are named by its (task, scale, seed, sample, turn): two models sampled "
            "with the same numbers draw the same random numbers, and other numbers draw fresh ones."
        },
    )
    batch_size: int = field(
        default=8,
        metadata={
            "help": "Episodes played at once: on the engine each asks for its next turn as soon as its last one was "
            "played; with any other generator in lockstep (one generate call per turn)."
        },
    )
    temperature: float = field(default=0.0, metadata={"help": "Sampling temperature (>= 0); 0: greedy."})
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
        default=100, metadata={"help": "Tool calls per episode, a program counting once (null: no limit)."}
    )
    # Where the episodes live (train.env_hosts): on environment servers, or here with a bounded number of kernels.
    env_servers: list[str] = field(default_factory=list, metadata={"help": ENV_HOST_HELP["env_servers"]})
    env_server_token_file: str | None = field(default=None, metadata={"help": ENV_HOST_HELP["env_server_token_file"]})
    max_local_kernels: int | None = field(default=None, metadata={"help": ENV_HOST_HELP["max_local_kernels"]})
    error_mode: str = field(
        default="is_error", metadata={"help": "How a failing tool shows: is_error (the paper's) | off | detect."}
    )
    vllm_server_base_url: str | None = field(
        default=None,
        metadata={"help": "gpu-paper: a `trl vllm-serve` server holding `model` generates (not with engine_url)."},
    )
    engine_url: str | None = field(
        default=None,
        metadata={
            "help": "A `progagent engine serve` server (http://127.0.0.1:P/v1) generates; None: transformers, here."
        },
    )
    engine_model: str | None = field(
        default=None,
        metadata={"help": "The engine's served name (default: the model's short name); only with engine_url."},
    )
    engine_load_weights: bool = field(
        default=True,
        metadata={
            "help": "Load `model`'s weights (a local folder) into the server before generating: the engine reloads them "
            "from the folder; a trl vllm-serve server gets them through TRL's weight sync (needs a GPU)."
        },
    )
    seed: int = field(default=0, metadata={"help": "Seed of the sampler."})

    def __post_init__(self) -> None:
        check_text(self, "model")
        check_text(self, "stage", empty=True)
        check_text(self, "chat_template", optional=True)
        check_text(self, "output_dir")
        check_text(self, "tasks_root")
        check_texts(self, "task_ids")
        check_choices(self, "harnesses", HARNESS_NAMES)
        check_choices(self, "scales", SCALES)
        check_ints(self, "seeds", empty=bool(self.instances))
        if not isinstance(self.instances, (list, tuple)):
            raise config_error(self, "instances", "must be a list of [task_id, scale, seed] instances")
        for instance in self.instances:
            if not (
                isinstance(instance, (list, tuple))
                and len(instance) == 3
                and isinstance(instance[0], str)
                and instance[1] in SCALES
                and isinstance(instance[2], int)
                and not isinstance(instance[2], bool)
                and instance[2] >= 0
            ):
                raise ConfigError(
                    f"EvalConfig.instances: {instance!r} is not an instance; each must be [task_id, "
                    f"scale, seed] with scale one of {', '.join(SCALES)} and seed an integer >= 0"
                )
        check_int(self, "samples", at_least=1)
        check_int(self, "first_sample", at_least=0)
        check_int(self, "batch_size", at_least=1)
        check_number(self, "temperature", at_least=0)
        check_budgets(self)
        check_env_hosts(self)
        check_choice(self, "error_mode", ERROR_MODES)
        check_url(self, "vllm_server_base_url")
        check_engine(self)
        if self.engine_url and self.vllm_server_base_url:
            raise config_error(
                self,
                "vllm_server_base_url",
                f"and engine_url={self.engine_url!r} name two generators; "
                "keep one (the engine: a `progagent engine serve` server)",
            )
        check_bool(self, "engine_load_weights")
        check_int(self, "seed", at_least=0)

    def validate_tasks(self) -> None:
        """The task ids (and the instances' tasks) exist under tasks_root (when that folder exists): called by
        evaluate, not at construction."""
        check_task_ids(self, "task_ids", self.tasks_root)
        check_task_ids(self, "instances", self.tasks_root, [str(i[0]) for i in self.instances])


@dataclass
class PassRateRow:
    harness: str
    scale: str
    episodes: int
    errored: int  # infrastructure errors: not in the pass rate
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
        rows.append(
            PassRateRow(
                harness,
                scale,
                len(ts),
                len(ts) - len(scored),
                sum(t.reward for t in scored) / n,
                sum(t.score for t in scored) / n,
                sum(t.end_reason == "claim_done" for t in scored) / n,
            )
        )
    return rows


def format_table(rows: list[PassRateRow]) -> str:
    lines = [
        "| harness | scale | episodes | errored | pass rate | mean R~ | claim_done rate |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.harness} | {r.scale} | {r.episodes} | {r.errored} | {r.pass_rate:.3f} | {r.mean_score:.3f} | "
        f"{r.claim_done_rate:.3f} |"
        for r in rows
    ]
    return "\n".join(lines)


def policy_label(config: EvalConfig) -> str:
    return f"hf:{config.model}" + (f"@{config.stage}" if config.stage else "")


def checkpoint_generator(config: EvalConfig, model: Any = None, tokenizer: Any = None) -> tuple[Any, Any, Any]:
    """(generator, chat format, model config) of `config.model` as `config` generates: in this process (the model
    loaded unless given), or by the engine (its weights loaded into the engine first, unless engine_load_weights is
    off) or a `trl vllm-serve` server (the checkpoint pushed into it first, which needs a GPU: devices.py), where
    only the tokenizer is loaded here. In this process the model goes to this rank's GPU where there is one."""
    from ..harness.chat_format import ChatFormat
    from ..generation.sources import load_model
    from .devices import to_rank_device

    choice = generator_config(
        model=config.model,
        temperature=max(config.temperature, 0.0),
        seed=config.seed,
        engine_url=config.engine_url,
        engine_model=config.engine_model,
        vllm_server_base_url=config.vllm_server_base_url,
    )
    if choice.backend == "transformers":
        if model is None:
            model, tokenizer = load_model(config.model, chat_template=config.chat_template)
        model = to_rank_device(model)  # this rank's GPU where there is one (devices.py)
        model_config = model.config
    else:  # a server generates: only the tokenizer is needed here
        from transformers import AutoConfig, AutoTokenizer

        from ..generation.sources import resolve_model_source

        source = Path(resolve_model_source(config.model, config.chat_template))
        if config.engine_load_weights:
            _load_into_server(config, choice.backend, source)
        tokenizer = tokenizer or AutoTokenizer.from_pretrained(str(source))
        model_config = AutoConfig.from_pretrained(str(source))
    chat = ChatFormat(tokenizer, model_name=config.model)
    return make_generator(choice, chat, model=model), chat, model_config


def _load_into_server(config: EvalConfig, backend: str, source: Path) -> None:
    """The checkpoint's weights into the server that generates for `config` (the engine, or a `trl vllm-serve`
    server), where it is a folder of weights; nothing for an in-process model or a model named on the server."""
    from .devices import push_checkpoint_to_trl_server

    if not any(source.glob("*.safetensors")):
        return
    if backend == "engine":
        from ..engine.weights import reload_weights

        assert config.engine_url is not None  # the engine backend is chosen by engine_url
        reload_weights(config.engine_url, source)  # the server generates with the evaluated model's weights
    elif backend == "trl-vllm":
        assert config.vllm_server_base_url is not None  # here trl-vllm is chosen by vllm_server_base_url
        push_checkpoint_to_trl_server(config.vllm_server_base_url, str(source), config.chat_template)


def checkpoint_policy(config: EvalConfig) -> Any:
    """`config.model` as a message-level policy (`ChatPolicy` over `checkpoint_generator`), for front ends that play
    episodes one turn at a time (`run_episode`, the external benchmarks): turns bounded by `config.max_new_tokens`,
    the context by the model's positions (a longer one ends the episode as max_context_tokens)."""
    from ..policy.chat import ChatPolicy

    generator, chat, model_config = checkpoint_generator(config)
    return ChatPolicy(
        generator,
        chat,
        max_new_tokens=config.max_new_tokens or 1024,
        name=policy_label(config),
        max_positions=model_positions(model_config),
    )


def evaluate(
    config: EvalConfig, model: Any = None, tokenizer: Any = None
) -> tuple[list[Trajectory], list[PassRateRow]]:
    """Play every (harness, task, scale, seed, sample) with the checkpoint; write trajectories and the table. Under
    several ranks, played and written once, by the main rank; every rank gets the trajectories and the table."""
    return on_main(_evaluate, config, model, tokenizer)


def _evaluate(config: EvalConfig, model: Any, tokenizer: Any) -> tuple[list[Trajectory], list[PassRateRow]]:
    import torch

    config.validate_tasks()
    torch.manual_seed(config.seed)
    generate, chat, _ = checkpoint_generator(config, model, tokenizer)
    limits = limits_of(config)
    env_host = episode_host(config)  # environment servers (checked to answer now), bounded local kernels, or None
    tasks, specs = episode_specs(config)
    from .feasibility import check_template_on_teacher

    for harness in config.harnesses:  # before any generation: the template renders a teacher episode consistently
        check_template_on_teacher(chat, tasks[0], harness)
    out_file = _fresh_trajectories_file(config)
    trajectories: list[Trajectory] = []
    from tqdm.auto import tqdm

    with tqdm(
        total=len(specs) * len(config.harnesses), desc=f"eval {config.stage or config.model}", leave=False
    ) as bar:
        for harness in config.harnesses:
            for start in range(0, len(specs), config.batch_size):
                batch = specs[start : start + config.batch_size]
                episodes = run_token_episodes(
                    batch,
                    harness,
                    chat,
                    generate,
                    limits,
                    error_mode=config.error_mode,
                    policy_name=policy_label(config),
                    env_host=env_host,
                    seed_by_instance=True,
                )
                done = [e.trajectory for e in episodes]
                write_jsonl(done, out_file)
                trajectories += done
                bar.update(len(batch))
    (Path(config.output_dir) / "chat_format.json").write_text(json.dumps(chat.describe(), indent=2))
    return trajectories, _write_pass_rates(config, trajectories)


def evaluate_together(configs: Sequence[EvalConfig]) -> list[tuple[list[Trajectory], list[PassRateRow]]]:
    """Several evaluations of one checkpoint, played at once where a server generates for all of them: its weights
    are loaded once, and each evaluation runs in a thread of its own, so their episodes share the server's batches
    (on 2 CPU cores that gained 3%: bench/evaluate_together.py; the engine there is bound by reading each episode's
    KV cache more than by its batch). Each writes its trajectories and table as `evaluate` does, and
    its result comes back in the order of `configs`. Evaluations of different models or servers, or not on the
    engine, run one after the other, and so do evaluations bounded by `max_local_kernels` or played on environment
    servers (each would hold its own bound on the same machines). On the main rank, as `evaluate`."""
    return on_main(_evaluate_together, list(configs))


def _evaluate_together(configs: list[EvalConfig]) -> list[tuple[list[Trajectory], list[PassRateRow]]]:
    from concurrent.futures import ThreadPoolExecutor

    from ..generation.sources import resolve_model_source

    checkpoints = {(c.model, c.chat_template, c.engine_url, c.engine_model, c.vllm_server_base_url) for c in configs}
    bounded = any(config.max_local_kernels is not None or config.env_servers for config in configs)
    if len(configs) < 2 or len(checkpoints) > 1 or not configs[0].engine_url or bounded:
        return [_evaluate(config, None, None) for config in configs]
    first = configs[0]
    if any(config.engine_load_weights for config in configs):
        _load_into_server(first, "engine", Path(resolve_model_source(first.model, first.chat_template)))
    # imported here, once: transformers' lazy modules are not safe to import from two threads at the same time
    from transformers import AutoConfig, AutoTokenizer  # noqa: F401

    together = [replace(config, engine_load_weights=False) for config in configs]
    with ThreadPoolExecutor(max_workers=len(together), thread_name_prefix="evaluation") as pool:
        futures = [pool.submit(_evaluate, config, None, None) for config in together]
        return [future.result() for future in futures]


def evaluate_policy(config: EvalConfig, policy_for: Callable[[str], Any]) -> tuple[list[Trajectory], list[PassRateRow]]:
    """`evaluate` for a message-level policy: every (harness, task, scale, seed, sample) of `config` played here by
    `run_episode` with `policy_for(harness)` (e.g. `OracleTeacher`, `MemorizationPolicy`, or `lambda harness:
    checkpoint_policy(config)`), under the config's budgets and error mode; trajectories.jsonl and the pass-rate
    table written as `evaluate` writes them. Played once, by the main rank."""
    return on_main(_evaluate_policy, config, policy_for)


def _evaluate_policy(
    config: EvalConfig, policy_for: Callable[[str], Any]
) -> tuple[list[Trajectory], list[PassRateRow]]:
    from ..harness.episode import run_episode

    config.validate_tasks()
    limits = limits_of(config)
    _, specs = episode_specs(config)
    out_file = _fresh_trajectories_file(config)
    trajectories: list[Trajectory] = []
    for harness in config.harnesses:
        policy = policy_for(harness)
        for wanted in specs:
            trajectory = run_episode(
                wanted.task,
                wanted.scale,
                wanted.seed,
                harness,
                policy,
                limits,
                sample=wanted.sample,
                error_mode=config.error_mode,
            )
            write_jsonl(trajectory, out_file)
            trajectories.append(trajectory)
    return trajectories, _write_pass_rates(config, trajectories)


def episode_specs(config: EvalConfig) -> tuple[list[Any], list[RolloutSpec]]:
    """(tasks, one RolloutSpec per episode of each harness): the config's instances, else task_ids x scales x seeds,
    each `samples` times."""
    if config.instances:
        tasks = select_tasks(config.tasks_root, list(dict.fromkeys(str(i[0]) for i in config.instances)))
        by_id = {t.id: t for t in tasks}
        specs = [
            RolloutSpec(by_id[str(task_id)], str(scale), int(seed), sample)
            for task_id, scale, seed in config.instances
            for sample in range(config.first_sample, config.first_sample + config.samples)
        ]
    else:
        tasks = select_tasks(config.tasks_root, config.task_ids)
        specs = [
            RolloutSpec(task, scale, seed, sample)
            for task in tasks
            for scale in config.scales
            for seed in config.seeds
            for sample in range(config.first_sample, config.first_sample + config.samples)
        ]
    return tasks, specs


def _fresh_trajectories_file(config: EvalConfig) -> Path:
    output_dir = Path(config.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    out_file = output_dir / TRAJECTORIES_FILE
    out_file.unlink(missing_ok=True)
    return out_file


def _write_pass_rates(config: EvalConfig, trajectories: list[Trajectory]) -> list[PassRateRow]:
    table = pass_rate_table(trajectories)
    output_dir = Path(config.output_dir)
    (output_dir / "pass_rates.json").write_text(json.dumps([asdict(r) for r in table], indent=2))
    (output_dir / "pass_rates.md").write_text(format_table(table) + "\n")
    return table
