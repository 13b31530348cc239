"""`progagent train sft|gspo|eval|pipeline --config configs/<preset>.yaml`.

Multi-GPU runs go through accelerate, e.g.
`accelerate launch --config_file configs/accelerate/deepspeed_zero3.yaml -m progagent_lib.train.cli gspo --config configs/gspo-gpu-paper.yaml`.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from ..config import load_config

COMMANDS = ("sft", "gspo", "eval", "pipeline")


def register(subparsers) -> None:
    parser = subparsers.add_parser("train", help="SFT, GSPO and evaluation of models on the task pool")
    _add_commands(parser)


def _add_commands(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="train_command", required=True)
    helps = {"sft": "cold-start SFT on teacher trajectories", "gspo": "GSPO RL (resumes from the last checkpoint)",
             "eval": "pass rate of a checkpoint under harnesses on held-out seeds",
             "pipeline": "base -> SFT -> GSPO per trained harness, every stage evaluated on held-out seeds"}
    for name in COMMANDS:
        sub = commands.add_parser(name, help=helps[name])
        sub.add_argument("--config", required=True, help="YAML preset, e.g. configs/cpu-smoke.yaml")
        sub.add_argument("--output-dir", help="override the config's output_dir")
        sub.add_argument("--model", help="override the config's model: a registered name (smollm2), a folder, a GGUF file or a hub id")
        if name != "sft":
            sub.add_argument("--engine-url", help="generate through a `progagent engine serve` server at this URL "
                             "(http://127.0.0.1:P/v1); its weights are replaced by the trained model's")
        if name == "pipeline":
            sub.add_argument("--engine", action="store_true",
                             help="start an engine for the run (needs `make engine`) and generate through it")
            sub.add_argument("--engine-kv-cache-gib", type=int, default=2, metavar="GIB",
                             help="with --engine: its KV cache in GiB (default 2: ~90k tokens of smollm2; episodes "
                                  "played in lockstep beyond it are preempted and recomputed)")
        if name == "gspo":
            sub.add_argument("--no-resume", action="store_true", help="start over even if checkpoints exist")
        sub.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..config import ConfigError

    try:
        return _run(args)
    except ConfigError as exc:   # a bad config: its field and allowed values, no traceback
        raise SystemExit(f"progagent train {args.train_command}: {exc}") from None


def _run(args: argparse.Namespace) -> int:
    overrides = {"output_dir": args.output_dir, "model": getattr(args, "model", None),
                 "engine_url": getattr(args, "engine_url", None)}
    command = args.train_command
    if command == "sft":
        from .sft import SFTRunConfig, run_sft

        result = run_sft(load_config(SFTRunConfig, args.config, overrides))
    elif command == "gspo":
        from .gspo import GSPORunConfig, run_gspo

        result = run_gspo(load_config(GSPORunConfig, args.config, overrides), resume=not args.no_resume)
        result = {"global_step": result["global_step"], "final_model": result["final_model"],
                  "last_step": result["dynamics"][-1] if result["dynamics"] else None}
    elif command == "eval":
        from .evaluate import EvalConfig, evaluate, format_table

        _, table = evaluate(load_config(EvalConfig, args.config, overrides))
        print(format_table(table))
        return 0
    else:
        from .pipeline import PipelineConfig, format_summary, run_pipeline

        from .feasibility import NotLearnableError

        config = load_config(PipelineConfig, args.config, overrides)
        try:
            if args.engine and not config.engine_url:
                from dataclasses import replace

                from ..engine import EngineServer, free_port

                with EngineServer(config.model, free_port(), kv_cache_gib=args.engine_kv_cache_gib) as server:
                    run_pipeline(replace(config, engine_url=server.base_url, engine_model=server.served_name))
            else:
                run_pipeline(config)
        except NotLearnableError as exc:
            raise SystemExit(f"progagent train pipeline: refused: {exc}") from None
        print(open(f"{config.output_dir}/summary.md").read())
        return 0
    print(json.dumps(result, indent=2, default=str))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="progagent train")
    _add_commands(parser)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
