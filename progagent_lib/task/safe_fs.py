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

A walk holds descriptors only for the folders on its current path (the root and the chain of parents
of the folder it reads), never one per folder waiting its turn: a program can make any number of
sibling folders, and the host must not run out of descriptors listing them. Something that vanished
or was swapped for a link while the walk ran is left out, as a link is; any other failure (out of
descriptors, an I/O error) is raised as `WorkspaceReadError`, because a listing or a copy that drops
an existing file without a word tells the model, or the verifier, that the file is not there.

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
MAX_WALK_DEPTH = 256  # folders nested this deep at most; the walk holds one descriptor per level


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class WorkspaceUnsafe(ToolError):
    """A workspace path names something the host will not open (a link, a FIFO, a path outside)."""


class WorkspaceReadError(ToolError):
    """The host could not read the workspace: out of file descriptors, an I/O error, a folder it may not read.

    Unlike a file that vanished or became a link meanwhile, this is never left out quietly: callers
    that skip what they cannot use (`copy_to`) re-raise it, so a tool reports it and a verifier fails.
    """


_VANISHED = (errno.ENOENT, errno.ENOTDIR)  # removed, or replaced by a file, while the walk ran
_NOT_FOLLOWED = (errno.ELOOP, errno.EXDEV)  # replaced by a link, or a mount: skipped like a link


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
    return _read_error(exc, f"opening {shown}")


def _read_error(exc: OSError, doing: str) -> WorkspaceReadError:
    """The error a tool reports for an OSError the workspace layer does not expect (EMFILE, EIO, ...)."""
    name = str(exc.errno) if exc.errno is None else errno.errorcode.get(exc.errno, str(exc.errno))
    if exc.errno in (errno.EMFILE, errno.ENFILE):
        return WorkspaceReadError(
            f"the host ran out of file descriptors ({name}) {doing}; the workspace could not be read completely"
        )
    return WorkspaceReadError(f"the host could not read the workspace {doing}: {exc.strerror} ({name})")


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

    def _give_to_owner(self, fd: int, info: os.stat_result | None = None) -> None:
        """A file or folder the host made belongs to the workspace's owner: a sandbox's uid while one runs in it
        (see runtime/identity.py), so the program can change what the tools wrote. Only root can give it away."""
        if os.geteuid() != 0:
            return
        owner = os.fstat(self.root_fd())
        info = info or os.fstat(fd)
        if (info.st_uid, info.st_gid) != (owner.st_uid, owner.st_gid):
            os.fchown(fd, owner.st_uid, owner.st_gid)

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
                raise ToolError(
                    f"{path!r:.200} has {info.st_size} bytes, more than {max_bytes}; it cannot be read whole"
                )
            chunks, got = [], 0
            while got <= max_bytes:
                try:
                    chunk = os.read(fd, min(1 << 20, max_bytes + 1 - got))
                except OSError as exc:
                    raise _read_error(exc, f"reading {path!r:.200}") from None
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
        try:
            dir_fd = os.dup(self.root_fd())
        except OSError as exc:
            raise _read_error(exc, "opening the workspace") from None
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
                    self._give_to_owner(next_fd)
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
            self._give_to_owner(fd, info)
            if info.st_nlink != 1:
                raise WorkspaceUnsafe(
                    f"{path!r:.200} has {info.st_nlink} hard links; only a file with one link is written"
                )
            if self.quota_bytes is not None and not self.enforced_by_mount:
                used = self.usage(check)[0] - info.st_size
                if used + len(data) > self.quota_bytes:
                    raise ToolError(
                        f"writing {len(data)} bytes would exceed the workspace quota of {self.quota_bytes} "
                        f"bytes ({used} in use); delete files you no longer need"
                    )
            try:
                os.ftruncate(fd, 0)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            except OSError as exc:
                raise _explain(exc, path) from None
            return len(data)
        finally:
            os.close(fd)

    # --- walking ---------------------------------------------------------------------------------------
    def walk(
        self,
        check: Callable[[], None] = lambda: None,
        max_entries: int = MAX_WALK_ENTRIES,
        max_depth: int = MAX_WALK_DEPTH,
    ) -> Iterator[tuple[str, int, bool]]:
        """(relative path, size, is_dir) of every regular file and folder; links and the rest are skipped.

        Depth first: a folder's entries come in name order, then its subfolders are walked one by one.
        A folder is opened only when it is walked, beneath its parent's descriptor, and closed once its
        subfolders are done, so the walk holds one descriptor per level of the current path (at most
        `max_depth` + 2 with the one `scandir` takes), however many folders wait. A folder swapped for a
        link while the walk runs is skipped, never followed; an entry that vanished is left out.

        `check` runs every few entries (a deadline). Raises ToolError past `max_entries` entries or
        `max_depth` levels, and WorkspaceReadError for any other failure (EMFILE, EIO, EACCES, ...).
        """
        seen = 0
        check()
        try:
            current: int | None = os.dup(self.root_fd())
        except OSError as exc:
            raise _read_error(exc, "opening the workspace") from None
        prefix = ""
        # The folders on the current path: (prefix, descriptor, names of the subfolders not walked yet).
        path: list[tuple[str, int, Iterator[str]]] = []
        try:
            while current is not None:
                folders = []
                for name in self._names(current, prefix, check, max_entries - seen):
                    seen += 1
                    if seen > max_entries:
                        raise ToolError(
                            f"the workspace holds more than {max_entries} entries; it is too large to list or copy"
                        )
                    if seen % 256 == 0:
                        check()
                    try:
                        info = os.stat(name, dir_fd=current, follow_symlinks=False)
                    except OSError as exc:
                        if exc.errno in _VANISHED:
                            continue
                        raise _read_error(exc, f"reading {prefix + name!r:.200}") from None
                    rel = f"{prefix}{name}"
                    if stat.S_ISREG(info.st_mode):
                        yield rel, info.st_size, False
                    elif stat.S_ISDIR(info.st_mode):
                        folders.append(name)
                        yield rel, 0, True
                path.append((prefix, current, iter(folders)))
                current = None
                while path and current is None:  # the next folder: the deepest one with a subfolder left
                    parent, parent_fd, pending = path[-1]
                    subfolder = next(pending, None)
                    if subfolder is None:
                        path.pop()
                        os.close(parent_fd)
                        continue
                    if len(path) > max_depth:
                        raise ToolError(
                            f"the workspace nests folders more than {max_depth} levels deep "
                            f"(at {parent + subfolder!r:.200}); it is too deep to list or copy"
                        )
                    try:
                        current = self._open_dir(parent_fd, subfolder)
                    except OSError as exc:
                        if exc.errno in _VANISHED or exc.errno in _NOT_FOLLOWED:
                            continue  # removed, or swapped for a file or a link, since it was listed
                        raise _read_error(exc, f"opening the folder {parent + subfolder!r:.200}") from None
                    prefix = f"{parent}{subfolder}/"
        finally:
            if current is not None:
                os.close(current)
            for _, fd, _ in path:
                os.close(fd)

    @staticmethod
    def _names(dir_fd: int, prefix: str, check: Callable[[], None], room: int) -> list[str]:
        """The sorted entry names of the folder `dir_fd`, at most `room` + 1 of them (the walk's bound then says so)."""
        names: list[str] = []
        try:
            with os.scandir(dir_fd) as entries:  # scandir reads a duplicate: one more descriptor meanwhile
                for entry in entries:
                    names.append(entry.name)
                    if len(names) > room:
                        break
                    if len(names) % 4096 == 0:
                        check()
        except OSError as exc:
            raise _read_error(exc, f"listing the folder {prefix or '.'!r:.200}") from None
        return sorted(names)

    def files(self, check: Callable[[], None] = lambda: None) -> list[tuple[str, int]]:
        return sorted((rel, size) for rel, size, is_dir in self.walk(check) if not is_dir)

    def usage(self, check: Callable[[], None] = lambda: None) -> tuple[int, int]:
        """(bytes in regular files, entries) of the workspace."""
        total = count = 0
        for _, size, _ in self.walk(check):
            total += size
            count += 1
        return total, count

    def copy_to(
        self, target: str | Path, check: Callable[[], None] = lambda: None, max_bytes: int | None = None
    ) -> None:
        """Copy the regular files and folders into `target` (a host-private folder): a frozen view.

        The kernel copies each file's data (`sendfile`), extent by extent, so the host's memory stays flat
        whatever the files hold, and a sparse file costs only the data it has. Only what is not a regular
        file or a folder any more (it vanished, or became a link or a FIFO meanwhile) is left out; anything
        else the copy cannot do raises, because a verifier reading a copy without a file says "not found"
        for a file that is there: WorkspaceReadError for a host failure (EMFILE, EIO), ToolError past
        `max_bytes` of data or past the walk's bounds.
        """
        target = Path(target)
        target.mkdir(parents=True, exist_ok=True)
        copied = 0
        for rel, _, is_dir in self.walk(check):
            destination = target / os.fsdecode(rel)
            if is_dir:
                try:
                    destination.mkdir(exist_ok=True)
                except OSError as exc:
                    raise _read_error(exc, f"copying the folder {rel!r:.200}") from None
                continue
            try:
                fd, info = self.open_file(rel)
            except WorkspaceReadError:
                raise
            except ToolError:
                continue  # no longer a regular file: not part of the state
            try:
                copied += _copy_data(fd, info.st_size, destination, check, rel, copied, max_bytes)
            finally:
                os.close(fd)


