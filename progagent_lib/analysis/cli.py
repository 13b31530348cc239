"""`progagent reproduce --profile NAME [--run-dir DIR] [--only 03 04] [--no-engine]`; `progagent memorization`
(the fixed-replay baseline over the pool, analysis/memorization.py)."""

from __future__ import annotations

import sys
import time

from ..cli import DEFAULT_SCALE, int_list, one_of, task_path
from ..harness.spec import DEFAULT_HARNESS, HARNESSES
from ..task.ids import pool_root
from ..task.scales import SCALES


def register(subparsers) -> None:
    parser = subparsers.add_parser("reproduce", help="run the numbered notebooks headless for a profile")
    parser.add_argument(
        "--profile",
        type=profile_name,
        default="cpu-smoke",
        help="profile name in profiles.yaml, or $PROGAGENT_PROFILES (default cpu-smoke)",
    )
    parser.add_argument("--run-dir", default=None, help="run folder (default runs/<profile>)")
    parser.add_argument("--only", nargs="*", default=None, help="notebook prefixes to run, e.g. 00 03")
    parser.add_argument(
        "--no-engine",
        dest="engine",
        action="store_false",
        default=None,
        help="generate in the notebooks' processes (transformers) even if the profile names an engine",
    )
    parser.set_defaults(func=_reproduce)
    _register_memorization(subparsers)


def _register_memorization(subparsers) -> None:
    parser = subparsers.add_parser("memorization", help="replay the teacher's turns of one instance on other instances")
    parser.add_argument(
        "--tasks",
        nargs="+",
        type=task_path,
        default=[pool_root()],
        metavar="TASK",
        help="task ids, domains, task folders or folders of tasks (default: the pool, "
        "$PROGAGENT_TASKS or the repository's tasks/)",
    )
    parser.add_argument(
        "--harness",
        type=one_of(HARNESSES, "harness"),
        default=DEFAULT_HARNESS,
        help=f"{' | '.join(HARNESSES)} (default {DEFAULT_HARNESS})",
    )
    parser.add_argument(
        "--scale",
        type=one_of(SCALES, "scale"),
        default=DEFAULT_SCALE,
        help=f"the scale of every instance (default {DEFAULT_SCALE})",
    )
    parser.add_argument("--train-seed", type=int, default=0, help="the instance whose teacher turns are memorised")
    # memorization._main reads --seeds as text: checked here, handed on as `1000,1001`.
    parser.add_argument(
        "--seeds",
        type=lambda text: ",".join(map(str, int_list(text))),
        default="1000,1001,1002,1003",
        help="comma-separated instances to replay them on",
    )
    parser.add_argument("--out", default="runs/memorization/replay.jsonl", help="trajectories (JSON lines; replaced)")
    parser.add_argument("--figures", default="figures", help="folder for memorization_replay.png/.svg")
    parser.set_defaults(func=_memorization)


def _memorization(args) -> int:
    from .memorization import _main

    return _main(args)


def profile_name(text: str) -> str:
    """A profile of the profiles file (checked here so that a typo is one line with the nearest names)."""
    import os
    from pathlib import Path

    import yaml

    from .profiles import DEFAULT_PROFILES

    path = Path(os.environ.get("PROGAGENT_PROFILES", DEFAULT_PROFILES))
    try:
        profiles = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        return text  # `reproduce` reports the file itself
    if not isinstance(profiles, dict):
        return text
    return one_of(profiles, f"profile (in {path.name})")(text)


def _reproduce(args) -> int:
    from ..errors import EngineError
    from .reproduce import NotebookFailed, reproduce

    started = time.perf_counter()
    try:
        runs = reproduce(args.profile, args.run_dir, args.only, engine=args.engine)
    except EngineError as exc:
        print(
            f"error: the profile's engine: {exc}\n(`make engine` creates its environment; --no-engine runs without it)",
            file=sys.stderr,
        )
        return 1
    except NotebookFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{len(runs)} notebooks in {time.perf_counter() - started:.0f}s")
    return 0
