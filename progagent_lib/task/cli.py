"""`progagent tasks certify | stats | list`."""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict

from ..cli import positive_int, scale_list, task_path
from .ids import pool_root


def register(subparsers) -> None:
    tasks = subparsers.add_parser("tasks", help="inspect and certify the task pool")
    sub = tasks.add_subparsers(dest="tasks_command", required=True)
    pool = [pool_root()]
    paths_help = (
        "task ids (retail/restock_orders), domains (retail), task folders or folders of tasks "
        "(default: the pool, $PROGAGENT_TASKS or the repository's tasks/)"
    )

    certify = sub.add_parser("certify", help="check every task: oracle R=1, determinism, scale consistency, empty R=0")
    certify.add_argument("paths", nargs="*", type=task_path, default=pool, metavar="TASK", help=paths_help)
    certify.add_argument(
        "--scales", type=scale_list, default="v0,v1,v2,v3", help="comma-separated scales (default: all four)"
    )
    certify.add_argument("--seeds", type=positive_int, default=2, help="number of seeds, 0..N-1 (default: 2)")
    certify.set_defaults(func=_certify)

    stats = sub.add_parser("stats", help="domains, tasks per domain, tools per task, DB size and files per scale")
    stats.add_argument("paths", nargs="*", type=task_path, default=pool, metavar="TASK", help=paths_help)
    stats.add_argument(
        "--scales", type=scale_list, default="v0,v1,v2,v3", help="comma-separated scales (default: all four)"
    )
    stats.set_defaults(func=_stats)

    listing = sub.add_parser("list", help="list the tasks in the pool")
    listing.add_argument("paths", nargs="*", type=task_path, default=pool, metavar="TASK", help=paths_help)
    listing.set_defaults(func=_list)


def _load(paths):
    from .task import load_pool_report

    tasks, errors = [], []
    for path in paths:
        found, bad = load_pool_report(path)
        tasks += found
        errors += bad
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    return tasks, errors


def _certify(args: argparse.Namespace) -> int:
    import polars as pl

    from .certify import certify_paths

    report = certify_paths(args.paths, args.scales, range(args.seeds))
    table = report.table()
    with pl.Config(tbl_rows=-1, tbl_cols=-1, fmt_str_lengths=120, tbl_width_chars=200):
        print(table)
    failures = report.failures()
    tasks = {c.task for c in report.checks}
    bad = {c.task for c in failures}
    print(
        f"\n{len(tasks) - len(bad)}/{len(tasks)} tasks certified; {len(report.checks) - len(failures)}/{len(report.checks)} checks passed"
    )
    for c in failures[:50]:
        print(f"FAIL {c.task} {c.scale} seed={c.seed} {c.name}: {c.detail}")
    return 0 if report.passed else 1


def stats_tables(tasks, scales):
    """(per-scale summary, per-domain summary) as polars DataFrames."""
    import polars as pl

    from .certify import pool_stats

    rows = pl.DataFrame([asdict(r) for r in pool_stats(tasks, scales)])
    per_scale = (
        rows.group_by("scale")
        .agg(
            pl.col("task").n_unique().alias("tasks"),
            pl.col("db_kb").mean().round(1).alias("mean_db_kb"),
            pl.col("files").mean().round(1).alias("mean_files"),
            pl.col("tools").mean().round(1).alias("mean_tools"),
        )
        .sort("scale")
    )
    per_domain = (
        rows.filter(pl.col("scale") == scales[0])
        .group_by("domain")
        .agg(pl.col("task").n_unique().alias("tasks"), pl.col("tools").mean().round(1).alias("mean_tools"))
        .sort("domain")
    )
    return per_scale, per_domain, rows


def _stats(args: argparse.Namespace) -> int:
    import polars as pl

    tasks, errors = _load(args.paths)
    if not tasks:
        print("no tasks found", file=sys.stderr)
        return 1
    per_scale, per_domain, _ = stats_tables(tasks, args.scales)
    with pl.Config(tbl_rows=-1):
        print(f"{len(tasks)} tasks in {per_domain.height} domains")
        print(per_domain)
        print(per_scale)
    return 1 if errors else 0


def _list(args: argparse.Namespace) -> int:
    tasks, errors = _load(args.paths)
    for task in tasks:
        print(f"{task.id:45s} {len(task.env_class.tool_specs):2d} tools  {task.title}")
    return 1 if errors else 0
