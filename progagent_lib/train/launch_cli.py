"""`progagent launch --config CONFIG --server-gpus 0 --train-gpus 1-7 [--dry-run]`: the vLLM server and the trainers
of a GPU run, each on its GPUs and ports, watched and stopped together (progagent_lib/train/launch.py; docs/gpu.md).

Bad input (overlapping GPUs, a port in use, a context beyond the model's positions, a server without vLLM installed)
is one line on stderr and exit status 2, before anything starts; a process that fails once started is exit status 1.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..cli import UsageError, existing_file


def gpu_list(text: str) -> tuple[int, ...]:
    from .launch import parse_gpus

    try:
        return parse_gpus(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def port_number(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r}: write a port number from 1 to 65535")
    return int(text)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "launch",
        help="start a GPU run: the vLLM server on its GPUs, the trainers through accelerate on theirs",
        description="Start the config's generation server (`trl vllm-serve` for use_vllm, `progagent engine serve` "
        "for engine_url) on --server-gpus, wait until it answers, then `accelerate launch` the trainers "
        "(one process per --train-gpus GPU) on a copy of the config that points at it; stop everything on "
        "exit. Writes <output_dir>/launch/where.json (host, GPUs, ports, pid, log of each process). "
        "GPU indices count within the launcher's CUDA_VISIBLE_DEVICES when it is set. docs/gpu.md has the "
        "multi-node recipe.",
    )
    parser.add_argument(
        "--config",
        required=True,
        type=existing_file,
        help="a pipeline config (configs/gpu-paper.yaml) or a stage config (sft-, gspo-, eval-gpu-paper.yaml)",
    )
    parser.add_argument(
        "--server-gpus",
        type=gpu_list,
        default=(),
        metavar="GPUS",
        help="the server's GPUs, e.g. 0 (several: tensor parallel)",
    )
    parser.add_argument(
        "--train-gpus", type=gpu_list, default=(), metavar="GPUS", help="the trainers' GPUs, one process each, e.g. 1-7"
    )
    parser.add_argument("--server-port", type=port_number, default=8000, help="the server's HTTP port (default 8000)")
    parser.add_argument(
        "--trainer-port", type=port_number, default=29500, help="accelerate's main process port (default 29500)"
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address the server listens on (default 127.0.0.1; 0.0.0.0 for trainers on other nodes)",
    )
    parser.add_argument(
        "--server-url", help="use a server already running there (another node's); start the trainers only"
    )
    parser.add_argument(
        "--server-only",
        action="store_true",
        help="start the server only, until stopped (the server node of a multi-node run)",
    )
    parser.add_argument(
        "--colocate",
        action="store_true",
        help="let the server and the trainers share GPUs (an engine server only: it reloads weights "
        "from a folder, where TRL's NCCL push cannot share a GPU)",
    )
    parser.add_argument(
        "--gpu-memory-utilization",
        type=float,
        default=None,
        metavar="FRACTION",
        help="the server's share of each of its GPUs (default vLLM's 0.9; 0.3 with --colocate)",
    )
    parser.add_argument(
        "--accelerate-config",
        default="auto",
        metavar="FILE",
        help="accelerate's config (default auto: configs/accelerate/deepspeed_zero3.yaml for several "
        "processes, none for one; or none); --num_processes comes from --train-gpus",
    )
    parser.add_argument("--num-machines", type=int, default=1, help="trainer nodes (multi-node; default 1)")
    parser.add_argument("--machine-rank", type=int, default=0, help="this trainer node's rank (multi-node; default 0)")
    parser.add_argument("--main-process-ip", help="the address of trainer node 0 (multi-node)")
    parser.add_argument("--output-dir", help="override the config's output_dir (the launch files go in its launch/)")
    parser.add_argument(
        "--health-timeout",
        type=float,
        default=1800.0,
        metavar="SECONDS",
        help="how long the server may take to answer its health route (default 1800)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (commands, environment, GPUs, ports) and what this machine would refuse; start nothing",
    )
    parser.add_argument("--json", action="store_true", help="with --dry-run: print the plan as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from .launch import (
        LaunchFailed,
        LaunchOptions,
        LaunchRefused,
        describe,
        execute,
        log_tail,
        machine_problems,
        plan_launch,
    )

    if args.num_machines < 1 or not 0 <= args.machine_rank < args.num_machines:
        raise UsageError(
            f"--machine-rank {args.machine_rank} with --num-machines {args.num_machines}: the rank counts "
            "from 0 to num-machines - 1"
        )
    options = LaunchOptions(
        config=args.config,
        server_gpus=args.server_gpus,
        train_gpus=args.train_gpus,
        server_port=args.server_port,
        trainer_port=args.trainer_port,
        host=args.host,
        server_url=args.server_url,
        server_only=args.server_only,
        colocate=args.colocate,
        gpu_memory_utilization=args.gpu_memory_utilization,
        accelerate_config=args.accelerate_config,
        num_machines=args.num_machines,
        machine_rank=args.machine_rank,
        main_process_ip=args.main_process_ip,
        output_dir=args.output_dir,
        health_timeout=args.health_timeout,
    )
    try:
        plan = plan_launch(options)
    except LaunchRefused as exc:
        raise UsageError(str(exc)) from None
    problems = list(machine_problems(plan))
    if args.dry_run:
        _print_plan(plan, problems, as_json=args.json)
        return 0
    if problems:
        raise UsageError(problems[0])
    print(describe(plan), flush=True)
    try:
        code = execute(plan, health_timeout=options.health_timeout, say=lambda text: print(text, flush=True))
    except LaunchFailed as exc:
        print(f"progagent launch: {exc}", file=sys.stderr)
        return 1
    if code != 0 and plan.trainer is not None and code < 128:  # 128 + N: stopped by signal N, as asked
        print(
            f"progagent launch: the trainers exited with code {code}; {plan.trainer.log} ends:\n"
            f"{log_tail(plan.trainer.log)}",
            file=sys.stderr,
        )
    return code


def _print_plan(plan, problems: list[str], *, as_json: bool) -> None:
    from .launch import describe

    if as_json:
        print(json.dumps({**plan.to_json(), "machine_problems": problems}, indent=2))
        return
    print(describe(plan))
    print("dry run: nothing started." + ("" if not problems else " On this machine a launch would stop at:"))
    for problem in problems:
        print(f"  - {problem}")
