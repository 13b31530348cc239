"""`progagent synth | audit | filter | export | import`."""

from __future__ import annotations

import sys
from pathlib import Path

from ..cli import one_of, one_task, policy_spec, positive_int, scale_list, task_path
from ..harness.spec import DEFAULT_HARNESS, HARNESSES
from ..task.ids import pool_root

TASKS_HELP = "task ids, domains, task folders or folders of tasks (default: the pool, $PROGAGENT_TASKS or tasks/)"


def register(subparsers) -> None:
    synth = subparsers.add_parser("synth", help="build tasks with a constructor model (OpenAI-compatible endpoint)")
    synth.add_argument("--endpoint", required=True, help="base URL, e.g. http://localhost:8000/v1")
    synth.add_argument("--model", required=True)
    synth.add_argument("--api-key", default=None, help="default: $OPENAI_API_KEY or none")
    synth.add_argument("--domain", required=True)
    synth.add_argument("--subcategory", required=True)
    synth.add_argument("--intents", type=int, default=4, help="Stage I intents to propose (default 4)")
    synth.add_argument("--max-repairs", type=int, default=3)
    synth.add_argument("--staging", default="runs/synth/staging")
    synth.add_argument("--out", default="runs/synth/tasks", help="where certified tasks are copied")
    synth.add_argument(
        "--prompts", default=None, help="folder of edited prompt files (intents.md, construct.md, repair.md)"
    )
    synth.add_argument(
        "--example",
        type=one_task,
        default="retail/restock_orders",
        help="task shown to the constructor as an example (default retail/restock_orders)",
    )
    synth.set_defaults(func=_synth)

    audit = subparsers.add_parser("audit", help="consistency checks across scales, and an independent PTC solver at v3")
    audit.add_argument("--tasks", nargs="+", type=task_path, default=[pool_root()], metavar="TASK", help=TASKS_HELP)
    audit.add_argument(
        "--policy",
        type=policy_spec,
        default=None,
        help="solver policy (oracle | hf:PATH | openai:URL#model); none: checks only",
    )
    audit.set_defaults(func=_audit)

    flt = subparsers.add_parser(
        "filter", help="difficulty filter: keep tasks whose pass rate is in (low, high) at every scale"
    )
    flt.add_argument("--tasks", nargs="+", type=task_path, default=[pool_root()], metavar="TASK", help=TASKS_HELP)
    flt.add_argument("--policy", type=policy_spec, required=True, help="oracle | hf:PATH | openai:URL#model")
    flt.add_argument("--k", type=positive_int, default=8, help="rollouts per task and scale (default 8)")
    flt.add_argument(
        "--scales", type=scale_list, default="v0,v1,v2,v3", help="comma-separated scales (default all four)"
    )
    flt.add_argument(
        "--harness",
        type=one_of(HARNESSES, "harness"),
        default=DEFAULT_HARNESS,
        help=f"{' | '.join(HARNESSES)} (default {DEFAULT_HARNESS})",
    )
    flt.add_argument("--low", type=float, default=0.0)
    flt.add_argument("--high", type=float, default=0.8)
    flt.add_argument("--workers", type=positive_int, default=1)
    flt.add_argument("--out", default="runs/difficulty", help="folder for rollouts.jsonl and pass_rates.csv")
    flt.set_defaults(func=_filter)

    export = subparsers.add_parser("export", help="export tasks to Harbor's layout or the authors' per-scale layout")
    export.add_argument("format", choices=["harbor", "authors"])
    export.add_argument("--tasks", nargs="+", type=task_path, default=[pool_root()], metavar="TASK", help=TASKS_HELP)
    export.add_argument("--out", required=True)
    export.add_argument("--scales", type=scale_list, default="v0,v1,v2,v3", help="(harbor) scales to export")
    export.add_argument("--seed", type=int, default=0, help="(harbor) state seed")
    export.set_defaults(func=_export)

    imp = subparsers.add_parser("import", help="import tasks from the authors' layout into the native format")
    imp.add_argument("format", choices=["authors"])
    imp.add_argument("folders", nargs="+", help="folders holding v0..v3/, or folders of such folders")
    imp.add_argument("--out", default="tasks")
    imp.set_defaults(func=_import)


def _synth(args) -> int:
    import os

    from .constructor import OpenAIConstructor
    from .pipeline import synthesize

    constructor = OpenAIConstructor(args.endpoint, args.model, args.api_key or os.environ.get("OPENAI_API_KEY"))
    candidates = synthesize(
        constructor,
        args.domain,
        args.subcategory,
        args.intents,
        args.staging,
        args.out,
        example=args.example,
        max_repairs=args.max_repairs,
        prompts_dir=args.prompts,
    )
    for c in candidates:
        status = (
            f"certified after {len(c.attempts)} round(s) -> {c.output}"
            if c.certified
            else f"FAILED after {len(c.attempts)} round(s)"
        )
        print(f"{c.task_id}: {status}")
    return 0 if any(c.certified for c in candidates) else 1


def _tasks(paths):
    from ..task import load_pool

    tasks = []
    for path in paths:
        tasks += load_pool(path)
    return tasks


def _audit(args) -> int:
    from ..policy.factory import make_policy
    from .audit import audit_task

    policy = make_policy(args.policy, DEFAULT_HARNESS) if args.policy else None
    failed = 0
    for task in _tasks(args.tasks):
        report = audit_task(task, policy)
        failed += not report.passed
        bad = [f"{f.check}: {f.detail}" for f in report.findings if not f.passed]
        print(f"{task.id}: {'ok' if report.passed else 'FLAGGED ' + '; '.join(bad)}")
    return 1 if failed else 0


def _filter(args) -> int:
    from ..harness.summary import print_table
    from .difficulty import difficulty_filter

    out = Path(args.out)
    result = difficulty_filter(
        _tasks(args.tasks),
        args.policy,
        out / "rollouts.jsonl",
        k=args.k,
        scales=args.scales,
        harness=args.harness,
        low=args.low,
        high=args.high,
        workers=args.workers,
    )
    result.pass_rates.write_csv(out / "pass_rates.csv")
    result.decisions.write_csv(out / "decisions.csv")
    print_table(result.pass_rates)
    print_table(result.decisions)
    print(f"kept {len(result.kept)} of {result.decisions.height} tasks; tables in {out}")
    return 0


def _export(args) -> int:
    from tqdm.auto import tqdm

    from .export import export_authors, export_harbor

    tasks = _tasks(args.tasks)
    for task in tqdm(tasks, desc=f"export {args.format}", unit="task"):
        if args.format == "harbor":
            export_harbor(task, args.out, args.scales, args.seed)
        else:
            export_authors(task, args.out)
    print(f"exported {len(tasks)} tasks to {args.out}")
    return 0


def _import(args) -> int:
    from .export import ExportError, import_authors

    folders = []
    for folder in map(Path, args.folders):
        folders += [folder] if (folder / "v0").is_dir() else sorted(p for p in folder.iterdir() if (p / "v0").is_dir())
    failed = 0
    for folder in folders:
        try:
            print(f"imported {import_authors(folder, args.out).id}")
        except ExportError as exc:
            failed += 1
            print(f"error: {exc}", file=sys.stderr)
    return 1 if failed else 0
