"""Task names as users type them: an id (`retail/restock_orders`), a domain (`retail`) or a path (`tasks/retail`).

One resolver for every command line: a path that exists is taken as it is; otherwise the name is read as an id or a
domain under the task pool ($PROGAGENT_TASKS, else the checkout's `tasks/`, else the pool installed with the package),
the form tables, TRL and OpenEnv use. A checkout's path to a task (`tasks/retail/restock_orders`, as the docs write it)
names the same task in an installed pool. A name that is none of these raises `UnknownTask`, whose one-line message
lists the closest ids (a typo is the likely cause).
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

from .installed_pool import installed_pool

POOL_ENV = "PROGAGENT_TASKS"
REPO_TASKS = Path(__file__).resolve().parents[2] / "tasks"
POOL_FOLDER = "tasks"  # the pool's folder in a checkout


class UnknownTask(ValueError):
    """A task id or path that names no task (nor folder of tasks); the message says what is near."""


def pool_root() -> Path:
    """The folder task ids are read under: $PROGAGENT_TASKS, else the checkout's `tasks/` (the library run from a
    checkout), else the pool installed with the package (`pip install`: task.installed_pool)."""
    if os.environ.get(POOL_ENV):
        return Path(os.environ[POOL_ENV])
    in_checkout = REPO_TASKS.is_dir() and (REPO_TASKS.parent / "pyproject.toml").is_file()
    return REPO_TASKS if in_checkout else installed_pool() or REPO_TASKS


def closest(word: str, choices: list[str], n: int = 3) -> list[str]:
    """The choices nearest to `word` (difflib, case ignored), best first; [] when none is near."""
    by_lower = {c.lower(): c for c in choices}
    return [by_lower[c] for c in difflib.get_close_matches(word.lower(), list(by_lower), n=n, cutoff=0.6)]


def task_ids(root: Path) -> list[str]:
    """The ids (folders relative to `root`, as `domain/name`) of the tasks under `root` (the folders holding a
    task.toml; task.task.find_task_dirs, not imported: load_task reads names through this module)."""
    folders = sorted(p.parent for p in root.rglob("task.toml")) if root.is_dir() else []
    return [folder.relative_to(root).as_posix() for folder in folders]


def resolve_tasks(name: str | Path, *, pool: str | Path | None = None, single: bool = False) -> Path:
    """The folder `name` names: a task folder, or (unless `single`) a folder holding tasks.

    `name` is a path (used as it is when it exists) or an id or domain under `pool` (default `pool_root()`).
    Raises UnknownTask with the closest ids when nothing matches, or when `single` and the folder holds several tasks.
    """
    text = str(name).strip()
    root = Path(pool) if pool is not None else pool_root()
    if not text:
        raise UnknownTask("an empty task name; write a task id such as retail/restock_orders or a task folder")
    head, _, below_pool = text.partition("/")
    in_pool = [root / below_pool] if head == POOL_FOLDER else []  # `tasks/<id>`: the checkout's path to the id
    for folder in (Path(text).expanduser(), root / text, *in_pool):
        if folder.is_file() and folder.name == "task.toml":
            folder = folder.parent
        if folder.is_dir():
            return _checked(folder, text, root, single)
    raise UnknownTask(
        f"{text!r}: no such task or folder of tasks (ids are DOMAIN/NAME under {_shown(root)})" + _near(text, root)
    )


def _checked(folder: Path, text: str, root: Path, single: bool) -> Path:
    if (folder / "task.toml").is_file():
        return folder
    if not single:
        if next(folder.rglob("task.toml"), None) is not None:
            return folder
        raise UnknownTask(f"{text!r}: no task (task.toml) under {folder}" + _near(text, root))
    inside = task_ids(folder)
    if not inside:
        raise UnknownTask(f"{text!r}: not a task folder (no task.toml)" + _near(text, root))
    shown = ", ".join(f"{text.rstrip('/')}/{i}" for i in inside[:3])
    raise UnknownTask(f"{text!r} holds {len(inside)} tasks; name one, e.g. {shown}")


def _near(text: str, root: Path) -> str:
    """'; did you mean X, Y?' (in the form the user wrote: with the pool's prefix if they gave one), else the domains."""
    known = task_ids(root)
    if not known:
        return f"; there are no tasks under {_shown(root)}"
    prefix = ""
    for written in (_shown(root), str(root)):  # `tasks/retial` is the id `retial` in the pool folder `tasks`
        if text.startswith(written.rstrip("/") + "/"):
            prefix, text = written.rstrip("/") + "/", text[len(written.rstrip("/")) + 1 :]
            break
    domains = sorted({k.split("/")[0] for k in known})
    names = {k.rsplit("/", 1)[-1]: k for k in known}  # a name without its domain, e.g. `restok_orders`
    forms = {**{k: k for k in known}, **{d: d for d in domains}, **{n: k for n, k in names.items() if n not in domains}}
    matches = list(dict.fromkeys(forms[m] for m in closest(text.strip("/"), list(forms))))
    if matches:
        return "; did you mean " + " or ".join(prefix + m for m in matches) + "?"
    return f"; domains: {', '.join(domains[:12])}" + (f", ... ({len(domains)} in all)" if len(domains) > 12 else "")


def _shown(root: Path) -> str:
    """The pool as the user would write it: relative to the working folder when inside it."""
    try:
        return str(root.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(root)
