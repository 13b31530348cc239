"""One command for a run on GPUs: the vLLM server on its GPUs, the trainers through `accelerate launch` on theirs.

    progagent launch --config configs/gpu-paper.yaml --server-gpus 0 --train-gpus 1-7 [--dry-run]

`plan_launch` reads the config (a profile's pipeline config, or an SFT, GSPO or evaluation stage config) and
makes the plan: which server the config generates through (`trl vllm-serve` for `use_vllm`, or a `progagent engine
serve` for `engine_url`; none when it generates in-process), its command, GPUs (CUDA_VISIBLE_DEVICES), ports and
health route, and the trainers' `accelerate launch --num_processes N` with N from the trainer GPUs. The trainers
read a copy of the config (`<output_dir>/launch/config.yaml`) in which the server's URL is the launched one.

Bad input is refused before anything starts (`LaunchRefused`, one line naming the fix): server and trainer GPUs that
overlap (TRL pushes weights over NCCL, which cannot put two ranks on one GPU), ports that coincide or are in use, a
context budget beyond the model's positions, a generation server without vLLM installed, GPUs that are not there.
`--dry-run` prints the plan and what this machine would refuse, and starts nothing.

`execute` starts the server, waits until its health route answers, starts the trainers, watches both, and on any
exit (the trainers finishing, a process dying, SIGINT/SIGTERM/SIGHUP) stops every process group it started; each
child also gets SIGTERM should the launcher itself be killed. Where each process runs (host, GPUs, ports, pid, log)
is written to `<output_dir>/launch/where.json` as it changes.
"""

from __future__ import annotations

import ctypes
import dataclasses
import importlib.util
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

REPO = Path(__file__).resolve().parents[2]
ZERO3_CONFIG = REPO / "configs" / "accelerate" / "deepspeed_zero3.yaml"
DEFAULT_SERVER_PORT = 8000  # TRL's default; the gpu-paper profile's difficulty teacher is on 8001
TRL_GROUP_PORT = 51216  # TRL's vllm_group_port (GRPOConfig's default): where the NCCL weight push meets
DEFAULT_TRAINER_PORT = 29500  # accelerate's (torchrun's) main process port
ENGINE_SERVED_NAME = "policy"
INSTALL_GPU = "`make install-gpu`, then run `.venv-gpu/bin/progagent launch ...`"
STAGES = ("pipeline", "sft", "gspo", "eval")


class LaunchRefused(ValueError):
    """Bad input, found before anything starts: one line naming the fix (the command exits 2)."""


class LaunchFailed(RuntimeError):
    """A launched process failed (the server did not come up, or died): the command exits 1."""


@dataclass(frozen=True)
class LaunchOptions:
    """What `progagent launch` is asked: the config and where its processes go."""

    config: str
    server_gpus: tuple[int, ...] = ()
    train_gpus: tuple[int, ...] = ()
    server_port: int = DEFAULT_SERVER_PORT
    trainer_port: int = DEFAULT_TRAINER_PORT
    host: str = "127.0.0.1"  # the server's bind address
    server_url: str | None = None  # a server already running (on another node): start the trainers only
    server_only: bool = False  # start the server only (the server node of a multi-node run)
    colocate: bool = False  # server and trainers share GPUs (engine server only: no NCCL)
    gpu_memory_utilization: float | None = None
    accelerate_config: str = "auto"  # "auto": ZeRO-3 for several processes, none for one; a file; "none"
    num_machines: int = 1
    machine_rank: int = 0
    main_process_ip: str | None = None
    output_dir: str | None = None
    health_timeout: float = 1800.0


@dataclass
class ProcessPlan:
    """One process the launcher starts: its command, environment (on top of the launcher's), GPUs and ports."""

    role: str  # "server" | "trainer"
    what: str  # "trl vllm-serve" | "progagent engine serve" | "accelerate launch"
    argv: list[str]
    env: dict[str, str]
    gpus: list[int]
    ports: dict[str, int]
    host: str  # the address it listens on (server) or the node it runs on (trainer)
    log: str
    processes: int = 1
    url: str | None = None  # a server's base URL as the trainers reach it
    health_url: str | None = None


