"""Confinement of the kernel and of terminal commands, set up with the Linux kernel's own mechanisms.

A confined process (see `kernel_side/launcher.py`, which runs inside it before the real program):
- runs as an unprivileged uid/gid of its own, leased from a reserved range (`identity.py`), with every
  capability dropped for good (secure bits, empty bounding set, no_new_privs): it cannot chmod, chown,
  utime or set extended attributes on anything it does not own, and it owns only its writable folders;
- sees a private filesystem view (its own mount namespace, `pivot_root` onto a read-only tmpfs): the
  interpreter and system libraries read-only, its workspace, tmp and ipc folders read-write, nothing
  else (the task folder, the database, other episodes and the runtime folder do not exist for it);
- writes only to size- and inode-bounded filesystems: its workspace (the episode's quota tmpfs) and the
  sandbox's own tmpfs (`tmp/` and `ipc/`, `ProcessLimits.tmp_bytes` in all);
- is under a Landlock ruleset (ABI >= 6): it may read the Python installation, the venv and system
  libraries, write only its workspace and a private temporary folder, make no TCP connection, signal
  no process outside its own sandbox and reach no abstract unix socket outside it. Everything else —
  the task folder, the project tree, other episodes, the environment cache — is unreadable;
- lives in its own network namespace (no interface but a down loopback), IPC namespace and PID
  namespace (the launcher waits outside; a small init is pid 1, the program pid 2), with no /proc;
- is bounded by rlimits (address space, CPU time, file size, open files, no core dumps), by a pids
  cgroup (the process count; rlimit NPROC does not bind uid 0) and, where the machine allows, by a
  memory cgroup (all its processes together). The pids cgroup also lets the host kill every process
  the sandbox ever forked;
- cannot create unix-domain sockets, use io_uring, make a user namespace, use keyrings, inotify or
  fanotify, or reach other processes' memory (seccomp, see `kernel_side/seccomp.py`).

The interpreter may live under a folder the sandbox's uid could not enter (/root, mode 0700, here): in
the view, the folders above each mounted path are the view's own (mode 0755), so it starts all the same.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Collection

from ..task.installed_pool import INSTALL_FOLDERS, installed_pool
from ..task.task import pid_alive
from . import identity as identities
from . import kernel_side
from .identity import Identity, IdentityUnavailable

GiB = 1 << 30
MiB = 1 << 20
# The launcher's command line: import `kernel_side/launcher.py` from the sandbox's copy of the package
# (argv[1], see `kernel_side/__init__.py`) and run it on the configuration (argv[2]).
LAUNCH = (
    f"import sys; sys.path.insert(0, sys.argv[1]); from {kernel_side.PACKAGE}.launcher import main; main(sys.argv[2])"
)
MS_NOSUID, MS_NODEV, MS_BIND, MS_SHARED = 2, 4, 4096, 1 << 20
CGROUP_PIDS_ROOT = Path("/sys/fs/cgroup/pids")
CGROUP_MEMORY_ROOT = Path("/sys/fs/cgroup/memory")
RUNTIME_ROOT = Path(os.environ.get("PROGAGENT_RUNTIME_DIR", Path(tempfile.gettempdir()) / "progagent-runtime"))

# Readable by every sandbox: the interpreter, its libraries and a few harmless system files.
SYSTEM_READ_PATHS = [
    "/usr",
    "/lib",
    "/lib64",
    "/lib32",
    "/bin",
    "/sbin",
    "/sys/devices/system/cpu",
    "/dev/urandom",
    "/dev/random",
    "/dev/zero",
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/resolv.conf",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/mime.types",
    "/etc/os-release",
    "/etc/bash.bashrc",
    "/etc/inputrc",
    "/etc/profile",
    "/etc/alternatives",
    "/etc/matplotlibrc",
    "/etc/fonts",
]
SYSTEM_WRITE_PATHS = ["/dev/null"]


class SandboxUnavailable(RuntimeError):
    """The confinement cannot be set up on this machine (kernel too old, not root, no cgroup...)."""


@dataclass
class ProcessLimits:
    """Resource bounds of one sandbox (the kernel and everything it starts)."""

    memory_bytes: int = 4 * GiB  # address space per process (RLIMIT_AS)
    cpu_seconds: int = 3600  # CPU time per process (RLIMIT_CPU); the kernel lives a whole episode
    file_bytes: int = 512 * MiB  # largest file a process may write (RLIMIT_FSIZE)
    open_files: int = 1024
    max_processes: int = 64  # processes + threads in the sandbox's pids cgroup
    tmp_bytes: int = 128 * MiB  # the sandbox's own tmpfs (its tmp/ and ipc/ folders) holds at most this much
    tmp_files: int = 4096  # ... and this many files and folders

    def rlimits(self) -> dict[str, int]:
        return {
            "RLIMIT_AS": self.memory_bytes,
            "RLIMIT_CPU": self.cpu_seconds,
            "RLIMIT_FSIZE": self.file_bytes,
            "RLIMIT_NOFILE": self.open_files,
            "RLIMIT_CORE": 0,
        }


def hidden_paths() -> list[str]:
    """Folders inside the readable interpreter that a sandbox must not see: a pip-installed task pool (its oracles
    and verifiers lie in site-packages). The view covers each with an empty tmpfs (`kernel_side/launcher.py`)."""
    pool = installed_pool()
    return [str(pool)] if pool is not None and pool.parent.name in INSTALL_FOLDERS else []


def python_read_paths() -> list[str]:
    """The interpreter installation and the venv (but not the project tree the venv may sit in)."""
    paths = {
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sys.base_exec_prefix,
        str(Path(sys.executable).resolve().parent),
    }
    return sorted(paths)


_landlock_abi: int | None = None


def landlock_abi() -> int:
    global _landlock_abi
    if _landlock_abi is None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        _landlock_abi = int(libc.syscall(444, None, 0, 1))
    return _landlock_abi


def check_available() -> None:
    """Raise SandboxUnavailable with what to do if this machine cannot confine a kernel."""
    if sys.platform != "linux":
        raise SandboxUnavailable(
            "the sandbox needs Linux (Landlock, namespaces, cgroups); pass unsafe_no_sandbox=True to run unconfined"
        )
    if os.geteuid() != 0:
        raise SandboxUnavailable(
            "the sandbox needs root (network namespace, pids cgroup); run as root (e.g. in a container) "
            "or pass unsafe_no_sandbox=True to run the kernel unconfined"
        )
    abi = landlock_abi()
    if abi < 6:
        raise SandboxUnavailable(
            f"Landlock ABI {abi} found, 6 needed (Linux >= 6.12 with landlock in the LSM list); "
            "pass unsafe_no_sandbox=True to run unconfined"
        )
    if not (CGROUP_PIDS_ROOT / "cgroup.procs").exists():
        raise SandboxUnavailable(
            f"no pids cgroup at {CGROUP_PIDS_ROOT} (needed to bound processes); "
            "mount the cgroup v1 pids controller or pass unsafe_no_sandbox=True"
        )
    if not Path("/proc/self/ns/mnt").exists():
        raise SandboxUnavailable(
            "no mount namespaces (/proc/self/ns/mnt), needed for the sandbox's private "
            "filesystem view; pass unsafe_no_sandbox=True to run unconfined"
        )
    try:
        identities.check_range()
    except IdentityUnavailable as exc:
        raise SandboxUnavailable(f"no unprivileged uid for the sandbox: {exc}") from None


def _own_memory_cgroup() -> Path | None:
    """This process's cgroup v1 memory folder, if there is one we may create children in."""
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if "memory" in controllers.split(","):
                folder = CGROUP_MEMORY_ROOT / path.lstrip("/")
                return folder if os.access(folder, os.W_OK) else None
    except OSError:
        return None
    return None


