"""The workbench's one cache folder: $PROGAGENT_CACHE, else ~/.cache/progagent.

Every cache lives in a subfolder of it named for what it holds, so that a state built by one command and a model
converted by another land in the same cache whatever the working folder:

- `envs/`: built task states, per task, code fingerprint, scale and seed (`task.Task.state_dir`);
- `models/`: registered models converted once into a folder (`generation.gguf`);
- `engine/`: the engine's logs (`engine.server.EngineServer`).

The Makefile and the tests set PROGAGENT_CACHE to the repository's `.cache/progagent`. The engine's key files
are not a cache and do not move with it: they stay under ~/.cache/progagent/engine-keys/, where every client
of the user who started the engine finds them (`generation.access`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable

CACHE_ENV = "PROGAGENT_CACHE"


def cache_root() -> Path:
    """The cache folder (absolute): $PROGAGENT_CACHE when set and not empty, else ~/.cache/progagent."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "progagent").expanduser().resolve()


READY = "READY"  # written last into a built folder: a folder without it is not in the cache


def build_once(final: Path, build: Callable[[Path], str]) -> Path:
    """`final`, built on first use: `build(staging)` fills a fresh folder beside it and returns what READY records;
    the folder is then renamed into place. Processes building the same folder at once keep whichever came first; a
    build that raises leaves nothing behind."""
    if (final / READY).exists():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=final.parent))
    try:
        (staging / READY).write_text(build(staging))
        try:
            staging.rename(final)
        except OSError:  # another process built it first
            shutil.rmtree(staging, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return final


__all__ = ["CACHE_ENV", "READY", "build_once", "cache_root"]