@dataclass
class LaunchPlan:
    config: str
    stage: str
    server_kind: str | None  # "trl" | "engine" | None (generation in the trainers' own processes)
    model: str  # as the config names it
    positions: int | None  # the model's context (None: not known here)
    budgets: dict[str, int]  # the config's context budgets, each checked against `positions`
    server_model: str | None
    servers: list[ProcessPlan]
    trainer: ProcessPlan | None
    server_url: str | None
    overrides: dict[str, Any]  # the trainers' copy of the config: dotted field -> value
    trainer_config: str
    where_file: str
    missing: list[str] = field(default_factory=list)  # what this machine lacks (model files): refused at launch

    def processes(self) -> list[ProcessPlan]:
        return [*self.servers, *([self.trainer] if self.trainer else [])]

    def to_json(self) -> dict:
        return asdict(self)


# --- reading the config --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StageView:
    """What the launcher needs of a config, whatever its kind."""

    model: str
    output_dir: str
    server_kind: str | None
    budgets: dict[str, int]
    url_fields: list[str]  # the fields that hold the generation server's URL
    engine_model_field: str | None
    tiny_positions: int | None
    first_sft_model: str | None  # a pipeline's first recipe's SFT model (the server's start, once it exists)


def stage_of(data: Any, path: str) -> str:
    """pipeline | gspo | sft | eval, by the config's fields."""
    if not isinstance(data, dict):
        raise LaunchRefused(f"{path}: not a YAML mapping of config fields")
    if any(isinstance(data.get(section), dict) for section in ("sft", "gspo")):
        return "pipeline"
    matching = [
        stage
        for stage, cls in _stage_classes().items()
        if stage != "pipeline" and set(data) <= {f.name for f in dataclasses.fields(cls)}
    ]
    if len(matching) == 1:
        return matching[0]
    if matching:
        raise LaunchRefused(
            f"{path}: its fields fit several stages ({', '.join(matching)}); name one's own field "
            "(gspo: harness, sft: max_length, eval: samples)"
        )
    raise LaunchRefused(
        f"{path}: neither a pipeline config (with sft:/gspo: sections) nor an SFT, GSPO or evaluation "
        "config (configs/sft-gpu-paper.yaml, gspo-gpu-paper.yaml, eval-gpu-paper.yaml)"
    )


def _stage_classes() -> dict[str, type[DataclassInstance]]:
    from .evaluate import EvalConfig
    from .gspo import GSPORunConfig
    from .pipeline import PipelineConfig
    from .sft import SFTRunConfig

    return {"pipeline": PipelineConfig, "gspo": GSPORunConfig, "sft": SFTRunConfig, "eval": EvalConfig}


def read_stage(path: str, output_dir: str | None) -> tuple[str, StageView]:
    """(stage, what the launcher needs of it), the config validated (a bad field is refused, named)."""
    from ..config import ConfigError, load_config

    try:
        data = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise LaunchRefused(f"{path}: cannot be read as YAML ({' '.join(str(exc).split())})") from None
    stage = stage_of(data, path)
    try:
        config = load_config(_stage_classes()[stage], path, {"output_dir": output_dir})
    except ConfigError as exc:
        raise LaunchRefused(f"{path}: {exc}") from None
    return stage, _view(stage, config)


def _view(stage: str, config: Any) -> StageView:
    if stage == "pipeline":
        return _pipeline_view(config)
    kind = (
        "trl"
        if (config.use_vllm if stage == "gspo" else getattr(config, "vllm_server_base_url", None))
        else "engine"
        if getattr(config, "engine_url", None)
        else None
    )
    budget = "max_length" if stage == "sft" else "max_context_tokens"
    url_field = {"trl": "vllm_server_base_url", "engine": "engine_url"}.get(kind) if kind else None
    tiny = config.tiny.max_position_embeddings if stage == "sft" and config.model == "tiny" else None
    return StageView(
        config.model,
        config.output_dir,
        kind,
        _known({budget: getattr(config, budget)}),
        [url_field] if url_field else [],
        "engine_model" if kind == "engine" else None,
        tiny,
        None,
    )


def _pipeline_view(config: Any) -> StageView:
    trl_fields = (["gspo.vllm_server_base_url"] if config.gspo.use_vllm else []) + (
        ["eval.vllm_server_base_url"] if config.eval.vllm_server_base_url else []
    )
    kind = "trl" if trl_fields else "engine" if config.engine_url else None
    budgets = _known(
        {
            "gspo.max_context_tokens": config.gspo.max_context_tokens,
            "eval.max_context_tokens": config.eval.max_context_tokens,
            "sft.max_length": config.sft.max_length,
        }
    )
    first = str(Path(config.output_dir) / f"sft-{config.rl_harnesses[0]}" / "final")
    return StageView(
        config.model,
        config.output_dir,
        kind,
        budgets,
        trl_fields if kind == "trl" else ["engine_url"] if kind == "engine" else [],
        "engine_model" if kind == "engine" else None,
        config.sft.tiny.max_position_embeddings if config.model == "tiny" else None,
        first,
    )


