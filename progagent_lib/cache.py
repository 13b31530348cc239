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
from pathlib import Path

CACHE_ENV = "PROGAGENT_CACHE"


def cache_root() -> Path:
    """The cache folder (absolute): $PROGAGENT_CACHE when set and not empty, else ~/.cache/progagent."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "progagent").expanduser().resolve()


__all__ = ["CACHE_ENV", "cache_root"]
