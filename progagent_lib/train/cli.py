"""`progagent train sft|gspo|eval|pipeline --config configs/<preset>.yaml`; `progagent train needs` (the teacher's needs);
`progagent train table RUN` (the cross-harness table of a pipeline run).

`sft` and `gspo` take a stage's own config (configs/sft-gpu-paper.yaml) or a profile's pipeline config
(configs/cpu-smoke.yaml, with `sft:` and `gspo:` sections): then they run that stage of the profile's pipeline, for
each trained harness, in the folders `train pipeline` uses (so a later `train pipeline` resumes from them).

Multi-GPU runs go through accelerate, e.g.
`accelerate launch --config_file configs/accelerate/deepspeed_zero3.yaml -m progagent_lib.train.cli gspo --config configs/gspo-gpu-paper.yaml`.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..cli import DEFAULT_SCALE, Parser, UsageError, existing_file, harness_list, one_of, task_ids_under, task_path
from ..config import load_config
from ..task.ids import pool_root
from ..task.scales import SCALES

COMMANDS = ("sft", "gspo", "eval", "pipeline")
PROFILE_STAGES = ("sft", "gspo")  # the stages `train sft|gspo --config PROFILE.yaml` run of a profile's pipeline


def register(subparsers) -> None:
    parser = subparsers.add_parser("train", help="SFT, GSPO and evaluation of models on the task pool")
    _add_commands(parser)


def _add_commands(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="train_command", required=True)
    helps = {
        "sft": "cold-start SFT on teacher trajectories",
        "gspo": "GSPO RL (resumes from the last checkpoint)",
        "eval": "pass rate of a checkpoint under harnesses on held-out seeds",
        "pipeline": "base -> SFT -> GSPO per trained harness, every stage evaluated on held-out seeds",
    }
    for name in COMMANDS:
        sub = commands.add_parser(name, help=helps[name])
        sub.add_argument(
            "--config",
            required=True,
            type=existing_file,
            help="YAML preset, e.g. configs/cpu-smoke.yaml"
            + (f" (a profile's pipeline config runs its {name.upper()} stage)" if name in PROFILE_STAGES else ""),
        )
        sub.add_argument("--output-dir", help="override the config's output_dir")
        sub.add_argument(
            "--model",
            help="override the config's model: a registered name (smollm2), a folder, a GGUF file or a hub id",
        )
        if name != "sft":
            sub.add_argument(
                "--engine-url",
                help="generate through a `progagent engine serve` server at this URL "
                "(http://127.0.0.1:P/v1); its weights are replaced by the trained model's",
            )
        if name == "pipeline":
            sub.add_argument(
                "--engine",
                action="store_true",
                help="start an engine for the run (needs `make engine`) and generate through it",
            )
            sub.add_argument(
                "--engine-kv-cache-gib",
                type=int,
                default=2,
                metavar="GIB",
                help="with --engine: its KV cache in GiB (default 2: ~90k tokens of smollm2; episodes "
                "beyond it are preempted and recomputed)",
            )
        if name == "gspo":
            sub.add_argument("--no-resume", action="store_true", help="start over even if checkpoints exist")
        sub.set_defaults(func=run)
    needs = commands.add_parser(
        "needs",
        help="what the teacher's episodes need (turns, longest turn, context, SFT "
        "length) per task and harness, against the model's positions",
    )
    needs.add_argument(
        "--tasks",
        type=task_path,
        default=pool_root(),
        metavar="POOL",
        help="the task pool's folder (default $PROGAGENT_TASKS, else the repository's tasks/)",
    )
    needs.add_argument(
        "--task", dest="task_ids", nargs="+", default=[], help="task ids under the pool (default: every task)"
    )
    needs.add_argument(
        "--harness", type=harness_list, default="dtc,ptc,hybrid", help="comma-separated harnesses (default all three)"
    )
    needs.add_argument(
        "--model",
        default="smollm2",
        help="whose tokenizer counts and whose positions (default smollm2; e.g. smollm2@32k)",
    )
    needs.add_argument(
        "--scale",
        type=one_of(SCALES, "scale"),
        default=DEFAULT_SCALE,
        help=f"the scale the teacher plays (default {DEFAULT_SCALE})",
    )
    needs.add_argument("--seed", type=int, default=0)
    needs.add_argument("--out", help="also write the table as CSV")
    needs.set_defaults(func=needs_command)
    grounding = commands.add_parser(
        "grounding",
        help="the grounded-literal rate of the teacher's programs per task (policy.grounding), without and with its "
        "reading turns, and what the reading costs in tokens",
    )
    grounding.add_argument(
        "--tasks", type=task_path, default=pool_root(), metavar="POOL", help="the task pool's folder"
    )
    grounding.add_argument("--task", dest="task_ids", nargs="+", default=[], help="task ids (default: every task)")
    grounding.add_argument(
        "--harness", type=harness_list, default="ptc,hybrid", help="comma-separated harnesses (default ptc,hybrid)"
    )
    grounding.add_argument("--model", default="smollm2", help="whose tokenizer counts the episode (default smollm2)")
    grounding.add_argument("--scale", type=one_of(SCALES, "scale"), default=DEFAULT_SCALE)
    grounding.add_argument("--seed", type=int, default=0)
    grounding.add_argument("--out", help="also write the table as Markdown (e.g. docs/grounding.md)")
    grounding.set_defaults(func=grounding_command)
    table = commands.add_parser(
        "table",
        help="the cross-harness table of a pipeline run: every model (base, "
        "memorization baseline, each recipe's stages) under every harness",
    )
    table.add_argument("run", help="the run's folder (its learning.jsonl) or a learning.jsonl file")
    table.add_argument("--decoding", default="greedy", choices=["greedy", "sampled"])
    table.add_argument(
        "--figure",
        metavar="PREFIX",
        help="also save the heatmap as PREFIX.png/.svg and the rows as "
        "PREFIX.csv (e.g. figures/cpu-cross/cross_harness_learning)",
    )
    table.set_defaults(func=table_command)
    report = commands.add_parser(
        "report",
        help="a pipeline run's results as Markdown: pass rate by split and stage (greedy, sampled), GSPO's steps and "
        "probe, the paired differences, the stage times",
    )
    report.add_argument("run", help="the run's folder (runs/<profile>) or a flat copy of its files")
    report.add_argument("--out", help="write the Markdown here instead of printing it")
    report.set_defaults(func=report_command)
    curve = commands.add_parser(
        "sft-curve",
        help="sampled pass rate on held-out instances against SFT's optimizer steps (one SFT run, its checkpoints "
        "evaluated)",
    )
    curve.add_argument(
        "--config", required=True, type=existing_file, help="a pipeline config, e.g. configs/cpu-smoke.yaml"
    )
    curve.add_argument("--output-dir", required=True, help="the curve's own folder (its SFT run and evaluations)")
    curve.add_argument("--every", type=int, default=4, help="keep the weights every this many steps (default 4)")
    curve.add_argument("--max-steps", type=int, default=24, help="SFT's last step (default 24)")
    curve.add_argument("--samples", type=int, default=2, help="samples per held-out instance (default 2)")
    curve.add_argument("--split", default="params", choices=["seeds", "params", "tasks"], help="default params: (b)")
    curve.add_argument("--engine", action="store_true", help="start an engine and generate through it")
    curve.add_argument("--out", help="also write the table as Markdown")
    curve.set_defaults(func=curve_command)


def with_engine(config: Any, run: Any, engine: bool, kv_cache_gib: int = 2) -> Any:
    """`run(config)`; with `engine` (and no engine_url in the config), through an engine started for it."""
    if not engine or config.engine_url:
        return run(config)
    from dataclasses import replace

    from ..engine import EngineServer, free_port

    with EngineServer(config.model, free_port(), kv_cache_gib=kv_cache_gib) as server:
        return run(replace(config, engine_url=server.base_url, engine_model=server.served_name))


def curve_command(args: argparse.Namespace) -> int:
    """`progagent train sft-curve`: train.sft_curve.sft_curve, printed (and written with --out) as a table."""
    from .pipeline import PipelineConfig
    from .sft_curve import format_curve, sft_curve

    config = load_config(PipelineConfig, args.config, {})

    def run(config: PipelineConfig) -> list[dict]:
        return sft_curve(
            config, args.output_dir, every=args.every, max_steps=args.max_steps, samples=args.samples, split=args.split
        )

    try:
        points = with_engine(config, run, args.engine)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    table = format_curve(points)
    print(table)
    if args.out:
        Path(args.out).write_text(f"`progagent train sft-curve --config {args.config} ...`\n\n{table}\n")
    return 0


def grounding_command(args: argparse.Namespace) -> int:
    """Per (task, harness): the teacher's literals, how many the student could have seen, without and with its
    reading turns, the episode's tokens either way; and the pool's summary. Exit 1 if any reading episode fails."""
    import polars as pl
    from tqdm.auto import tqdm
    from transformers import AutoTokenizer

    from ..generation.sources import resolve_model_source
    from ..harness.episode import Limits, run_episode
    from ..policy import OracleTeacher
    from ..policy.grounding import episode_grounding
    from .common import select_tasks

    tasks = select_tasks(args.tasks, task_ids_under(args.tasks, args.task_ids))
    tokenizer = AutoTokenizer.from_pretrained(resolve_model_source(args.model))
    unlimited = Limits(max_tool_calls=None, max_turns=None, max_context_tokens=None)
    rows = []
    for task, harness in tqdm([(t, h) for h in args.harness for t in tasks], desc="grounding", unit="task"):
        row: dict = {"task_id": task.id, "harness": harness}
        for reading in (False, True):
            played = run_episode(
                task,
                args.scale,
                args.seed,
                harness,
                OracleTeacher(harness, reading=reading),
                unlimited,
                tokenizer=tokenizer,
            )
            grounding = episode_grounding(played.messages, played.tools)
            suffix = "_reading" if reading else ""
            row |= {
                f"rate{suffix}": round(grounding.rate, 3),
                f"literals{suffix}": grounding.total,
                f"tokens{suffix}": played.context_tokens,
                f"reward{suffix}": played.reward,
            }
        row["ungrounded"] = ", ".join(sorted({repr(lit.value)[:40] for lit in grounding.ungrounded}))[:300]
        rows.append(row)
    table = pl.DataFrame(rows).sort("harness", "rate_reading")
    summary = (
        table.group_by("harness")
        .agg(
            pl.len().alias("tasks"),
            pl.col("rate").mean().round(3).alias("mean_rate"),
            pl.col("rate_reading").mean().round(3).alias("mean_rate_reading"),
            (pl.col("rate_reading") == 1.0).sum().alias("at_100pct_reading"),
            pl.col("tokens").median().alias("median_tokens"),
            pl.col("tokens_reading").median().alias("median_tokens_reading"),
            (pl.col("reward_reading") == 1.0).sum().alias("reading_R1"),
        )
        .sort("harness")
    )
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=220, fmt_str_lengths=80, tbl_hide_dataframe_shape=True):
        print(table.drop("ungrounded"))
        print(f"per harness ({args.scale}, seed {args.seed}; tokens: {args.model}'s tokenizer, the whole episode):")
        print(summary)
    if args.out:
        command = (
            "progagent train grounding " + " ".join(sys.argv[3:]) if sys.argv[1:3] == ["train", "grounding"] else ""
        )
        Path(args.out).write_text(
            f"# The teacher's grounded-literal rate\n\n`{command.strip()}` ({args.scale}, seed {args.seed}; tokens: "
            f"{args.model}'s tokenizer, the whole episode; policy.grounding says what counts)\n\n"
            f"{markdown_table(summary)}\n\n{markdown_table(table)}\n"
        )
    return 0 if table["reward_reading"].min() == 1.0 else 1


def markdown_table(frame: Any) -> str:
    """A polars DataFrame as a Markdown table (values as text, `|` escaped)."""
    cells = [[str(v).replace("|", "\\|") for v in row] for row in frame.iter_rows()]
    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in cells])


def needs_command(args: argparse.Namespace) -> int:
    """The teacher's needs per (task, harness), the fits against the model's positions, and a summary per harness."""
    import polars as pl
    from tqdm.auto import tqdm
    from transformers import AutoConfig, AutoTokenizer

    from ..generation.rope import model_positions
    from ..generation.sources import resolve_model_source
    from ..harness.chat_format import ChatFormat
    from .common import select_tasks
    from .feasibility import teacher_needs

    harnesses = args.harness
    tasks = select_tasks(args.tasks, task_ids_under(args.tasks, args.task_ids))
    source = resolve_model_source(args.model)
    positions = model_positions(AutoConfig.from_pretrained(source))
    chat = ChatFormat(AutoTokenizer.from_pretrained(source), model_name=args.model)
    rows = []
    for task, harness in tqdm([(t, h) for h in harnesses for t in tasks], desc="teacher needs", unit="episode"):
        needs = teacher_needs(task, harness, chat, scale=args.scale, seed=args.seed)[0]
        rows.append({**asdict(needs), "fits_positions": positions is None or needs.context_tokens <= positions})
    table = pl.DataFrame(rows).sort("harness", "context_tokens")
    summary = (
        table.group_by("harness")
        .agg(
            pl.len().alias("tasks"),
            pl.col("turns").median().alias("median_turns"),
            pl.col("context_tokens").min().alias("min_context"),
            pl.col("context_tokens").median().alias("median_context"),
            pl.col("context_tokens").max().alias("max_context"),
            pl.col("fits_positions").sum().alias("fit"),
            *(((pl.col("context_tokens") <= n).sum()).alias(f"fit_{n // 1024}k") for n in (8192, 16384, 32768)),
        )
        .sort("harness")
    )
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=200, tbl_hide_dataframe_shape=True):
        print(
            table.select(
                "task_id",
                "harness",
                "turns",
                "longest_turn_tokens",
                "context_tokens",
                "sft_tokens",
                "reward",
                "fits_positions",
            )
        )
        print(f"per harness ({args.model}: {positions} positions; {args.scale}, seed {args.seed}):")
        print(summary)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        table.write_csv(args.out)
        print(f"written: {args.out}")
    return 0


def report_command(args: argparse.Namespace) -> int:
    """The run's tables as Markdown (analysis/report.py): what docs/results.md quotes, read from the run's files."""
    from ..analysis.report import run_report

    try:
        text = run_report(args.run)
    except (OSError, ValueError) as exc:
        raise SystemExit(f"progagent train report: {exc}") from None
    if args.out:
        Path(args.out).write_text(text)
        print(f"written: {args.out}")
    else:
        print(text)
    return 0


def table_command(args: argparse.Namespace) -> int:
    """The run's cross-harness table (splits pooled), as Markdown; with --figure, the heatmap and a CSV."""
    from .pipeline import LEARNING_FILE, read_learning
    from .scoring import cross_harness_rows, format_cross_harness_table

    path = Path(args.run)
    if not (path / LEARNING_FILE if path.is_dir() else path).exists():
        raise SystemExit(f"progagent train table: {path} has no {LEARNING_FILE} (run `progagent train pipeline` first)")
    rows = read_learning(path)
    table = cross_harness_rows(rows, args.decoding)
    if not table:
        raise SystemExit(f"progagent train table: {path}: no {args.decoding} rows")
    print(format_cross_harness_table(rows, args.decoding))
    if args.figure:
        from ..analysis.figures import cross_harness_learning
        from ..analysis.learning import cross_harness_frame
        from ..analysis.style import save_chart

        frame = cross_harness_frame(path, args.decoding)
        prefix = Path(args.figure)
        prefix.parent.mkdir(parents=True, exist_ok=True)
        frame.write_csv(prefix.with_suffix(".csv"))
        save_chart(cross_harness_learning(frame), prefix.name, prefix.parent)
        print(f"written: {prefix}.png, {prefix}.svg, {prefix}.csv")
    return 0


