"""How far one memorised program goes: the memorization baseline over the pool, as a table and a figure.

`progagent memorization --tasks tasks --harness ptc --scale v0 --train-seed 0 --seeds 1000,1001,1002,1003`
replays the teacher's seed-0 turns on the other seeds of every task (`policy.memorize`), writes the
trajectories, a per-task table and `figures/memorization_replay.{png,svg}`: the share of other instances
one fixed program passes, for tasks with instance parameters and for tasks without.
"""

from __future__ import annotations

import sys
from pathlib import Path

import altair as alt
import polars as pl

from .stats import wilson_interval
from .style import save_chart


def memorization_table(trajectories: list, tasks: list, train_seed: int = 0) -> pl.DataFrame:
    """One row per task: instances replayed, passed, and whether the task draws instance parameters; `same_params`
    counts the instances whose seed drew the training seed's parameters again, `passed_other_params` the passes
    among the others (what one fixed program solves although the request differs)."""
    by_id = {t.id: t for t in tasks}
    rows: dict[str, dict] = {}
    for tr in trajectories:
        task = by_id.get(tr.task_id)
        row = rows.setdefault(
            tr.task_id,
            {
                "task": tr.task_id,
                "domain": tr.task_id.split("/")[0],
                "parametrised": bool(task and task.parametrised),
                "instances": 0,
                "passed": 0,
                "errored": 0,
                "same_params": 0,
                "passed_other_params": 0,
            },
        )
        if tr.errored:
            row["errored"] += 1
            continue
        same = task is not None and tr.params == task.params_for(train_seed)
        row["instances"] += 1
        row["passed"] += int(tr.reward == 1.0)
        row["same_params"] += int(same)
        row["passed_other_params"] += int(tr.reward == 1.0 and not same)
    table = (
        pl.DataFrame(list(rows.values()))
        if rows
        else pl.DataFrame(
            schema={
                "task": pl.Utf8,
                "domain": pl.Utf8,
                "parametrised": pl.Boolean,
                "instances": pl.Int64,
                "passed": pl.Int64,
                "errored": pl.Int64,
                "same_params": pl.Int64,
                "passed_other_params": pl.Int64,
            }
        )
    )
    return table.with_columns((pl.col("passed") / pl.col("instances")).alias("pass_rate")).sort("task")


def memorization_summary(table: pl.DataFrame) -> pl.DataFrame:
    """Per group (tasks with / without parameters): instances, passed, the failing share and its 95% Wilson interval."""
    rows = []
    for flag, label in ((True, "with instance parameters"), (False, "without parameters")):
        part = table.filter(pl.col("parametrised") == flag)
        if part.height == 0:
            continue
        n, k = int(part["instances"].sum()), int(part["passed"].sum())
        low, high = wilson_interval(n - k, n)
        rows.append(
            {
                "tasks": label,
                "task_count": part.height,
                "instances": n,
                "passed": k,
                "same_params": int(part["same_params"].sum()),
                "passed_other_params": int(part["passed_other_params"].sum()),
                "fail_rate": (n - k) / n if n else float("nan"),
                "fail_low": low,
                "fail_high": high,
            }
        )
    return pl.DataFrame(rows)


def memorization_chart(table: pl.DataFrame, title: str) -> alt.Chart:
    """Per task: the share of other instances the replayed teacher turns pass, coloured by parametrisation (the
    legend names only the groups present: a group without tasks has no bars)."""
    data = table.with_columns(
        pl.when(pl.col("parametrised"))
        .then(pl.lit("with instance parameters"))
        .otherwise(pl.lit("without parameters"))
        .alias("tasks")
    )
    groups = {"with instance parameters": "#4c78a8", "without parameters": "#e45756"}
    present = [g for g in groups if g in data["tasks"].to_list()]
    return (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X(
                "pass_rate:Q",
                title="Other instances passed by the replayed seed-0 turns (share)",
                scale=alt.Scale(domain=[0, 1]),
            ),
            y=alt.Y("task:N", sort=alt.EncodingSortField("pass_rate", order="descending"), title=None),
            color=alt.Color("tasks:N", title=None, scale=alt.Scale(domain=present, range=[groups[g] for g in present])),
            tooltip=["task", "passed", "instances", "parametrised"],
        )
        .properties(title=title, width=360, height=max(200, 11 * table.height))
    )


# `progagent memorization` is defined in analysis/cli.py (with the other command lines, whose argument types it
# shares); it calls `_main` below, so that this module's polars and altair load only when the command runs.


def _main(args) -> int:
    from ..harness.trajectory import write_jsonl
    from ..policy.memorize import replay_memorized
    from ..task import find_task_dirs, load_task

    tasks = [load_task(folder) for root in args.tasks for folder in find_task_dirs(root)]
    if not tasks:
        print(f"error: no task.toml under {args.tasks}", file=sys.stderr)
        return 1
    seeds = tuple(int(s) for s in args.seeds.split(",") if s.strip())
    if args.train_seed in seeds:
        print(f"error: the training seed {args.train_seed} is among the replay seeds {seeds}", file=sys.stderr)
        return 1
    trajectories = replay_memorized(tasks, args.harness, args.scale, args.train_seed, seeds)
    out = Path(args.out)
    out.unlink(missing_ok=True)
    write_jsonl(trajectories, out)
    table = memorization_table(trajectories, tasks, args.train_seed)
    summary = memorization_summary(table)
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=200, fmt_str_lengths=60):
        print(table)
        print(summary)
    title = (
        f"One fixed program per task: {args.harness.upper()} teacher turns of seed {args.train_seed} "
        f"replayed on seeds {','.join(map(str, seeds))} ({args.scale})"
    )
    save_chart(memorization_chart(table, title), "memorization_replay", args.figures)
    table.write_csv(Path(args.figures) / "memorization_replay.csv")
    print(f"trajectories: {out}; figure: {Path(args.figures) / 'memorization_replay.png'}")
    return 0


__all__ = ["memorization_table", "memorization_summary", "memorization_chart"]