def _known(budgets: dict[str, int | None]) -> dict[str, int]:
    return {name: value for name, value in budgets.items() if value is not None}


# --- the model: where its files are, and whether the context fits --------------------------------------------


def model_here(model: str) -> tuple[int | None, str | None]:
    """(the model's positions or None, what is missing here or None). A source that cannot be used at all (a scaling
    its config cannot express, an unknown name) is refused."""
    from ..errors import ModelSourceError
    from ..generation.rope import split_context
    from ..generation.sources import download_command, hub_snapshot, is_hub_id, source_positions

    base = split_context(model.removeprefix("hf:"))[0]
    if is_hub_id(base) and hub_snapshot(base) is None:
        return (
            None,
            f"the model {base} is not in the Hugging Face cache: download it first with {download_command(base)}",
        )
    try:
        positions = source_positions(model)
    except FileNotFoundError:
        return None, (
            f"the model folder {base} does not exist yet: it is written by an earlier stage (run that first, "
            "e.g. `progagent launch --config configs/sft-gpu-paper.yaml ...`)"
        )
    except ModelSourceError as exc:
        raise LaunchRefused(f"model {model!r}: {exc}") from None
    return positions, None


def context_problem(budgets: dict[str, int], positions: int, model: str) -> str | None:
    """The budgets beyond the model's positions, with the fix; None when every one fits."""
    over = {name: value for name, value in budgets.items() if value > positions}
    if not over:
        return None
    from ..generation.rope import split_context

    base = split_context(model.removeprefix("hf:"))[0]
    wanted = f"{base}@{math.ceil(max(over.values()) / 1024)}k"
    named = ", ".join(f"{name}={value}" for name, value in over.items())
    return (
        f"{named} exceeds the {positions} positions of {model}: name the model with a scaled context that "
        f"holds it, e.g. model: {wanted} (YaRN), or lower the budget"
    )


# --- GPUs and ports ------------------------------------------------------------------------------------------


def parse_gpus(text: str) -> tuple[int, ...]:
    """`0`, `1-7`, `0,2-3` -> the GPU indices, sorted; ValueError with the spelling otherwise."""
    gpus: set[int] = set()
    for part in text.split(","):
        low, dash, high = part.strip().partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            raise ValueError(f"{text!r}: write GPU indices like 0, 1-7 or 0,2-3")
        first, last = int(low), int(high) if dash else int(low)
        if last < first:
            raise ValueError(f"{text!r}: the range {part.strip()} runs backwards; write {last}-{first}")
        gpus.update(range(first, last + 1))
    return tuple(sorted(gpus))


def device_list(gpus: list[int] | tuple[int, ...]) -> str:
    """CUDA_VISIBLE_DEVICES for `gpus`: indices into the launcher's own CUDA_VISIBLE_DEVICES when that is set (as a
    job scheduler sets it), else the machine's indices."""
    visible = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    if not visible:
        return ",".join(str(g) for g in gpus)
    beyond = [g for g in gpus if g >= len(visible)]
    if beyond:
        raise LaunchRefused(
            f"GPU {beyond[0]}: only {len(visible)} GPUs are visible to the launcher "
            f"(CUDA_VISIBLE_DEVICES={','.join(visible)}); indices count within that list"
        )
    return ",".join(visible[g] for g in gpus)


