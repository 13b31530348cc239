"""One unprivileged uid/gid per sandbox, leased from a reserved range.

A confined program runs as a uid of its own (not 0, no capabilities): the Linux kernel's ordinary
permission checks then keep it from changing the mode, owner, times or extended attributes of
anything it does not own, which Landlock does not mediate. Its writable folders are chowned to it;
everything else it sees is root's and mounted read-only.

The range: `PROGAGENT_SANDBOX_UIDS=START:COUNT` (default `DEFAULT_START:DEFAULT_COUNT`), used as uid and
gid alike. It must not hold a user or group of this machine (`/etc/passwd`, `/etc/group`) nor overlap a
subordinate range handed to users for their own user namespaces (`/etc/subuid`, `/etc/subgid`): a
uid shared with anything else would give the program that thing's files. `check_range()` refuses such
a range with `SandboxUnavailable`, naming the clash and the variable to set.

Leases are files `RUNTIME_ROOT/ids/<uid>` made with O_EXCL and holding the host's pid, so concurrent
hosts on one machine never hand out the same uid; a lease whose host died is taken back
(`sweep_leases`). A uid is reused only after its sandbox is gone: every process killed (the pids
cgroup), its tmpfs unmounted and its workspace deleted, so nothing of an earlier episode is left
that the uid could reach.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path

DEFAULT_START = 1_879_048_192  # 0x70000000: far above the uids distributions and subuid tools hand out
DEFAULT_COUNT = 65_536
RANGE_VARIABLE = "PROGAGENT_SANDBOX_UIDS"


class IdentityUnavailable(RuntimeError):
    """No uid of the reserved range can be used (a clash with the machine's users, or all leased)."""


@dataclass(frozen=True)
class Identity:
    """The uid and gid a sandbox's processes run as."""

    uid: int
    gid: int


def configured_range() -> range:
    text = os.environ.get(RANGE_VARIABLE, f"{DEFAULT_START}:{DEFAULT_COUNT}")
    try:
        start, count = (int(part) for part in text.split(":"))
    except ValueError:
        raise IdentityUnavailable(
            f"{RANGE_VARIABLE} must be START:COUNT (e.g. {DEFAULT_START}:{DEFAULT_COUNT}), got {text!r}"
        ) from None
    if start < 1000 or count < 1 or start + count > 2**31:
        raise IdentityUnavailable(f"{RANGE_VARIABLE}={text!r}: the range must lie within [1000, 2^31)")
    return range(start, start + count)


def _ids_in(path: str, column: int) -> list[int]:
    ids: list[int] = []
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return ids
    for line in lines:
        fields = line.split(":")
        if len(fields) > column and fields[column].isdigit():
            ids.append(int(fields[column]))
    return ids


def _subordinate_ranges(path: str) -> list[range]:
    ranges: list[range] = []
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return ranges
    for line in lines:
        fields = line.split(":")
        if len(fields) == 3 and fields[1].isdigit() and fields[2].isdigit():
            ranges.append(range(int(fields[1]), int(fields[1]) + int(fields[2])))
    return ranges


_checked: range | None = None


def check_range() -> range:
    """The reserved range, once checked against this machine's users, groups and subordinate ranges."""
    global _checked
    ids = configured_range()
    if _checked == ids:
        return ids
    for path, column in (("/etc/passwd", 2), ("/etc/group", 2)):
        clash = [i for i in _ids_in(path, column) if i in ids]
        if clash:
            raise IdentityUnavailable(
                f"{path} has id {clash[0]} inside the sandbox uid range "
                f"{ids.start}:{len(ids)}; set {RANGE_VARIABLE}=START:COUNT to a free range"
            )
    for path in ("/etc/subuid", "/etc/subgid"):
        for sub in _subordinate_ranges(path):
            if sub.start < ids.stop and ids.start < sub.stop:
                raise IdentityUnavailable(
                    f"{path} hands out {sub.start}:{len(sub)}, which overlaps the sandbox uid "
                    f"range {ids.start}:{len(ids)}; set {RANGE_VARIABLE}=START:COUNT to a free range"
                )
    _checked = ids
    return ids


def _leases(runtime_root: Path) -> Path:
    folder = runtime_root / "ids"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder


def lease(runtime_root: Path) -> Identity:
    """A uid/gid of the range that no live sandbox on this machine holds, leased to this process."""
    ids = check_range()
    folder = _leases(runtime_root)
    start = random.randrange(len(ids))  # spread the probes: concurrent hosts rarely race for one file
    for offset in range(len(ids)):
        uid = ids[(start + offset) % len(ids)]
        try:
            fd = os.open(folder / str(uid), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "w") as handle:
            handle.write(str(os.getpid()))
        return Identity(uid, uid)
    raise IdentityUnavailable(
        f"all {len(ids)} sandbox uids of {ids.start}:{len(ids)} are leased; close sandboxes or widen {RANGE_VARIABLE}"
    )


def release(runtime_root: Path, identity: Identity) -> None:
    try:
        (runtime_root / "ids" / str(identity.uid)).unlink()
    except FileNotFoundError:
        pass


def sweep_leases(runtime_root: Path, alive) -> None:
    """Take back the leases of hosts that died (`alive(pid) -> bool`)."""
    folder = runtime_root / "ids"
    for path in folder.iterdir() if folder.is_dir() else []:
        try:
            owner = int(path.read_text() or "0")
        except (OSError, ValueError):
            continue
        if owner and not alive(owner):
            path.unlink(missing_ok=True)


def chown_tree(root: Path, uid: int, gid: int, max_entries: int = 200_000) -> None:
    """Give `root` and everything beneath it to uid/gid, following no link (lchown).

    Iterative (a tree may be nested deeper than Python's recursion allows); an entry that vanished or
    whose path is too long is skipped, and the walk stops after `max_entries` (a workspace's tmpfs
    holds far fewer inodes)."""
    folders, seen = [str(root)], 0
    while folders and seen < max_entries:
        folder = folders.pop()
        try:
            os.chown(folder, uid, gid, follow_symlinks=False)
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            try:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)
                else:
                    os.chown(entry.path, uid, gid, follow_symlinks=False)
            except OSError:
                continue
