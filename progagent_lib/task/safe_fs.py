"""Host-side access to an episode's workspace that a program in the kernel cannot redirect.

The kernel can write its workspace while a host-side tool works on it (a thread the program left
running, a process it started), so no path the host opens may be checked first and used later:
between the two steps a folder can be swapped for a symlink to the task folder, or a file for a FIFO
that blocks `open()` for ever. Every open here is therefore:

- made relative to a descriptor of the workspace root with `openat2(RESOLVE_BENEATH |
  RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)`: no component may be a symlink
  and the walk may not leave the root or cross a mount, checked by the kernel at open time;
- non-blocking (`O_NONBLOCK`), so a FIFO or a device cannot stall the host;
- checked on the opened descriptor (`fstat`): only regular files and folders are used, and a file
  is written only if it has a single link.

Linux >= 5.6 (openat2). Where the syscall is missing this module refuses to work rather than fall
back to a racy path walk.
"""
from __future__ import annotations

import ctypes
import errno
import os
import platform
import posixpath
import stat
import time
from pathlib import Path
from typing import Callable, Iterator

from .tools import ToolError

_SYS_OPENAT2 = {"x86_64": 437, "aarch64": 437}
RESOLVE_NO_XDEV, RESOLVE_NO_MAGICLINKS, RESOLVE_NO_SYMLINKS, RESOLVE_BENEATH = 0x01, 0x02, 0x04, 0x08
_RESOLVE = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV
_BASE_FLAGS = os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY

MAX_WALK_ENTRIES = 50_000  # a listing or snapshot visits at most this many entries


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class WorkspaceUnsafe(ToolError):
    """A workspace path names something the host will not open (a link, a FIFO, a path outside)."""


def openat2(dir_fd: int, path: str, flags: int, mode: int = 0) -> int:
    """`openat2(dir_fd, path)` confined beneath `dir_fd` with no symlink at any component; raises OSError."""
    number = _SYS_OPENAT2.get(platform.machine())
    if number is None:
        raise OSError(errno.ENOSYS, f"openat2 is not wired for {platform.machine()}")
    how = _OpenHow(flags | _BASE_FLAGS, mode, _RESOLVE)
    fd = _libc.syscall(number, dir_fd, os.fsencode(path), ctypes.byref(how), ctypes.sizeof(how))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), path)
    return int(fd)


def normalise(path: object) -> str:
    """A workspace-relative path in normal form, or ToolError saying why it is not one."""
    if not isinstance(path, str) or not path or "\x00" in path or path.startswith("/"):
        raise ToolError(f"path must be relative to the workspace, got {path!r:.200}")
    normal = posixpath.normpath(path)
    if normal == ".." or normal.startswith("../"):
        raise WorkspaceUnsafe(f"path {path!r:.200} leaves the workspace")
    return normal


def _explain(exc: OSError, path: str) -> ToolError:
    shown = f"{path!r:.200}"
    if exc.errno == errno.ELOOP:
        return WorkspaceUnsafe(f"{shown} goes through a symbolic link; the workspace tools do not follow links")
    if exc.errno == errno.EXDEV:
        return WorkspaceUnsafe(f"path {shown} leaves the workspace")
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return ToolError(f"no file {shown} in the workspace; use list_files to see what exists")
    if exc.errno == errno.EISDIR:
        return ToolError(f"{shown} is a folder, not a file")
    if exc.errno == errno.ENXIO:
        return WorkspaceUnsafe(f"{shown} is not a regular file")
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return ToolError("the workspace is full (its disk quota is used up); delete files you no longer need")
    return ToolError(f"cannot open {shown}: {exc.strerror}")