def _memory_cgroup(name: str, memory_bytes: int) -> Path | None:
    """A child memory cgroup bounding the whole sandbox's memory (all its processes together).

    Made under this process's own memory cgroup, so the container's accounting still covers it.
    Optional: rlimits bound each process anyway; this adds a bound on their sum when the machine
    offers a writable cgroup v1 memory controller.
    """
    parent = _own_memory_cgroup()
    if parent is None:
        return None
    path = parent / f"progagent-{name}"
    try:
        path.mkdir()
        (path / "memory.limit_in_bytes").write_text(str(memory_bytes))
    except OSError:
        _rmdir_cgroup(path)
        return None
    return path


def _rmdir_cgroup(path: Path) -> None:
    for _ in range(200):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:  # processes not reaped yet
            time.sleep(0.01)


class ProcessGroup:
    """A pids cgroup holding one sandbox: bounds its process count and can kill all of it."""

    def __init__(self, max_processes: int, memory_bytes: int | None = None):
        # The host's pid in the name lets a later host clean up after one that died (`sweep_orphans`).
        self.path = CGROUP_PIDS_ROOT / "progagent" / f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        try:
            self.path.mkdir(parents=True)
            (self.path / "pids.max").write_text(str(max_processes))
        except OSError as exc:
            raise SandboxUnavailable(
                f"cannot create the pids cgroup {self.path} ({exc}); the sandbox needs a writable "
                "cgroup v1 pids hierarchy, or pass unsafe_no_sandbox=True"
            ) from exc
        self.memory_path = _memory_cgroup(self.path.name, memory_bytes) if memory_bytes else None

    def procs_files(self) -> list[str]:
        files = [str(self.path / "cgroup.procs")]
        if self.memory_path is not None:
            files.append(str(self.memory_path / "cgroup.procs"))
        return files

    def count(self) -> int:
        try:
            return int((self.path / "pids.current").read_text())
        except (OSError, ValueError):
            return 0

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def kill_all(self, except_pids: Collection[int] = (), timeout: float = 5.0) -> None:
        """SIGKILL every process in the group (a fork bomb may keep forking: repeat until empty)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pids = [p for p in self.pids() if p not in except_pids]
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.005)

    def remove(self) -> None:
        self.kill_all()
        memory_path = getattr(self, "memory_path", None)
        if memory_path is not None:
            _rmdir_cgroup(memory_path)
        _rmdir_cgroup(self.path)


def main_pids(process: subprocess.Popen) -> tuple[int, ...]:
    """Host pids of what a confined `popen` started: the launcher's waiter, the sandbox's pid 1, the program.

    Anything else in the sandbox's cgroup was started by the program. The waiter's only child is pid 1,
    and pid 1's first child is the program (orphans it adopts are listed after it), so the Linux
    kernel's children lists name them; shorter for a moment right after the start, before the forks.
    """
    pids = [process.pid]
    while len(pids) < 3:
        try:
            children = Path(f"/proc/{pids[-1]}/task/{pids[-1]}/children").read_text().split()
        except OSError:
            break
        if not children:
            break
        pids.append(int(children[0]))
    return tuple(pids)


def _unmount(path: Path) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.umount2(str(path).encode(), 2)  # MNT_DETACH


_swept = False


def sweep_orphans() -> None:
    """Once per process: kill sandboxes and remove folders left by hosts that died without closing them."""
    global _swept
    if _swept:
        return
    _swept = True
    groups = CGROUP_PIDS_ROOT / "progagent"
    for path in groups.iterdir() if groups.is_dir() else []:
        owner = path.name.split("-", 1)[0]
        if path.is_dir() and owner.isdigit() and not pid_alive(int(owner)):
            group = ProcessGroup.__new__(ProcessGroup)
            group.path = path
            group.remove()
    memory_parent = _own_memory_cgroup()
    for path in memory_parent.glob("progagent-*") if memory_parent is not None else []:
        owner = path.name.split("-")[1]
        if owner.isdigit() and not pid_alive(int(owner)):
            _rmdir_cgroup(path)
    for path in RUNTIME_ROOT.iterdir() if RUNTIME_ROOT.is_dir() else []:
        parts = path.name.split("-")
        if len(parts) >= 3 and parts[1].isdigit() and not pid_alive(int(parts[1])):
            _remove_root(path)
    identities.sweep_leases(RUNTIME_ROOT, pid_alive)


def _remove_root(root: Path) -> None:
    """Remove a sandbox's folder: the workspace slot's mount, then its tmpfs, then the folder itself."""
    slot = root / "bind" / "workspace"
    if os.path.ismount(slot):
        _unmount(slot)
    if os.path.ismount(slot):  # never delete through a mount: it is an episode's workspace
        return
    if os.path.ismount(root):
        _unmount(root)
    if os.path.ismount(root):
        return
    shutil.rmtree(root, ignore_errors=True)


class Confinement(ABC):
    """How a sandbox's processes are started and held: the one place that differs between confined and not.

    Two implementations, chosen once by `confinement_for(unsafe_no_sandbox)`: `LandlockConfinement`
    (the default; raises SandboxUnavailable where the machine cannot confine) and `Unconfined` (only
    when the caller asked for `unsafe_no_sandbox=True`). `Sandbox`, `KernelSession`, `KernelPool` and
    `run_terminal` ask it, and never test which one they hold.
    """

    name: str

    @abstractmethod
    def check_available(self) -> None:
        """Raise SandboxUnavailable (saying what to do) if this confinement cannot be set up here."""

    @abstractmethod
    def process_group(self, limits: ProcessLimits) -> ProcessGroup | None:
        """The cgroup that bounds and can kill the sandbox's processes (None: only the process group)."""

    @abstractmethod
    def popen(
        self,
        sandbox: "Sandbox",
        argv: list[str],
        env: dict[str, str],
        pass_fds: tuple[int, ...],
        deny_unix_sockets: bool,
        **popen_kwargs,
    ) -> subprocess.Popen:
        """Start `argv` with `env` in `sandbox.cwd`."""

    @abstractmethod
    def mount_workspace(self, slot: Path, workspace: Path) -> bool:
        """Make `workspace` reachable at `slot` (a pooled sandbox); True when it is a mount to undo."""

    @abstractmethod
    def main_pids(self, process: subprocess.Popen) -> tuple[int, ...]:
        """Host pids of what `popen` started that are not the program's own children, the program last."""

    main_pid_count: int  # how many `main_pids` names once everything has started

    def lease_identity(self) -> Identity | None:
        """The uid/gid a new sandbox's processes run as (None: the host's own)."""
        return None

    def prepare_root(self, root: Path, limits: ProcessLimits) -> bool:
        """Make `root` (an empty folder) the sandbox's own bounded storage; True when it is a mount to undo."""
        return False

    def kernel_environment(self) -> dict[str, str]:
        """Variables the kernel gets besides the scrubbed environment."""
        return {}

    def kernel_deny_unix_sockets(self) -> bool:
        """Whether the kernel refuses unix sockets to itself once its own exist (see `kernel_side/seccomp.py`)."""
        return False