def run(args: argparse.Namespace) -> int:
    from ..config import ConfigError

    try:
        return _run(args)
    except ConfigError as exc:  # a bad config: its field and allowed values, no traceback
        raise SystemExit(f"progagent train {args.train_command}: {exc}") from None


def is_profile_config(path: str | Path) -> bool:
    """A profile's pipeline config (configs/cpu-smoke.yaml): one with `sft:` or `gspo:` sections."""
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text())
    except yaml.YAMLError as exc:
        raise UsageError(f"{path} is not valid YAML: {' '.join(str(exc).split())}") from None
    return isinstance(data, dict) and any(isinstance(data.get(section), dict) for section in ("sft", "gspo"))


def _run(args: argparse.Namespace) -> int:
    overrides = {
        "output_dir": args.output_dir,
        "model": getattr(args, "model", None),
        "engine_url": getattr(args, "engine_url", None),
    }
    command = args.train_command
    if command != "pipeline" and is_profile_config(args.config):
        if command not in PROFILE_STAGES:
            raise UsageError(
                f"{command}: {args.config} is a profile's pipeline config; its evaluations run in "
                f"`progagent train pipeline --config {args.config}` (`train eval` takes an eval config, "
                "e.g. configs/eval-gpu-paper.yaml)"
            )
        return _profile_stage(args, overrides)
    if command == "sft":
        from .sft import SFTRunConfig, run_sft

        result = run_sft(load_config(SFTRunConfig, args.config, overrides))
    elif command == "gspo":
        from .gspo import GSPORunConfig, run_gspo

        result = run_gspo(load_config(GSPORunConfig, args.config, overrides), resume=not args.no_resume)
        result = {
            "global_step": result["global_step"],
            "final_model": result["final_model"],
            "last_step": result["dynamics"][-1] if result["dynamics"] else None,
        }
    elif command == "eval":
        from .evaluate import EvalConfig, evaluate, format_table

        _, table = evaluate(load_config(EvalConfig, args.config, overrides))
        print(format_table(table))
        return 0
    else:
        from .pipeline import PipelineConfig, run_pipeline

        from .feasibility import NotLearnableError

        config = load_config(PipelineConfig, args.config, overrides)
        try:
            with_engine(config, run_pipeline, args.engine, kv_cache_gib=args.engine_kv_cache_gib)
        except NotLearnableError as exc:
            raise SystemExit(f"progagent train pipeline: refused: {exc}") from None
        print(open(f"{config.output_dir}/summary.md").read())
        return 0
    print(json.dumps(result, indent=2, default=str))
    return 0


