"""`progagent run`: episodes of a policy over tasks x scales x harnesses x samples, in parallel, resumable.

    progagent run --tasks tasks/retail/restock_orders --scales v0,v3 --harness dtc,ptc,hybrid \
        --policy oracle --samples 1 --out runs/teacher.jsonl --workers 2

Each finished trajectory is appended to the JSON-lines file at once; run the same command again after
a crash and the episodes already there are skipped. At the end a table per task, scale and harness is
printed (pass rate, pass@k, mean R~, tool-output tokens, tool calls, runtime errors).
"""
from __future__ import annotations

import argparse
import sys
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from ..task import find_task_dirs, load_task, parse_scales
from .episode import Limits, run_episode
from .spec import HARNESSES
from .summary import print_table, summarize
from .trajectory import episode_key, iter_jsonl, write_jsonl


def register(subparsers) -> None:
    from ..policy.factory import SPEC_HELP

    parser = subparsers.add_parser("run", help="run episodes of a policy and write trajectories (JSON lines)",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", required=True, help="task folders, or folders holding tasks")
    parser.add_argument("--scales", default="v0", help="comma-separated scales, e.g. v0,v3 (default v0)")
    parser.add_argument("--harness", default="ptc", help=f"comma-separated harnesses from {','.join(HARNESSES)} (default ptc)")
    parser.add_argument("--policy", default="oracle", help=f"{SPEC_HELP} (default oracle)")
    parser.add_argument("--samples", type=int, default=1, help="episodes per task, scale, seed and harness (K of pass@k)")
    parser.add_argument("--seeds", default="0", help="comma-separated environment seeds (default 0)")
    parser.add_argument("--out", required=True, help="JSON-lines file the trajectories are appended to")
    parser.add_argument("--workers", type=int, default=1, help="episodes run at the same time (threads; kernels are processes)")
    parser.add_argument("--max-tool-calls", type=int, help="tool calls per episode (0 = no limit; default: the policy's or task's, 100)")
    parser.add_argument("--max-turns", type=int, help="assistant turns per episode (0 = no limit)")
    parser.add_argument("--max-context-tokens", type=int, help="context tokens per episode (0 = no limit)")
    parser.add_argument("--error-mode", default="is_error", choices=["is_error", "off", "detect"],
                        help="how tool failures reach the model (off = the paper's ablation)")
    parser.add_argument("--k", type=int, help="k of pass@k in the table (default: --samples)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(func=run_command)


@dataclass(frozen=True)
class EpisodeSpec:
    task_dir: Path
    task_id: str
    scale: str
    seed: int
    harness: str
    sample: int


def _limits_for(policy, task, args) -> Limits | None:
    overrides = {"max_tool_calls": args.max_tool_calls, "max_turns": args.max_turns,
                 "max_context_tokens": args.max_context_tokens}
    if all(v is None for v in overrides.values()):
        return None  # run_episode's defaults: the policy's, else the task's
    base = getattr(policy, "default_limits", None) or Limits.for_task(task)
    given = {k: (None if v == 0 else v) for k, v in overrides.items() if v is not None}
    return Limits(**{**base.__dict__, **given})


def run_command(args) -> int:
    from tqdm import tqdm

    from ..policy.factory import make_policy

    harnesses = [h.strip() for h in args.harness.split(",") if h.strip()]
    unknown = [h for h in harnesses if h not in HARNESSES]
    if unknown:
        print(f"error: unknown harness(es) {unknown}; expected {', '.join(HARNESSES)}", file=sys.stderr)
        return 2
    scales = parse_scales(args.scales)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    task_dirs = [d for path in args.tasks for d in find_task_dirs(path)]
    if not task_dirs:
        print(f"error: no task folders under {args.tasks}", file=sys.stderr)
        return 2
    tasks = {d: load_task(d) for d in task_dirs}

    # One policy per harness for the teacher (it plays that harness); a model is loaded once and shared.
    policies: dict[str, object] = {}
    for harness in harnesses:
        policies[harness] = policies.get("") or make_policy(args.policy, harness)
        if not args.policy.startswith("oracle"):
            policies[""] = policies[harness]
    name_of = {h: getattr(p, "name", args.policy) for h, p in policies.items()}

    out = Path(args.out)
    done = {t.key for t in iter_jsonl(out)} if out.exists() else set()
    wanted = [EpisodeSpec(d, t.id, s, seed, h, k) for d, t in tasks.items() for s in scales for seed in seeds
              for h in harnesses for k in range(args.samples)]
    key = lambda e: episode_key(e.task_id, e.scale, e.seed, e.harness, name_of[e.harness], e.sample)
    todo = [e for e in wanted if key(e) not in done]
    if len(todo) < len(wanted):
        print(f"{len(wanted) - len(todo)} of {len(wanted)} episodes are already in {out}; running the other {len(todo)}")

    write_lock = threading.Lock()
    failures: list[str] = []

    def run_one(e: EpisodeSpec) -> None:
        task, policy = tasks[e.task_dir], policies[e.harness]
        trajectory = run_episode(task, e.scale, e.seed, e.harness, policy, _limits_for(policy, task, args),
                                 sample=e.sample, error_mode=args.error_mode)
        with write_lock:
            write_jsonl(trajectory, out)

    with ThreadPoolExecutor(max_workers=max(1, args.workers)) as pool, \
            tqdm(total=len(todo), unit="episode", disable=args.no_progress) as bar:
        futures = {pool.submit(run_one, e): e for e in todo}
        for future in as_completed(futures):
            e = futures[future]
            try:
                future.result()
            except Exception as exc:  # one broken episode must not lose the others; it is retried on resume
                failures.append(f"{key(e)}: {type(exc).__name__}: {exc}")
                tqdm.write(f"episode failed: {failures[-1]}", file=sys.stderr)
            bar.update(1)

    wanted_keys = {key(e) for e in wanted}
    trajectories = [t for t in iter_jsonl(out) if t.key in wanted_keys] if out.exists() else []
    if trajectories:
        print_table(summarize(trajectories, k=args.k or None))
    if failures:
        print(f"{len(failures)} episode(s) failed and were not written; run the command again to retry them.", file=sys.stderr)
        return 1
    return 0
