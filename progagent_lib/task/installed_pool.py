"""The task pool that ships in the wheel, and the wall that keeps its oracles out of every sandbox.

`pip install progagent-workbench` installs the repository's tasks/ as the package `progagent_tasks` (setup.py), so task
ids work without a checkout (`task.ids.pool_root`). Installed, the pool lies in site-packages, inside the interpreter's
folder, which every sandbox reads (a kernel needs its libraries): a program could open a task's oracle.py or
environment.py there, where a checkout's tasks/ is out of its sight. So before an episode's environment is made
(`Task.instantiate`), `seal_installed_pool` makes the installed pool's folder its owner's alone (mode 0700): a sandbox
runs as an unprivileged uid of its own, without capabilities, and cannot enter it, while the host (root: only root
can start a sandbox) still reads every file. Without root there is no sandbox, and nothing is changed.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import stat
import warnings
from pathlib import Path

PACKAGE = "progagent_tasks"
INSTALL_FOLDERS = ("site-packages", "dist-packages")  # where pip puts a package (dist-packages: Debian's Python)


def installed_pool() -> Path | None:
    """The folder of the installed `progagent_tasks` (site-packages; the checkout's tasks/ under an editable
    install), or None when the package is not installed."""
    spec = importlib.util.find_spec(PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(locations[0]) if locations else None


@functools.cache
def seal_installed_pool() -> Path | None:
    """Make a pip-installed pool unreadable to every sandbox (mode 0700, as root); the sealed folder, else None.

    Once per process. A checkout's pool (an editable install) is left as it is: no sandbox sees it."""
    pool = installed_pool()
    if pool is None or pool.parent.name not in INSTALL_FOLDERS or os.geteuid() != 0:
        return None
    mode = stat.S_IMODE(pool.stat().st_mode)
    if mode & 0o077:
        try:
            os.chmod(pool, mode & 0o700)
        except OSError as exc:
            warnings.warn(
                f"cannot make the installed task pool {pool} private ({exc}): a sandboxed program can read "
                "its oracles and verifiers; install the package where root may change modes",
                RuntimeWarning,
                stacklevel=2,
            )
            return None
    return pool