class LandlockConfinement(Confinement):
    """Landlock, seccomp, namespaces, dropped capabilities, rlimits and cgroups (see `kernel_side/launcher.py`)."""

    name = "landlock"
    main_pid_count = 3  # the launcher's waiter, the sandbox's pid 1, the program

    def check_available(self) -> None:
        check_available()

    def process_group(self, limits: ProcessLimits) -> ProcessGroup:
        return ProcessGroup(limits.max_processes, limits.memory_bytes)

    def popen(self, sandbox, argv, env, pass_fds, deny_unix_sockets, **popen_kwargs):
        config = sandbox.launcher_config(argv, env, list(pass_fds), deny_unix_sockets)
        launcher = [sys.executable, "-I", "-S", "-c", LAUNCH, str(sandbox.lib), json.dumps(config)]
        return subprocess.Popen(
            launcher,
            cwd=sandbox.root,
            env={"PATH": "/usr/bin:/bin"},
            pass_fds=pass_fds,
            start_new_session=True,
            **popen_kwargs,
        )

    def mount_workspace(self, slot: Path, workspace: Path) -> bool:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.mount(str(workspace).encode(), str(slot).encode(), None, MS_BIND, None) != 0:
            err = ctypes.get_errno()
            raise SandboxUnavailable(
                f"cannot bind-mount {workspace} onto {slot}: {os.strerror(err)}; "
                "a kernel pool needs root with CAP_SYS_ADMIN"
            )
        return True

    def main_pids(self, process: subprocess.Popen) -> tuple[int, ...]:
        return main_pids(process)

    def kernel_deny_unix_sockets(self) -> bool:
        return True

    def lease_identity(self) -> Identity:
        try:
            return identities.lease(RUNTIME_ROOT)
        except IdentityUnavailable as exc:
            raise SandboxUnavailable(f"no unprivileged uid for the sandbox: {exc}") from None

    def prepare_root(self, root: Path, limits: ProcessLimits) -> bool:
        """A tmpfs of `limits.tmp_bytes` on `root`, shared, so that a workspace the host binds into it later
        (a pooled sandbox's slot) reaches the sandbox's mount namespace too."""
        options = f"size={int(limits.tmp_bytes)},nr_inodes={int(limits.tmp_files)},mode=0700".encode()
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.mount(b"progagent-sandbox", str(root).encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options) != 0:
            err = ctypes.get_errno()
            raise SandboxUnavailable(
                f"cannot mount the sandbox's bounded tmpfs on {root}: {os.strerror(err)}; "
                "the sandbox needs root with CAP_SYS_ADMIN, or pass unsafe_no_sandbox=True"
            )
        if libc.mount(None, str(root).encode(), None, MS_SHARED, None) != 0:
            err = ctypes.get_errno()
            _unmount(root)
            raise SandboxUnavailable(f"cannot make {root} a shared mount: {os.strerror(err)}")
        return True