def _profile_stage(args: argparse.Namespace, overrides: dict) -> int:
    """`train sft|gspo --config PROFILE.yaml`: that stage of the profile's pipeline, for each trained harness, as
    `train pipeline` runs it (after the same check of the config), in the same folders."""
    from .feasibility import NotLearnableError
    from .pipeline import PipelineConfig, Recipe

    stage = args.train_command
    if getattr(args, "no_resume", False):
        raise UsageError(
            "gspo --no-resume: a profile's GSPO stage resumes from its folder; remove "
            "the gspo-<harness> folders under the profile's output_dir to start over"
        )
    config = load_config(PipelineConfig, args.config, overrides)
    recipe = Recipe(config)
    if stage == "gspo":
        missing = [h for h in config.rl_harnesses if not Path(recipe.model_for("sft", h)).is_dir()]
        if missing:
            raise UsageError(
                f"gspo: {args.config} is a profile whose GSPO starts from its SFT model, and "
                f"{recipe.model_for('sft', missing[0])} does not exist yet: run "
                f"`progagent train sft --config {args.config}` first (or `train pipeline`)"
            )
    try:
        if config.check:
            recipe.check()
        else:
            recipe.instances()  # the splits, proven disjoint from training, as the pipeline builds them first
    except NotLearnableError as exc:
        raise SystemExit(f"progagent train {stage}: refused: {exc}") from None
    results = {}
    for harness in config.rl_harnesses:
        result = recipe.sft(harness) if stage == "sft" else recipe.gspo(harness)
        results[harness] = (
            result
            if stage == "sft"
            else {
                "global_step": result["global_step"],
                "final_model": result["final_model"],
                "last_step": result["dynamics"][-1] if result["dynamics"] else None,
            }
        )
    print(json.dumps(results, indent=2, default=str))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="progagent train")
    _add_commands(parser)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except UsageError as exc:
        parser.exit(2, f"progagent train: error: {exc}\n")


if __name__ == "__main__":
    sys.exit(main())