class WorkspaceFS:
    """Regular files and folders under `root`, reached only through `openat2` from a descriptor of it.

    Args:
        root: the workspace folder (a host path whose parents the kernel cannot write).
        quota_bytes: bytes the workspace may hold in all, checked by `write_text` where the
            filesystem does not enforce it itself (None: unbounded here).
    """

    def __init__(self, root: str | Path, quota_bytes: int | None = None, enforced_by_mount: bool = False):
        self.root = Path(root)
        self.quota_bytes = quota_bytes
        self.enforced_by_mount = enforced_by_mount
        self._root_fd: int | None = None

    def root_fd(self) -> int:
        if self._root_fd is None:
            self._root_fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        return self._root_fd

    def close(self) -> None:
        if self._root_fd is not None:
            os.close(self._root_fd)
            self._root_fd = None

    # --- opening ---------------------------------------------------------------------------------------
    def open_file(self, path: str, flags: int = os.O_RDONLY) -> tuple[int, os.stat_result]:
        """A descriptor of the regular file at `path` and its stat; ToolError for anything else."""
        normal = normalise(path)
        try:
            fd = openat2(self.root_fd(), normal, flags)
        except OSError as exc:
            raise _explain(exc, path) from None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            kind = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file"
            raise WorkspaceUnsafe(f"{path!r:.200} is {kind}; only regular files can be read")
        return fd, info

    def _open_dir(self, dir_fd: int, name: str) -> int:
        fd = openat2(dir_fd, name, os.O_RDONLY | os.O_DIRECTORY)
        if not stat.S_ISDIR(os.fstat(fd).st_mode):  # O_DIRECTORY already ensures it; kept as the rule
            os.close(fd)
            raise OSError(errno.ENOTDIR, "not a folder", name)
        return fd

    # --- reading ---------------------------------------------------------------------------------------
    def read_bytes(self, path: str, max_bytes: int) -> bytes:
        """The file's bytes; ToolError if it holds more than `max_bytes`."""
        fd, info = self.open_file(path)
        try:
            if info.st_size > max_bytes:
                raise ToolError(f"{path!r:.200} has {info.st_size} bytes, more than {max_bytes}; it cannot be read whole")
            chunks, got = [], 0
            while got <= max_bytes:
                chunk = os.read(fd, min(1 << 20, max_bytes + 1 - got))
                if not chunk:
                    break
                chunks.append(chunk)
                got += len(chunk)
            if got > max_bytes:  # it grew while being read
                raise ToolError(f"{path!r:.200} has more than {max_bytes} bytes; it cannot be read whole")
            return b"".join(chunks)
        finally:
            os.close(fd)

    def read_text(self, path: str, max_chars: int) -> str:
        data = self.read_bytes(path, 4 * max_chars + 4)
        text = data.decode("utf-8", errors="replace")
        if len(text) > max_chars:
            raise ToolError(f"{path!r:.200} has {len(text)} characters, more than {max_chars}; it cannot be read whole")
        return text

    # --- writing ---------------------------------------------------------------------------------------
    def write_bytes(self, path: str, data: bytes, check: Callable[[], None] = lambda: None) -> int:
        """Create or overwrite the regular file at `path` (folders made as needed); returns its size."""
        normal = normalise(path)
        parts = normal.split("/")
        if parts[-1] in (".", ""):
            raise ToolError(f"path {path!r:.200} names a folder, not a file")
        dir_fd = os.dup(self.root_fd())
        try:
            for part in parts[:-1]:  # one component at a time: each is opened beneath the one before
                try:
                    next_fd = self._open_dir(dir_fd, part)
                except FileNotFoundError:
                    try:
                        os.mkdir(part, 0o755, dir_fd=dir_fd)
                    except FileExistsError:
                        pass
                    except OSError as exc:
                        raise _explain(exc, path) from None
                    try:
                        next_fd = self._open_dir(dir_fd, part)
                    except OSError as exc:
                        raise _explain(exc, path) from None
                except OSError as exc:
                    raise _explain(exc, path) from None
                os.close(dir_fd)
                dir_fd = next_fd
            try:
                fd = openat2(dir_fd, parts[-1], os.O_WRONLY | os.O_CREAT, 0o644)
            except OSError as exc:
                raise _explain(exc, path) from None
        finally:
            os.close(dir_fd)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise WorkspaceUnsafe(f"{path!r:.200} is not a regular file; it cannot be written")
            if info.st_nlink != 1:
                raise WorkspaceUnsafe(f"{path!r:.200} has {info.st_nlink} hard links; only a file with one link is written")
            if self.quota_bytes is not None and not self.enforced_by_mount:
                used = self.usage(check)[0] - info.st_size
                if used + len(data) > self.quota_bytes:
                    raise ToolError(f"writing {len(data)} bytes would exceed the workspace quota of {self.quota_bytes} "
                                    f"bytes ({used} in use); delete files you no longer need")
            try:
                os.ftruncate(fd, 0)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            except OSError as exc:
                raise _explain(exc, path) from None
            return len(data)
        finally:
            os.close(fd)

    # --- walking ---------------------------------------------------------------------------------------
    def walk(self, check: Callable[[], None] = lambda: None,
             max_entries: int = MAX_WALK_ENTRIES) -> Iterator[tuple[str, int, bool]]:
        """(relative path, size, is_dir) of every regular file and folder; links and the rest are skipped.

        Folders are opened one by one beneath their parent's descriptor, so a folder swapped for a
        link while the walk runs is skipped, never followed. `check` runs every few entries (a
        deadline); more than `max_entries` entries raise ToolError.
        """
        seen = 0
        check()
        stack = [("", os.dup(self.root_fd()))]
        try:
            while stack:
                prefix, dir_fd = stack.pop()
                try:
                    with os.scandir(dir_fd) as entries:
                        names = sorted(entry.name for entry in entries)
                    for name in names:
                        seen += 1
                        if seen > max_entries:
                            raise ToolError(f"the workspace holds more than {max_entries} entries; "
                                            "it is too large to list or copy")
                        if seen % 256 == 0:
                            check()
                        try:
                            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                        except OSError:
                            continue
                        rel = f"{prefix}{name}"
                        if stat.S_ISREG(info.st_mode):
                            yield rel, info.st_size, False
                        elif stat.S_ISDIR(info.st_mode):
                            try:
                                child = self._open_dir(dir_fd, name)
                            except OSError:
                                continue  # swapped for a link or removed meanwhile
                            stack.append((rel + "/", child))
                            yield rel, 0, True
                finally:
                    os.close(dir_fd)
        finally:
            for _, fd in stack:
                os.close(fd)

    def files(self, check: Callable[[], None] = lambda: None) -> list[tuple[str, int]]:
        return sorted((rel, size) for rel, size, is_dir in self.walk(check) if not is_dir)

    def usage(self, check: Callable[[], None] = lambda: None) -> tuple[int, int]:
        """(bytes in regular files, entries) of the workspace."""
        total = count = 0
        for _, size, _ in self.walk(check):
            total += size
            count += 1
        return total, count

    def copy_to(self, target: str | Path, check: Callable[[], None] = lambda: None,
                max_bytes: int | None = None) -> None:
        """Copy the regular files and folders into `target` (a host-private folder): a frozen view."""
        target = Path(target)
        target.mkdir(parents=True, exist_ok=True)
        copied = 0
        for rel, size, is_dir in self.walk(check):
            destination = target / os.fsdecode(rel)
            if is_dir:
                destination.mkdir(exist_ok=True)
                continue
            limit = max_bytes - copied if max_bytes is not None else size
            try:
                data = self.read_bytes(rel, max(0, limit))
            except ToolError:
                continue  # swapped for something else, or past the bound: the copy leaves it out
            copied += len(data)
            destination.write_bytes(data)


def mount_quota(workspace: Path, quota_bytes: int, max_files: int) -> bool:
    """Mount a tmpfs of `quota_bytes` (and `max_files` inodes) on the empty folder `workspace`.

    The filesystem then bounds every write, the kernel's own included. Needs CAP_SYS_ADMIN; returns
    False where the mount is not allowed (the host-side check in `write_text` still applies).
    """
    options = f"size={int(quota_bytes)},nr_inodes={int(max_files)},mode=0755".encode()
    if _libc.mount(b"progagent-workspace", os.fsencode(workspace), b"tmpfs", 0, options) != 0:
        return False
    return True


def unmount(path: Path) -> None:
    _libc.umount2(os.fsencode(path), 2)  # MNT_DETACH


def deadline_check(deadline: float | None, what: str) -> Callable[[], None]:
    """A `check` for `walk` that raises ToolError once `deadline` (time.monotonic) has passed."""
    def check() -> None:
        if deadline is not None and time.monotonic() > deadline:
            raise ToolError(f"{what} ran past its time limit and was stopped")
    return check