class Unconfined(Confinement):
    """No confinement at all: the program runs as the host, in the sandbox's folders, with the scrubbed environment.

    Only for `unsafe_no_sandbox=True`: a program can read and write anything the host can.
    """

    name = "none"
    main_pid_count = 1

    def check_available(self) -> None:
        pass

    def process_group(self, limits: ProcessLimits) -> None:
        return None

    def popen(self, sandbox, argv, env, pass_fds, deny_unix_sockets, **popen_kwargs):
        return subprocess.Popen(
            argv, cwd=sandbox.cwd, env=env, pass_fds=pass_fds, start_new_session=True, **popen_kwargs
        )

    def mount_workspace(self, slot: Path, workspace: Path) -> bool:
        slot.rmdir()
        slot.symlink_to(workspace)
        return False

    def main_pids(self, process: subprocess.Popen) -> tuple[int, ...]:
        return (process.pid,)

    def kernel_environment(self) -> dict[str, str]:
        # Nothing else ends an unconfined kernel when this host goes away: ipykernel's own parent poller does.
        return {"JPY_PARENT_PID": str(os.getpid())}


CONFINEMENTS: dict[str, type[Confinement]] = {"landlock": LandlockConfinement, "none": Unconfined}


def confinement_for(unsafe_no_sandbox: bool) -> Confinement:
    """The confinement a caller asked for: Landlock unless it passed `unsafe_no_sandbox=True`."""
    return CONFINEMENTS["none" if unsafe_no_sandbox else "landlock"]()


