"""Tasks named by a client of an adapter (a dataset row, a reset request): resolved below one tasks folder, once."""

from __future__ import annotations

import threading
from pathlib import Path

from ..task import Task, TaskLoadError
from ..task.task import find_task_dirs

_TASKS: dict[Path, Task] = {}
_TASKS_LOCK = threading.Lock()


def resolve_task(name: str, tasks_dir: str | Path, error: type[Exception] = ValueError) -> Task:
    """The task `name` (an id such as `retail/restock_orders`, or a path) below `tasks_dir`; loaded once per process.

    A client cannot make the host load task code from anywhere else: a folder outside `tasks_dir` is refused. Every
    refusal raises `error` (each adapter's own input error) with a message naming the task; an unknown id lists the
    tasks served, the same domain's first (a typo is likely).
    """
    if not isinstance(name, str) or not name.strip():
        raise error(f"task must be a task id such as 'retail/restock_orders', got {name!r}")
    root = Path(tasks_dir).resolve()
    outside = None
    for candidate in (root / name, Path(name)):
        folder = candidate.resolve()
        if not (folder / "task.toml").is_file():
            continue
        if not folder.is_relative_to(root):
            outside = folder
            continue
        with _TASKS_LOCK:
            if folder not in _TASKS:
                try:
                    _TASKS[folder] = Task(folder)
                except TaskLoadError as exc:
                    raise error(f"task {name!r} cannot be loaded: {exc}") from None
            return _TASKS[folder]
    if outside is not None:
        raise error(f"task {name!r} is outside the served tasks folder {root}; name a task by its id")
    known = [p.relative_to(root).as_posix() for p in find_task_dirs(root)] if root.is_dir() else []
    domain = name.strip("/").split("/")[0] + "/"
    near = [k for k in known if k.startswith(domain)] or known
    shown = ", ".join(near[:12]) + (f", ... ({len(known)} tasks in all)" if len(near) > 12 or near is not known else "")
    raise error(
        f"unknown task {name!r}: no task folder {root / name}"
        + (f"; tasks served here: {shown}" if known else f" (and no tasks under {root})")
    )