def port_is_free(host: str, port: int) -> bool:
    """Whether `port` can be bound on `host` now (a bind test; on Linux a wildcard bind also fails when any address
    holds the port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host.strip("[]"), port))
        except OSError:
            return False
    return True


def _check_gpu_roles(options: LaunchOptions, kind: str | None) -> None:
    if options.server_only and options.server_url:
        raise LaunchRefused("--server-only starts a server and --server-url uses one already running: keep one")
    if not options.server_only and not options.train_gpus:
        raise LaunchRefused("--train-gpus is missing: name the trainers' GPUs, e.g. --train-gpus 1-7")
    needs_server = kind is not None and not options.server_url
    if needs_server and not options.server_gpus:
        raise LaunchRefused(
            f"the config generates through a {_kind_name(kind)} server: name its GPUs with "
            "--server-gpus (e.g. --server-gpus 0), or --server-url URL for one already running"
        )
    if options.server_gpus and not needs_server:
        why = (
            "--server-url names the server"
            if options.server_url
            else "the config generates in the trainers' processes (no use_vllm, vllm_server_base_url or engine_url)"
        )
        raise LaunchRefused(f"--server-gpus is given but no server is started: {why}; drop --server-gpus")
    if options.server_only and options.train_gpus:
        raise LaunchRefused("--server-only starts no trainers: drop --train-gpus (the trainer nodes give theirs)")
    if options.server_only and kind is None:
        raise LaunchRefused("--server-only: the config generates in the trainers' processes, so there is no server")
    _check_overlap(options, kind)


def _check_overlap(options: LaunchOptions, kind: str | None) -> None:
    shared = sorted(set(options.server_gpus) & set(options.train_gpus))
    if options.colocate and kind != "engine":
        raise LaunchRefused(
            "--colocate shares GPUs between the server and the trainers, which only an engine server "
            "(engine_url, weights reloaded from a folder) allows; TRL's NCCL weight push cannot put two "
            "ranks on one GPU: drop --colocate and give them different GPUs"
        )
    if shared and not options.colocate:
        example = "--server-gpus 0 --train-gpus 1-7"
        raise LaunchRefused(
            f"GPU {','.join(map(str, shared))} is in both --server-gpus and --train-gpus: the vLLM "
            f"server and the trainers need different GPUs (TRL's NCCL weight push cannot put two ranks "
            f"on one GPU), e.g. {example}"
        )


def _kind_name(kind: str | None) -> str:
    if kind is None:
        return "no"
    return {"trl": "`trl vllm-serve`", "engine": "`progagent engine serve`"}.get(kind, "no")


# --- the plan ------------------------------------------------------------------------------------------------


def plan_launch(options: LaunchOptions) -> LaunchPlan:
    """The whole plan; LaunchRefused for bad input (everything this machine has no say in)."""
    stage, view = read_stage(options.config, options.output_dir)
    _check_gpu_roles(options, view.server_kind)
    positions, missing = (view.tiny_positions, None) if view.model == "tiny" else model_here(view.model)
    if positions is not None:
        problem = context_problem(view.budgets, positions, view.model)
        if problem:
            raise LaunchRefused(f"{options.config}: {problem}")
    launch_dir = _launch_dir(Path(view.output_dir), options)
    server_model = _server_model(view, missing)
    servers, url = _servers(options, view, server_model, positions, launch_dir)
    overrides = {name: url for name in view.url_fields}
    if view.engine_model_field:
        overrides[view.engine_model_field] = ENGINE_SERVED_NAME
    if options.output_dir:
        overrides["output_dir"] = options.output_dir
    trainer_config = str(launch_dir / "config.yaml")
    trainer = None if options.server_only else _trainer(options, stage, trainer_config, launch_dir, missing is None)
    plan = LaunchPlan(
        options.config,
        stage,
        view.server_kind,
        view.model,
        positions,
        view.budgets,
        server_model,
        servers,
        trainer,
        url,
        overrides,
        trainer_config,
        str(launch_dir / "where.json"),
        [missing] if missing else [],
    )
    _check_distinct_ports(plan)
    return plan


def _launch_dir(output_dir: Path, options: LaunchOptions) -> Path:
    """<output_dir>/launch, or a folder per launcher when several share the output folder (multi-node)."""
    if options.server_only:
        return output_dir / "launch" / "server"
    if options.num_machines > 1:
        return output_dir / "launch" / f"node{options.machine_rank}"
    return output_dir / "launch"


def _server_model(view: StageView, missing: str | None) -> str | None:
    """What the server loads: a pipeline's first SFT model once it exists, else the config's model (TRL and the
    engine load the trainer's weights into the server before the first generation, so the base model's architecture,
    tokenizer and positions are what matter at start)."""
    if view.server_kind is None:
        return None
    if view.first_sft_model and (Path(view.first_sft_model) / "config.json").is_file():
        return view.first_sft_model
    if view.model == "tiny":
        raise LaunchRefused(
            "the server needs a model folder at start, and the tiny model is built by the SFT stage: "
            "run SFT first (`progagent train sft --config ...`) or start from a saved model"
        )
    if missing:
        return view.model
    from ..generation.sources import resolve_model_source

    return resolve_model_source(view.model)


def _servers(
    options: LaunchOptions, view: StageView, model: str | None, positions: int | None, launch_dir: Path
) -> tuple[list[ProcessPlan], str | None]:
    if view.server_kind is None:
        return [], None
    if options.server_url:
        return [], options.server_url.rstrip("/")
    # How the trainers reach it: here on loopback; from other nodes (--server-only on all addresses) by this host's name.
    wildcard = options.host in ("0.0.0.0", "::")
    reach = (
        socket.gethostname()
        if wildcard and options.server_only
        else "127.0.0.1"
        if wildcard or options.host == "localhost"
        else options.host
    )
    context = max([v for k, v in view.budgets.items() if k.endswith("max_context_tokens")], default=positions)
    if positions is not None and context is not None:
        context = min(context, positions)
    env = {"CUDA_VISIBLE_DEVICES": device_list(options.server_gpus), "HF_HUB_OFFLINE": "1"}
    build = _trl_server if view.server_kind == "trl" else _engine_server
    server = build(options, str(model), context, reach, env)
    server.log = str(launch_dir / "server.log")
    return [server], server.url


def _trl_server(options: LaunchOptions, model: str, context: int | None, reach: str, env: dict) -> ProcessPlan:
    argv = [
        _venv_tool("trl"),
        "vllm-serve",
        "--model",
        model,
        "--host",
        options.host,
        "--port",
        str(options.server_port),
        "--tensor-parallel-size",
        str(len(options.server_gpus)),
    ]
    if context:
        argv += ["--max-model-len", str(context)]
    if options.gpu_memory_utilization:
        argv += ["--gpu-memory-utilization", str(options.gpu_memory_utilization)]
    url = f"http://{_url_host(reach)}:{options.server_port}"
    return ProcessPlan(
        "server",
        "trl vllm-serve",
        argv,
        env,
        list(options.server_gpus),
        {"http": options.server_port, "nccl_weight_push": TRL_GROUP_PORT},
        options.host,
        "",
        url=url,
        health_url=f"{url}/health",
    )


def _engine_server(options: LaunchOptions, model: str, context: int | None, reach: str, env: dict) -> ProcessPlan:
    argv = [
        sys.executable,
        "-m",
        "progagent_lib.cli",
        "engine",
        "serve",
        "--model",
        model,
        "--host",
        options.host,
        "--port",
        str(options.server_port),
        "--served-model-name",
        ENGINE_SERVED_NAME,
    ]
    if options.host not in ("127.0.0.1", "localhost", "::1"):
        argv.append("--allow-non-loopback")
    if context:
        argv += ["--max-model-len", str(context)]
    vllm_args = ["--tensor-parallel-size", str(len(options.server_gpus))]
    utilization = options.gpu_memory_utilization or (0.3 if options.colocate else None)
    if utilization:
        vllm_args += ["--gpu-memory-utilization", str(utilization)]
    if importlib.util.find_spec("vllm") is not None and not os.environ.get("PROGAGENT_ENGINE_PYTHON"):
        env = {**env, "PROGAGENT_ENGINE_PYTHON": sys.executable}  # this environment has vLLM (.venv-gpu)
    root = f"http://{_url_host(reach)}:{options.server_port}"
    return ProcessPlan(
        "server",
        "progagent engine serve",
        argv + ["--", *vllm_args],
        env,
        list(options.server_gpus),
        {"http": options.server_port},
        options.host,
        "",
        url=f"{root}/v1",
        health_url=f"{root}/v1/models",
    )


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _trainer(options: LaunchOptions, stage: str, config: str, launch_dir: Path, model_here_: bool) -> ProcessPlan:
    processes = len(options.train_gpus) * options.num_machines
    argv = [_venv_tool("accelerate"), "launch"]
    accelerate_config = _accelerate_config(options.accelerate_config, processes)
    if accelerate_config:
        argv += ["--config_file", accelerate_config]
    argv += [
        "--num_processes",
        str(processes),
        "--num_machines",
        str(options.num_machines),
        "--machine_rank",
        str(options.machine_rank),
        "--main_process_port",
        str(options.trainer_port),
    ]
    if options.main_process_ip:
        argv += ["--main_process_ip", options.main_process_ip]
    if not accelerate_config:  # accelerate's defaults, stated so that it does not ask
        argv += ["--mixed_precision", "no", "--dynamo_backend", "no"]
    argv += ["-m", "progagent_lib.train.cli", stage, "--config", config]
    env = {"CUDA_VISIBLE_DEVICES": device_list(options.train_gpus), "PYTHONUNBUFFERED": "1"}
    if model_here_:
        env["HF_HUB_OFFLINE"] = "1"  # every rank reads the cached model; none asks the hub
    return ProcessPlan(
        "trainer",
        "accelerate launch",
        argv,
        env,
        list(options.train_gpus),
        {"main_process": options.trainer_port},
        socket.gethostname(),
        str(launch_dir / "trainer.log"),
        processes=len(options.train_gpus),
    )


def _accelerate_config(choice: str, processes: int) -> str | None:
    if choice == "none" or (choice == "auto" and processes == 1):
        return None
    if choice == "auto":
        return str(ZERO3_CONFIG.relative_to(REPO)) if Path.cwd() == REPO else str(ZERO3_CONFIG)
    if not Path(choice).is_file():
        raise LaunchRefused(
            f"--accelerate-config {choice}: no such file (configs/accelerate/ holds deepspeed_zero3.yaml and fsdp.yaml)"
        )
    return choice


def _venv_tool(name: str) -> str:
    """A console script of the launcher's own environment (the one with vLLM and accelerate)."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.is_file() else shutil.which(name) or name