@dataclass
class Sandbox:
    """Folders and bounds of one process tree under a `Confinement`; `popen(argv)` starts a program inside it.

    Layout of `root` (host-owned; confined, a tmpfs of `limits.tmp_bytes`): `tmp/` the private temporary
    folder and `ipc/` the kernel's zmq sockets and connection file (writable inside, owned by the
    sandbox's uid), `bind/workspace/` an empty slot where a pooled kernel's workspace is bind-mounted
    later, `lib/` the sandbox's copy of `kernel_side` (read-only inside), `view/` the mountpoint of the
    sandbox's private root (see `kernel_side/launcher.py`), `host/` nothing the sandbox can reach.

    `identity`: the uid/gid its processes run as; by default a new one is leased for this sandbox and
    released at `cleanup`. Pass the identity of another live sandbox (an episode's kernel) to run a
    program of the same episode (its terminal commands) as the same uid.
    """

    workspace: Path | None = None  # None: a pooled sandbox, bound to a workspace later via the slot
    limits: ProcessLimits = field(default_factory=ProcessLimits)
    confinement: Confinement = field(default_factory=LandlockConfinement)
    extra_read_paths: list[str] = field(default_factory=list)
    identity: Identity | None = None

    def __post_init__(self) -> None:
        self.confinement.check_available()
        RUNTIME_ROOT.mkdir(parents=True, exist_ok=True, mode=0o700)
        sweep_orphans()
        self.root = Path(tempfile.mkdtemp(prefix=f"sb-{os.getpid()}-", dir=RUNTIME_ROOT))
        self.group = None
        self.mounted = False
        self.owns_identity = self.identity is None
        self.lent: tuple[Path, int, int] | None = None  # a workspace chowned to this sandbox, and its owner before
        try:
            self.root_mounted = self.confinement.prepare_root(self.root, self.limits)
            if self.identity is None:
                self.identity = self.confinement.lease_identity()
            self._make_folders()
            self.group = self.confinement.process_group(self.limits)
        except BaseException:
            self.cleanup()
            raise

    def _make_folders(self) -> None:
        for sub in ("tmp", "ipc", "bind", "bind/workspace", "host", "lib", "view"):
            (self.root / sub).mkdir()
        self.root.chmod(0o755)  # the sandbox's uid must pass through it to its own folders (in its view, too)
        self.tmp, self.ipc, self.host, self.lib = (self.root / s for s in ("tmp", "ipc", "host", "lib"))
        self.host.chmod(0o700)
        kernel_side.copy_into(self.lib)
        # Landlock skips the mountpoint itself when a path walk crosses a mount, so the rule that
        # must cover a workspace mounted on the slot sits on the slot's parent, `bind/`.
        self.bind_root = self.root / "bind"
        self.slot = self.bind_root / "workspace"
        if self.identity is not None:
            for folder in (self.tmp, self.ipc, self.slot):
                os.chown(folder, self.identity.uid, self.identity.gid)
                folder.chmod(0o700)
            if self.workspace is not None and self.owns_identity:
                self._lend(self.workspace)

    @property
    def cwd(self) -> Path:
        return self.workspace if self.workspace is not None else self.slot

    def environment(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """A scrubbed environment: nothing of the host's leaks in (no keys, no paths to the project)."""
        bin_dir = str(Path(sys.executable).parent)
        env = {
            "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.tmp),
            "TMPDIR": str(self.tmp),
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
            "IPYTHONDIR": str(self.tmp / ".ipython"),
            "MPLCONFIGDIR": str(self.tmp / ".mpl"),
            "MPLBACKEND": "Agg",
            "JUPYTER_RUNTIME_DIR": str(self.tmp / ".jupyter"),
            "JUPYTER_PLATFORM_DIRS": "1",
            "TERM": "dumb",
            "NO_COLOR": "1",
            # glibc reserves 64 MiB of address space per thread arena; with RLIMIT_AS that would
            # leave a threaded kernel little room for the program's own data.
            "MALLOC_ARENA_MAX": "2",
        }
        env.update(extra or {})
        return env

    def launcher_config(
        self, argv: list[str], env: dict[str, str], inherit_fds: list[int], deny_unix_sockets: bool = True
    ) -> dict:
        write_paths = [str(self.tmp), str(self.ipc), str(self.bind_root), *SYSTEM_WRITE_PATHS]
        if self.workspace is not None:
            write_paths.append(str(self.workspace))
        return {
            "cgroup_procs": self.group.procs_files() if self.group else [],
            "rlimits": self.limits.rlimits(),
            "read_paths": [*python_read_paths(), *SYSTEM_READ_PATHS, str(self.lib), *self.extra_read_paths],
            "write_paths": write_paths,
            "view": str(self.root / "view"),
            "hidden_paths": hidden_paths(),
            "identity": [self.identity.uid, self.identity.gid] if self.identity is not None else None,
            "cwd": str(self.cwd),
            "argv": argv,
            "env": env,
            "inherit_fds": inherit_fds,
            "deny_unix_sockets": deny_unix_sockets,
        }

    def popen(
        self,
        argv: list[str],
        *,
        env: dict[str, str] | None = None,
        pass_fds: tuple[int, ...] = (),
        deny_unix_sockets: bool = True,
        **popen_kwargs,
    ) -> subprocess.Popen:
        """Start `argv` inside the sandbox, under its confinement.

        `deny_unix_sockets=False` is for the kernel, which must bind its zmq sockets first and then
        installs the same filter on itself (`kernel_side/startup.py`).
        """
        env = env if env is not None else self.environment()
        return self.confinement.popen(self, argv, env, pass_fds, deny_unix_sockets, **popen_kwargs)

    def kill_all(self, process: subprocess.Popen | None = None, except_pids: Collection[int] = ()) -> None:
        """Kill every process of the sandbox but `except_pids` (without a cgroup: `process`'s process group)."""
        if self.group is not None:
            self.group.kill_all(except_pids=except_pids)
        elif process is not None and process.pid not in except_pids and process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def stray_pids(self, keep: Collection[int]) -> list[int]:
        """Processes of the sandbox other than `keep` (what a program left behind); none known without a cgroup."""
        return [pid for pid in self.group.pids() if pid not in keep] if self.group is not None else []

    # --- binding a pooled sandbox to an episode's workspace ----------------------------------------
    def bind_workspace(self, workspace: Path) -> None:
        """Make `workspace` reachable through the slot (a bind mount under Landlock: its rule on the slot covers it).

        The rules hold on the slot's file hierarchy, so the sandbox reaches the workspace through the
        slot path and never through its real path (whose parents, with the episode's database, stay
        out of reach). The mount propagates into the running sandbox's private view (the root is shared).
        """
        if self.workspace is not None:
            raise RuntimeError("this sandbox is already bound to a workspace")
        if self.identity is not None:
            self._lend(workspace)
        self.mounted = self.confinement.mount_workspace(self.slot, workspace)
        self.workspace_source = workspace

    def _lend(self, workspace: Path) -> None:
        """Chown `workspace` to the sandbox's uid for its life; `cleanup` gives it back to its owner."""
        assert self.identity is not None  # lent only by a sandbox with an identity of its own (bind_workspace)
        info = os.stat(workspace)
        self.lent = (workspace, info.st_uid, info.st_gid)
        identities.chown_tree(workspace, self.identity.uid, self.identity.gid)

    def cleanup(self) -> None:
        if self.group is not None:
            self.group.remove()
            self.group = None
        if self.lent is not None:  # every process is dead: the tree holds still while it is given back
            workspace, uid, gid = self.lent
            self.lent = None
            identities.chown_tree(workspace, uid, gid)
        if self.mounted:
            _unmount(self.slot)
            self.mounted = False
        if self.root.exists():
            _remove_root(self.root)
        if self.owns_identity and self.identity is not None:
            identities.release(RUNTIME_ROOT, self.identity)
            self.owns_identity = False
