"""`progagent bench`: external benchmarks under every harness, scored by their own checkers.

    progagent bench list
    progagent bench run agentdojo --policy ground-truth --harness dtc,ptc --suite banking --limit 3 \
        --out runs/agentdojo_gt.jsonl
    progagent bench run bfcl --policy ground-truth --harness dtc,ptc --category base --limit 5

`bench run` plays each task of the suite under each harness (one episode, scale v0, seed 0), appends every
trajectory to --out as it ends (a rerun skips the episodes already there), and prints a table per harness: the
pass rate by the suite's own checker, task-tool calls and tool-output tokens per episode, how many checkers raised
(with --injections also the share of attached injections the policy followed). `--policy ground-truth` replays the
suite's own reference calls; `--policy fixed-reference` (the memorization baseline) replays the reference of each
part's last task on every task of that part; any other policy spec is the one `progagent run` takes (hf:...,
openai:..., replay:...).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..cli import harness_list, policy_or, positive_int
from ..harness.spec import HARNESSES


def register(subparsers) -> None:
    from ..policy.factory import SPEC_HELP

    bench = subparsers.add_parser(
        "bench",
        help="external benchmarks (AgentDojo, BFCL multi-turn) under every harness",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = bench.add_subparsers(dest="bench_command", required=True)
    listing = commands.add_parser("list", help="the registered suites and whether their package is installed")
    listing.set_defaults(func=list_command)
    run = commands.add_parser(
        "run",
        help="run a policy on a suite's tasks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("suite", help="a suite from `progagent bench list` (agentdojo, bfcl)")
    run.add_argument(
        "--policy",
        type=policy_or("ground-truth", "fixed-reference"),
        default="ground-truth",
        help=f"ground-truth | fixed-reference | {SPEC_HELP} (default ground-truth)",
    )
    run.add_argument(
        "--harness",
        type=harness_list,
        default="dtc,ptc",
        help=f"comma-separated harnesses from {','.join(HARNESSES)} (default dtc,ptc)",
    )
    run.add_argument(
        "--suite",
        "--category",
        dest="parts",
        help="comma-separated parts of the suite (AgentDojo: workspace,travel,banking,slack; BFCL: "
        "base,miss_func,miss_param,long_context; default all)",
    )
    run.add_argument(
        "--task",
        dest="task_ids",
        nargs="+",
        help="task ids, e.g. agentdojo/banking/user_task_0, bfcl/base/multi_turn_base_0",
    )
    run.add_argument("--limit", type=positive_int, help="the first N tasks of each part")
    run.add_argument(
        "--injections",
        action="store_true",
        help="attach the suite's injection tasks (AgentDojo: each user task x each injection task, its "
        "important_instructions attack text) and report the share of injections followed",
    )
    run.add_argument("--out", help="JSON-lines file the trajectories are appended to (resumable)")
    run.add_argument(
        "--workers",
        type=positive_int,
        default=1,
        help="episodes played at once (default 1; a model behind a server answers their turns together)",
    )
    run.add_argument(
        "--policy-arg",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="keyword argument for the policy (repeatable; VALUE read as JSON when it parses)",
    )
    run.add_argument(
        "--show-failures", action="store_true", help="list every episode that did not pass, with the checker's detail"
    )
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.set_defaults(func=run_command)


def list_command(args) -> int:
    from ..harness.summary import print_table
    from .base import list_suites
    import polars as pl

    print_table(pl.DataFrame(list_suites()))
    return 0


def run_command(args) -> int:
    from ..harness.summary import print_table
    from ..textsafe import clean_text
    from .base import BenchmarkError, load_suite
    from .ground_truth import FIXED_NAME, NAME, FixedReferencePolicy, GroundTruthPolicy
    from .run import bench_table, failing, run_benchmark

    harnesses = args.harness
    options: dict[str, Any] = {"injections": True} if args.injections else {}  # load_suite's keyword arguments
    if args.parts:
        options["suites"] = [p.strip() for p in args.parts.split(",") if p.strip()]
    try:
        bench = load_suite(args.suite, **options)
        tasks = bench.select(args.task_ids, args.limit)
    except BenchmarkError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for task_id, why in bench.skipped.items():
        print(f"skipped {task_id}: {clean_text(why)}", file=sys.stderr)
    if args.policy.split(":")[0] in ("oracle", "memorize"):
        print(
            f"error: --policy {args.policy} plays our own tasks (their oracle.py); an external suite's reference "
            f"is --policy {NAME}",
            file=sys.stderr,
        )
        return 2
    policies: dict[str, Any]  # harness -> policy: the suite's reference, a fixed replay or a model
    if args.policy == NAME:
        policies = {h: GroundTruthPolicy(h) for h in harnesses}
    elif args.policy == FIXED_NAME:
        policies = {h: FixedReferencePolicy(h, bench) for h in harnesses}
    else:
        from ..policy.factory import policies_for

        kwargs = {}
        for item in args.policy_arg:
            name, sep, value = item.partition("=")
            if not sep or not name:
                print(f"error: --policy-arg {item!r}: write KEY=VALUE", file=sys.stderr)
                return 2
            try:
                kwargs[name] = json.loads(value)
            except json.JSONDecodeError:
                kwargs[name] = value
        policies = policies_for(args.policy, harnesses, **kwargs)
    result = run_benchmark(
        bench, tasks, harnesses, policies, args.out, progress=not args.no_progress, workers=args.workers
    )
    if result.skipped:
        print(f"{result.skipped} episode(s) already in {args.out}; ran {result.ran + len(result.failures)}")
    if result.trajectories:
        print_table(bench_table(result.trajectories, ("harness", "group")))
        print_table(bench_table(result.trajectories, ("harness",)))
        if args.show_failures:
            for line in failing(result.trajectories):
                print(clean_text(line))
    for failure in result.failures:
        print(f"failed (not written): {clean_text(failure)}", file=sys.stderr)
    return 1 if result.failures else 0