def _check_distinct_ports(plan: LaunchPlan) -> None:
    seen: dict[int, str] = {}
    for process in plan.processes():
        for name, port in process.ports.items():
            if port in seen:
                raise LaunchRefused(
                    f"port {port} is planned twice ({seen[port]} and {process.role} {name}): give "
                    "--server-port and --trainer-port different values"
                )
            seen[port] = f"{process.role} {name}"


# --- what this machine must have -----------------------------------------------------------------------------


def machine_problems(plan: LaunchPlan) -> Iterator[str]:
    """Why this machine cannot start the plan, in the order a launch checks: model files, ports, vLLM, GPUs."""
    yield from plan.missing
    for process in plan.processes():
        bind = process.host if process.role == "server" else "0.0.0.0"
        for name, port in process.ports.items():
            if not port_is_free(bind, port):
                flag = "--trainer-port" if process.role == "trainer" else "--server-port" if name == "http" else None
                fix = f"pick another with {flag}" if flag else "stop what listens there (TRL's vllm_group_port)"
                yield f"port {port} ({process.role} {name}) is already in use on {bind}: {fix}"
    if plan.servers and plan.server_kind == "trl" and importlib.util.find_spec("vllm") is None:
        yield (
            f"the config has use_vllm: true (a `trl vllm-serve` server), and vLLM is not installed in this "
            f"environment ({sys.prefix}): {INSTALL_GPU}"
        )
    if plan.servers and plan.server_kind == "engine" and not _engine_installed():
        yield f"the config has engine_url (a `progagent engine serve` server), and vLLM is not installed: {INSTALL_GPU}"
    wanted = max((g for p in plan.processes() for g in p.gpus), default=None)
    if wanted is not None:
        count = gpu_count()
        if count <= wanted:
            yield (
                f"GPU {wanted} is named, and this machine shows {count} NVIDIA GPU(s) (nvidia-smi -L): run on a GPU "
                "node, or name GPUs it has"
            )