def _copy_data(
    fd: int,
    size: int,
    destination: Path,
    check: Callable[[], None],
    rel: str,
    copied_before: int,
    max_bytes: int | None,
) -> int:
    """Copy the first `size` bytes of the open file `fd` into a new file, holes kept; returns the data bytes copied.

    ToolError once the copy's data would pass `max_bytes` (with `copied_before` already copied),
    WorkspaceReadError if the host fails.
    """
    try:
        out = os.open(destination, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise _read_error(exc, f"copying {rel!r:.200}") from None
    copied = 0
    try:
        for start, end in _extents(fd, size):
            check()
            if max_bytes is not None and copied_before + copied + end - start > max_bytes:
                raise ToolError(
                    f"the workspace's files hold more than {max_bytes} bytes of data; the copy stopped at {rel!r:.200}"
                )
            os.lseek(out, start, os.SEEK_SET)
            copied += _send(out, fd, start, end)
        os.ftruncate(out, size)  # a hole at the end, or a file that shrank meanwhile
    except OSError as exc:
        raise _read_error(exc, f"copying {rel!r:.200}") from None
    finally:
        os.close(out)
    return copied


def _extents(fd: int, size: int) -> Iterator[tuple[int, int]]:
    """The (start, end) byte ranges of `fd` below `size` that hold data (SEEK_DATA / SEEK_HOLE)."""
    offset = 0
    while offset < size:
        try:
            start = os.lseek(fd, offset, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # no data past `offset`
                return
            raise
        if start >= size:
            return
        end = min(size, os.lseek(fd, start, os.SEEK_HOLE))
        yield start, end
        offset = end


def _send(out: int, fd: int, start: int, end: int) -> int:
    """Copy bytes [start, end) of `fd` to `out`'s position by the kernel; returns how many (fewer if `fd` shrank)."""
    position = start
    while position < end:
        sent = os.sendfile(out, fd, position, min(end - position, 1 << 30))
        if sent == 0:
            break
        position += sent
    return position - start


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
