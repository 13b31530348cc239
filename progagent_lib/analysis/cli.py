"""`progagent reproduce --profile NAME [--run-dir DIR] [--only 03 04] [--no-engine]`."""
from __future__ import annotations

import sys
import time


def register(subparsers) -> None:
    parser = subparsers.add_parser("reproduce", help="run the numbered notebooks headless for a profile")
    parser.add_argument("--profile", default="cpu-smoke", help="profile name in profiles.yaml (default cpu-smoke)")
    parser.add_argument("--run-dir", default=None, help="run folder (default runs/<profile>)")
    parser.add_argument("--only", nargs="*", default=None, help="notebook prefixes to run, e.g. 00 03")
    parser.add_argument("--no-engine", dest="engine", action="store_false", default=None,
                        help="generate in the notebooks' processes (transformers) even if the profile names an engine")
    parser.set_defaults(func=_reproduce)


def _reproduce(args) -> int:
    from ..errors import EngineError
    from .reproduce import NotebookFailed, reproduce

    started = time.perf_counter()
    try:
        runs = reproduce(args.profile, args.run_dir, args.only, engine=args.engine)
    except EngineError as exc:
        print(f"error: the profile's engine: {exc}\n(`make engine` creates its environment; --no-engine runs without it)",
              file=sys.stderr)
        return 1
    except NotebookFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{len(runs)} notebooks in {time.perf_counter() - started:.0f}s")
    return 0
