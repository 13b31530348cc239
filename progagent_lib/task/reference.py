"""The reference state of an instance: the state the task's oracle leaves, which ready criteria compare with.

As in tau2-bench, the reference solution is the verifier's truth. `oracle.solve(tools, **params)` is replayed once per
(task, scale, seed) on a fresh copy of the generated state, and the state it leaves (database, workspace, final
answer) is kept in the cache beside the generated one, so that an author writes the expected result once, as the
oracle's program, and the verifier compares an episode's final state with it (`criteria.ReferenceCriteria`).

The oracle is the task author's code and runs in this process, as certification runs it; the episode's program never
sees the reference (the cache is outside every sandbox's view).
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..cache import build_once, cache_root
from .scales import check_scale


class Solvable(Protocol):
    """What a reference needs of a task (`task.Task` is one; named here so that this module does not import it)."""

    id: str

    def code_fingerprint(self) -> str: ...
    def source_bytes(self, name: str) -> bytes: ...
    def instantiate(self, scale: str, seed: int, *, workspace_quota: int | None | str = ...) -> Any: ...
    def oracle(self, tools: Any, params: dict | None = None) -> str: ...


REFERENCE_FORMAT = 1  # bump when the way references are built changes, so cached ones are rebuilt
ANSWER_FILE = "answer.txt"


class ReferenceError(Exception):
    """The oracle could not build an instance's reference state: a defect of the task, named with its instance."""


def reference_fingerprint(task: Solvable) -> str:
    """Identifies a reference: the generated state's fingerprint and the oracle and tools that ran on it (as loaded)."""
    digest = hashlib.sha256(f"reference-format:{REFERENCE_FORMAT}:{task.code_fingerprint()}".encode())
    for name in ("oracle.py", "environment.py"):
        digest.update(task.source_bytes(name))
    return digest.hexdigest()[:16]


def reference_dir(task: Solvable, scale: str, seed: int) -> Path:
    """The reference state of (scale, seed): `data.db`, `workspace/` and `answer.txt`, built on first use."""
    check_scale(scale)
    final = cache_root() / "references" / task.id / reference_fingerprint(task) / f"{scale}-seed{seed}"
    return build_once(final, lambda staging: _replay_oracle(task, scale, seed, staging))


def _replay_oracle(task: Solvable, scale: str, seed: int, target: Path) -> str:
    env = task.instantiate(scale, seed, workspace_quota=None)
    try:
        try:
            answer = task.oracle(env.tools)
        except Exception as exc:
            raise ReferenceError(
                f"task {task.id!r} (oracle.py): solve() raised {type(exc).__name__}: {exc} while "
                f"building the reference of {scale}, seed {seed}"
            ) from exc
        env.db.commit()
        backup = sqlite3.connect(target / "data.db")
        try:
            env.db.backup(backup)
        finally:
            backup.close()
        shutil.copytree(env.workspace, target / "workspace", symlinks=True)
        (target / ANSWER_FILE).write_text(answer if isinstance(answer, str) else str(answer))
    finally:
        env.close()
    return ""  # READY records nothing: the folder's key already names the state and the code


@dataclass
class Reference:
    """An instance's reference state, read-only: `query(sql)`, `workspace`, `answer`, `read(name)`."""

    root: Path

    def __post_init__(self) -> None:
        self.workspace = self.root / "workspace"
        self.answer = (self.root / ANSWER_FILE).read_text()
        uri = f"file:{urllib.parse.quote(str((self.root / 'data.db').resolve()))}?mode=ro"
        self.db = sqlite3.connect(uri, uri=True, check_same_thread=False)
        self.db.row_factory = sqlite3.Row

    def query(self, sql: str, params: tuple | dict = ()) -> list[dict[str, Any]]:
        """Run a SELECT on the reference database; rows as dicts."""
        return [dict(row) for row in self.db.execute(sql, params).fetchall()]

    def read(self, name: str) -> str | None:
        """A file the oracle wrote into the workspace (its text), or None when it wrote none by that name."""
        path = self.workspace / name
        return path.read_text() if path.is_file() else None

    def close(self) -> None:
        self.db.close()


__all__ = ["REFERENCE_FORMAT", "Reference", "ReferenceError", "reference_dir", "reference_fingerprint"]