def _engine_installed() -> bool:
    from ..engine.server import engine_available

    return importlib.util.find_spec("vllm") is not None or engine_available()


def gpu_count() -> int:
    """NVIDIA GPUs this process may use: its CUDA_VISIBLE_DEVICES when set, else those nvidia-smi lists."""
    visible = [d for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    try:
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 0
    count = sum(line.startswith("GPU ") for line in listed.splitlines())
    return min(count, len(visible)) if visible else count


# --- running it ----------------------------------------------------------------------------------------------


class Stopped(Exception):
    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def write_trainer_config(plan: LaunchPlan) -> Path:
    """The config the trainers read: the given one with the launched server's URL (and --output-dir) in it."""
    data = yaml.safe_load(Path(plan.config).read_text())
    for dotted, value in plan.overrides.items():
        *sections, name = dotted.split(".")
        target = data
        for section in sections:
            target = target.setdefault(section, {})
        target[name] = value
    path = Path(plan.trainer_config)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = f"# written by `progagent launch` from {plan.config}; changed: {', '.join(plan.overrides) or 'nothing'}\n"
    path.write_text(header + yaml.safe_dump(data, sort_keys=False))
    return path


def execute(
    plan: LaunchPlan, *, health_timeout: float = 1800.0, poll: float = 1.0, grace: float = 30.0, say=print
) -> int:
    """Start the plan, watch it, stop it; the trainers' exit status (128 + signal when stopped by one)."""
    write_trainer_config(plan)
    running: list[tuple[ProcessPlan, subprocess.Popen]] = []
    record = _Where(plan)
    previous = _stop_on_signals()
    try:
        for server in plan.servers:
            running.append((server, _start(server, record)))
            _wait_healthy(server, running[-1][1], health_timeout, poll)
            say(f"server ready: {server.url} ({server.what}, GPUs {_gpus(server)}, log {server.log})")
        if plan.trainer is None:
            say("serving until stopped (Ctrl-C or SIGTERM) ...")
            return _watch(running, None, poll)
        if plan.server_url and not plan.servers:
            _wait_healthy_url(_health_of(plan), health_timeout, poll)
        running.append((plan.trainer, _start(plan.trainer, record)))
        say(
            f"trainers started: {plan.trainer.processes} process(es) on GPUs {_gpus(plan.trainer)} (log {plan.trainer.log})"
        )
        code = _watch(running[:-1], running[-1][1], poll)
        record.status = "finished" if code == 0 else "failed"
        return code
    except Stopped as stop:
        record.status = f"stopped by {stop}"
        return 128 + stop.signum
    except LaunchFailed:
        record.status = "failed"
        raise
    finally:
        for sig in previous:  # a second Ctrl-C must not cut the clean-up short
            signal.signal(sig, signal.SIG_IGN)
        for process, popen in reversed(running):
            stop_group(popen, grace)
            record.exited(process, popen.returncode)
        _restore_signals(previous)


def _gpus(process: ProcessPlan) -> str:
    return ",".join(map(str, process.gpus))


def _health_of(plan: LaunchPlan) -> str:
    return f"{plan.server_url}/health" if plan.server_kind == "trl" else f"{plan.server_url}/models"


def _start(process: ProcessPlan, record: _Where) -> subprocess.Popen:
    Path(process.log).parent.mkdir(parents=True, exist_ok=True)
    with open(process.log, "ab") as log:
        # A session of its own, so that stopping it reaches every child (vLLM's workers, torchrun's ranks) at once.
        popen = subprocess.Popen(
            process.argv,
            env={**os.environ, **process.env},
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_die_with_launcher,
        )
    record.started(process, popen.pid)
    return popen


def _die_with_launcher() -> None:
    """In the child before exec: SIGTERM when the launcher dies (even by SIGKILL), so no server outlives it."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _wait_healthy(server: ProcessPlan, popen: subprocess.Popen, timeout: float, poll: float) -> None:
    assert server.health_url is not None, f"{server.what}: a server's plan always has a health URL"
    deadline = time.monotonic() + timeout
    while not _answers(server.health_url):
        code = popen.poll()
        if code is not None:
            raise LaunchFailed(
                f"the {server.what} server exited with code {code} before answering {server.health_url};"
                f" its log ends:\n{log_tail(server.log)}"
            )
        if time.monotonic() > deadline:
            raise LaunchFailed(
                f"the {server.what} server did not answer {server.health_url} within {timeout:.0f} s "
                f"(--health-timeout); its log ends:\n{log_tail(server.log)}"
            )
        time.sleep(poll)


def _wait_healthy_url(url: str, timeout: float, poll: float) -> None:
    deadline = time.monotonic() + timeout
    while not _answers(url):
        if time.monotonic() > deadline:
            raise LaunchFailed(f"the server at {url} did not answer within {timeout:.0f} s (--health-timeout)")
        time.sleep(poll)


def _answers(url: str) -> bool:
    """GET `url` answers 200 (with the engine's key, found by its port, when it is an engine's /v1/models)."""
    import httpx

    from ..generation.access import auth_headers

    try:
        return httpx.get(url, headers=auth_headers(url.removesuffix("/models")), timeout=5.0).status_code == 200
    except httpx.HTTPError:
        return False


def _watch(servers: list[tuple[ProcessPlan, subprocess.Popen]], trainer: subprocess.Popen | None, poll: float) -> int:
    """Until the trainers exit (their status) or a server dies (LaunchFailed)."""
    while True:
        if trainer is not None and trainer.poll() is not None:
            return trainer.returncode
        for process, popen in servers:
            if popen.poll() is not None:
                raise LaunchFailed(
                    f"the {process.what} server exited with code {popen.returncode} while the run was "
                    f"going; its log ends:\n{log_tail(process.log)}"
                )
        time.sleep(poll)


def stop_group(popen: subprocess.Popen, grace: float = 30.0) -> None:
    """SIGTERM to the process's group, SIGKILL to whatever is left after `grace` seconds; reaps the leader."""
    if popen.poll() is None:
        _signal_group(popen.pid, signal.SIGTERM)
        try:
            popen.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    _signal_group(popen.pid, signal.SIGKILL)  # children the leader left behind go too
    popen.wait()
    _wait_group_gone(popen.pid, timeout=10.0)


def group_members(pgid: int) -> list[int]:
    """Live processes of process group `pgid` (zombies left out: they hold nothing), read from /proc."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            members.append(int(stat.parent.name))
    return members


def _wait_group_gone(pgid: int, timeout: float) -> None:
    """A SIGKILL takes effect asynchronously (a dying process may run a moment longer): wait, bounded, until the
    group has no live process, so that what the launcher reports stopped is stopped."""
    deadline = time.monotonic() + timeout
    while group_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _stop_on_signals() -> dict[int, Any]:
    """SIGINT, SIGTERM and SIGHUP raise Stopped in the main thread, so that `execute`'s finally stops everything."""

    def stop(signum: int, frame: Any) -> None:
        raise Stopped(signum)

    import threading

    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}


