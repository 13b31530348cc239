"""`progagent run`: episodes of a policy over tasks x scales x harnesses x samples, in parallel, resumable.

    progagent run --tasks retail/restock_orders --scales v0,v3 --harness dtc,ptc,hybrid \\
        --policy oracle --samples 1 --out runs/teacher.jsonl --workers 2

Tasks are ids (retail/restock_orders) or domains (retail) under the pool ($PROGAGENT_TASKS, else the repository's
tasks/), or task folders and folders of tasks given as paths.

Each finished trajectory is appended to the JSON-lines file at once; run the same command again after
a crash and the episodes already there are skipped. At the end a table per task, scale and harness is
printed (pass rate, pass@k, mean R~, tool-output tokens, tool calls, runtime errors). Episodes that ended
because the policy or its server failed are counted as errored, kept out of the pass rates, and run again
by the next run of the same command.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..cli import DEFAULT_SCALE, existing_file, harness_list, int_list, policy_spec, positive_int, scale_list, task_path
from ..task import load_pool_report
from ..textsafe import clean_text
from .spec import DEFAULT_HARNESS, HARNESSES
from .summary import cost_by_harness, is_infra_error, print_table


def register(subparsers) -> None:
    from ..policy.factory import SPEC_HELP

    parser = subparsers.add_parser(
        "run",
        help="run episodes of a policy and write trajectories (JSON lines)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--tasks",
        nargs="+",
        required=True,
        type=task_path,
        metavar="TASK",
        help="task ids (retail/restock_orders), domains (retail), task folders or folders of tasks",
    )
    parser.add_argument(
        "--scales",
        type=scale_list,
        default=DEFAULT_SCALE,
        help=f"comma-separated scales, e.g. v0,v3, or all (default {DEFAULT_SCALE})",
    )
    parser.add_argument(
        "--harness",
        type=harness_list,
        default=DEFAULT_HARNESS,
        help=f"comma-separated harnesses from {','.join(HARNESSES)} (default {DEFAULT_HARNESS})",
    )
    parser.add_argument("--policy", type=policy_spec, default="oracle", help=f"{SPEC_HELP} (default oracle)")
    parser.add_argument(
        "--samples", type=positive_int, default=1, help="episodes per task, scale, seed and harness (K of pass@k)"
    )
    parser.add_argument("--seeds", type=int_list, default="0", help="comma-separated environment seeds (default 0)")
    parser.add_argument("--out", required=True, help="JSON-lines file the trajectories are appended to")
    parser.add_argument(
        "--workers", type=positive_int, default=1, help="episodes run at the same time (threads; kernels are processes)"
    )
    parser.add_argument(
        "--max-tool-calls", type=int, help="tool calls per episode (0 = no limit; default: the policy's or task's, 100)"
    )
    parser.add_argument("--max-turns", type=int, help="assistant turns per episode (0 = no limit)")
    parser.add_argument("--max-context-tokens", type=int, help="context tokens per episode (0 = no limit)")
    parser.add_argument(
        "--error-mode",
        default="is_error",
        choices=["is_error", "off", "detect"],
        help="how tool failures reach the model (off = the paper's ablation)",
    )
    parser.add_argument(
        "--system-prompt", type=existing_file, help="a file whose text replaces the harness's system prompt"
    )
    parser.add_argument(
        "--tokenizer", help="count tokens with this tokenizer (folder or hub id) instead of the policy's"
    )
    parser.add_argument(
        "--policy-arg",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="keyword argument for the policy (repeatable; VALUE read as JSON when it parses), "
        "e.g. --policy-arg temperature=0 --policy-arg max_new_tokens=512",
    )
    parser.add_argument("--k", type=positive_int, help="k of pass@k in the table (default: --samples)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--unsafe-no-sandbox",
        action="store_true",
        help="run programs without confinement when the sandbox cannot be set up (never on shared machines)",
    )
    parser.set_defaults(func=run_command)


def run_command(args) -> int:
    from .batch import run_batch

    harnesses = args.harness
    # A task folder still being written must not stop the others: report it and go on.
    tasks, load_errors = [], []
    for path in args.tasks:
        found, errors = load_pool_report(path)
        tasks += found
        load_errors += errors
    for error in load_errors:
        print(f"skipped: {error}", file=sys.stderr)
    if not tasks:
        print(f"error: no task could be loaded from {', '.join(map(str, args.tasks))}", file=sys.stderr)
        return 2
    policy_kwargs = {}
    for item in args.policy_arg:
        name, sep, value = item.partition("=")
        if not sep or not name:
            print(f"error: --policy-arg {item!r}: write KEY=VALUE", file=sys.stderr)
            return 2
        try:
            policy_kwargs[name] = json.loads(value)
        except json.JSONDecodeError:
            policy_kwargs[name] = value
    tokenizer = None
    if args.tokenizer:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    from ..policy.factory import policies_for

    result = run_batch(
        tasks,
        args.scales,
        harnesses,
        policies_for(args.policy, harnesses, **policy_kwargs),
        args.out,
        seeds=args.seeds,
        samples=args.samples,
        workers=args.workers,
        progress=not args.no_progress,
        error_mode=args.error_mode,
        system_prompt=args.system_prompt,
        tokenizer=tokenizer,
        limit_overrides={
            "max_tool_calls": args.max_tool_calls,
            "max_turns": args.max_turns,
            "max_context_tokens": args.max_context_tokens,
        },
        session_kwargs={"unsafe_no_sandbox": True} if args.unsafe_no_sandbox else None,
    )
    if result.skipped:
        print(
            f"{result.skipped} of {result.skipped + result.ran + len(result.failures)} episodes are already in "
            f"{args.out}; ran the other {result.ran + len(result.failures)}"
        )
    if result.trajectories:
        print_table(result.summary(k=args.k or None))
        if len(harnesses) > 1:
            print("Mean tool-output tokens per episode (all tasks pooled):")
            print_table(cost_by_harness(result.trajectories))
    if result.errored:
        # Infrastructure errors, not wrong answers: the table's `errored` column, left out of its pass rates.
        print(
            f"{result.errored} episode(s) errored (the policy or its server failed; see each trajectory's error) and "
            "are left out of the pass rates; run the command again to retry them.",
            file=sys.stderr,
        )
        first = next(t for t in result.trajectories if is_infra_error(t))
        print(f"first error ({first.key}): {clean_text(first.error)}", file=sys.stderr)  # it may quote a server's reply
    if result.failures:
        print(
            f"{len(result.failures)} episode(s) failed and were not written; run the command again to retry them.",
            file=sys.stderr,
        )
        if any("SandboxUnavailable" in failure for failure in result.failures):
            print(
                "The sandbox for programs cannot be set up here: fix the cause named above, or pass "
                "--unsafe-no-sandbox on a machine you trust.",
                file=sys.stderr,
            )
        return 1
    if result.errored:
        return 1
    return 1 if load_errors else 0