def _restore_signals(previous: dict[int, Any]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def log_tail(path: str, lines: int = 30) -> str:
    try:
        return "\n".join(Path(path).read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class _Where:
    """where.json: the plan's processes with host, GPUs, ports, pid, log and exit code, rewritten as they change."""

    def __init__(self, plan: LaunchPlan):
        self.path = Path(plan.where_file)
        self.status = "starting"
        self.entries = {
            id(p): {
                "role": p.role,
                "what": p.what,
                "host": p.host,
                "node": socket.gethostname(),
                "gpus": p.gpus,
                "cuda_visible_devices": p.env.get("CUDA_VISIBLE_DEVICES"),
                "ports": p.ports,
                "url": p.url,
                "processes": p.processes,
                "pid": None,
                "log": p.log,
                "command": p.argv,
                "exit_code": None,
            }
            for p in plan.processes()
        }
        self.head = {
            "config": plan.config,
            "stage": plan.stage,
            "trainer_config": plan.trainer_config,
            "server_url": plan.server_url,
            "launcher_pid": os.getpid(),
        }
        self.write()

    def started(self, process: ProcessPlan, pid: int) -> None:
        self.entries[id(process)]["pid"] = pid
        self.status = "running"
        self.write()

    def exited(self, process: ProcessPlan, code: int | None) -> None:
        self.entries[id(process)]["exit_code"] = code
        if self.status in ("starting", "running"):
            self.status = "stopped"
        self.write()

    def write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_suffix(".json.partial")
        partial.write_text(
            json.dumps({**self.head, "status": self.status, "processes": list(self.entries.values())}, indent=2) + "\n"
        )
        partial.replace(self.path)


# --- the plan in words ---------------------------------------------------------------------------------------


def describe(plan: LaunchPlan) -> str:
    """The plan as `--dry-run` prints it: every process's command, environment, GPUs, ports and log."""
    lines = [
        f"plan for {plan.config} ({plan.stage}) on {socket.gethostname()}",
        f"  model: {plan.model} ({plan.positions or 'positions unknown here'}"
        + (" positions" if plan.positions else "")
        + "; budgets "
        + (", ".join(f"{k}={v}" for k, v in plan.budgets.items()) or "none")
        + ")",
    ]
    if plan.server_url and not plan.servers:
        lines.append(f"  server: already running at {plan.server_url} (--server-url)")
    for process in plan.processes():
        ports = ", ".join(f"{name} {port}" for name, port in process.ports.items())
        count = f", {process.processes} process(es)" if process.role == "trainer" else ""
        lines += [
            f"  {process.role}: {process.what} on GPUs {_gpus(process)}{count}; ports: {ports}"
            + (f"; url {process.url} (health {process.health_url})" if process.url else ""),
            "    env: " + " ".join(f"{k}={v}" for k, v in process.env.items()),
            "    command: " + " ".join(_quote(a) for a in process.argv),
            f"    log: {process.log}",
        ]
    if plan.trainer is not None:
        lines.append(
            f"  trainers' config: {plan.trainer_config} = {plan.config} with "
            + (", ".join(f"{k}={v}" for k, v in plan.overrides.items()) or "no change")
        )
    elif plan.server_url:
        lines.append(
            f"  trainer nodes: progagent launch --config {plan.config} --train-gpus ... --server-url {plan.server_url}"
        )
    lines.append(f"  where each process runs: {plan.where_file}")
    return "\n".join(lines)


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)


__all__ = [
    "LaunchFailed",
    "LaunchOptions",
    "LaunchPlan",
    "LaunchRefused",
    "ProcessPlan",
    "describe",
    "execute",
    "machine_problems",
    "parse_gpus",
    "plan_launch",
    "stop_group",
    "write_trainer_config",
]
