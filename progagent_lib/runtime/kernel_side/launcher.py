"""The confinement launcher: runs as the first code of a sandboxed child, then execs the real program.

The host starts `python -I -S -c LAUNCH LIB CONFIG_JSON` (`sandbox.LAUNCH`), which imports this module
from the sandbox's own copy of the package under LIB (see `kernel_side/__init__.py`) and calls
`main(CONFIG_JSON)`: the child needs nothing from the project tree. It depends on the standard
library and `seccomp.py` only and must stay that way.

Order matters: every step that needs root's capabilities (joining the cgroup, new namespaces, the
private filesystem view, secure bits, the change of uid) happens before the capabilities are dropped;
Landlock comes last because it forbids the writes the earlier steps do.

The private filesystem view (`build_view`): a mount namespace whose root is a small read-only tmpfs
holding only the paths the sandbox may use, each bind-mounted at the same path as on the host (so no
path changes meaning): the interpreter and its libraries read-only, the sandbox's own writable folders
(its workspace, its tmp, its ipc folder) read-write. Everything else does not exist in the view:
`stat` of the task folder, the database, other episodes or the runtime folder gives ENOENT. The old
root is detached after `pivot_root`, so no path leads back to it.

The sandbox has its own PID namespace. The launcher stays outside it as a small waiter, so that the
host's `Popen` keeps a process it can wait for and signal; its child is pid 1 inside (a small init
that reaps orphans), whose child, pid 2, becomes the program. Both relay the signals the host sends
(SIGINT interrupts a program) down to the program and end with its exit status; the waiter kills
the sandbox if the host goes away. When pid 1 ends, the Linux kernel kills every process of the
namespace.
"""

import ctypes
import json
import os
import resource
import signal
import sys

from .seccomp import install_filter

CLONE_NEWNET = 0x40000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_SLAVE = 1, 2, 4, 32, 4096, 1 << 19
MS_REC = 16384
MNT_DETACH = 2
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
VIEW_OPTIONS = "size=1m,nr_inodes=4096,mode=0755"  # the view's own root: folders and empty mountpoints only
PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
# SECBIT_NOROOT | _LOCKED, SECBIT_NO_SETUID_FIXUP_LOCKED (the fix-up stays on: the change of uid below clears every
# capability), SECBIT_KEEP_CAPS_LOCKED (off), NO_CAP_AMBIENT_RAISE | _LOCKED: no capability comes back, by exec or uid.
SECURE_BITS = 0x01 | 0x02 | 0x08 | 0x20 | 0x40 | 0x80
SYS_CAPSET = 126
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446

FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FS_TRUNCATE, FS_IOCTL_DEV = 1 << 14, 1 << 15
FILE_ONLY_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
READ_RIGHTS = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
# Landlock ABI -> every filesystem right it knows (ABI 2 adds REFER, 3 TRUNCATE, 5 IOCTL_DEV).
FS_ALL_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1}
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def fail(step, detail=""):
    err = ctypes.get_errno()
    sys.stderr.write(f"progagent-sandbox: {step} failed: {os.strerror(err) if err else ''} {detail}\n")
    sys.stderr.flush()
    os._exit(121)


class RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def join_cgroups(procs_files):
    for procs_file in procs_files:
        with open(procs_file, "w") as fh:
            fh.write(str(os.getpid()))


def set_limits(limits):
    for name, value in limits.items():
        resource.setrlimit(getattr(resource, name), (value, value))


def drop_privileges(identity):
    """Become `identity` (uid, gid) with no capability and no way back.

    The bounding set is emptied while CAP_SETPCAP is still held; the change of uid then clears the
    permitted and effective sets (the secure bits keep the kernel's fix-up on and lock it).
    """
    if libc.prctl(PR_SET_SECUREBITS, SECURE_BITS, 0, 0, 0) != 0:
        fail("prctl(PR_SET_SECUREBITS)")
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != 22:  # EINVAL: no such cap
            fail("prctl(PR_CAPBSET_DROP)", str(cap))
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    if identity is not None:
        uid, gid = identity
        try:
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
        except OSError as exc:
            fail("setresuid", f"{uid}: {exc}")
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable x 2 words: all zero
    if libc.syscall(SYS_CAPSET, header, data) != 0:
        fail("capset")
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        fail("prctl(PR_SET_NO_NEW_PRIVS)")


def mount(source, target, fstype, flags, data=None):
    def encode(text):
        return None if text is None else text.encode()

    if libc.mount(encode(source), encode(target), encode(fstype), flags, encode(data)) != 0:
        fail("mount", f"{source} -> {target} ({fstype}, flags {flags:#x})")


def place(view, path, writable):
    """Bind-mount host `path` at the same path inside `view` (a link is copied as a link); False if absent."""
    if not os.path.lexists(path):
        return False
    target = view + path
    os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
    if os.path.islink(path):
        os.symlink(os.readlink(path), target)
        return True
    if os.path.isdir(path):
        os.makedirs(target, mode=0o755, exist_ok=True)
    elif not os.path.lexists(target):
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT, 0o644))
    mount(path, target, None, MS_BIND)
    device = path.startswith("/dev/")
    flags = MS_REMOUNT | MS_BIND | MS_NOSUID | (0 if device else MS_NODEV) | (0 if writable or device else MS_RDONLY)
    mount(None, target, None, flags)
    return True


def covered(path, placed):
    return any(path == done or path.startswith(done.rstrip("/") + "/") for done in placed)


def build_view(view, read_paths, write_paths, hidden_paths=()):
    """Make `view` (an empty folder) the root of this mount namespace, holding only the paths named.

    `hidden_paths`: folders inside a read path that must show nothing (an installed task pool in site-packages):
    an empty read-only tmpfs covers each, so nothing beneath it exists in the view."""
    # Nothing mounted here reaches the host; mounts the host makes later under a shared folder (a pooled
    # sandbox's workspace slot) still arrive.
    mount(None, "/", None, MS_REC | MS_SLAVE)
    mount("progagent-view", view, "tmpfs", MS_NOSUID | MS_NODEV, VIEW_OPTIONS)
    placed = []
    for path in write_paths:
        if place(view, path, writable=True):
            placed.append(path)
    for path in sorted(read_paths, key=len):
        if not covered(path, placed) and place(view, path, writable=False):
            placed.append(path)
    for path in hidden_paths:
        if os.path.isdir(view + path):
            mount(
                "progagent-hidden",
                view + path,
                "tmpfs",
                MS_RDONLY | MS_NOSUID | MS_NODEV,
                "size=4k,nr_inodes=1,mode=0755",
            )
    os.chdir(view)
    machine = os.uname().machine
    if machine not in SYS_PIVOT_ROOT or libc.syscall(SYS_PIVOT_ROOT[machine], b".", b".") != 0:
        fail("pivot_root", view)
    if libc.umount2(b".", MNT_DETACH) != 0:  # the old root, stacked under the new one: gone from the view
        fail("umount2(old root)")
    os.chdir("/")
    mount(None, "/", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def landlock(read_paths, write_paths):
    abi = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, 0, 1)
    if abi < 6:
        fail("landlock", f"ABI {abi} < 6 (needs signal and abstract-socket scoping, Linux >= 6.12)")
    fs_all = FS_ALL_BY_ABI.get(abi, (1 << 16) - 1)
    attr = RulesetAttr(fs_all, NET_BIND_TCP | NET_CONNECT_TCP, SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL)
    ruleset = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.sizeof(attr), 0)
    if ruleset < 0:
        fail("landlock_create_ruleset")
    for rights, paths in ((READ_RIGHTS, read_paths), (fs_all, write_paths)):
        for path in paths:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except FileNotFoundError:
                continue
            allowed = rights if os.path.isdir(path) else rights & FILE_ONLY_RIGHTS
            rule = PathBeneathAttr(allowed & fs_all, fd)
            if libc.syscall(SYS_LANDLOCK_ADD_RULE, ruleset, 1, ctypes.byref(rule), 0) != 0:
                fail("landlock_add_rule", path)
            os.close(fd)
    if libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0) != 0:
        fail("landlock_restrict_self")
    os.close(ruleset)


FORWARDED = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2}


def relay(child, host_pid=None):
    """Life after a fork: pass the signals on to `child`, reap, and end as `child` ends.

    Outside the namespace (`host_pid` given) this is the waiter, which also kills the sandbox when
    the host goes away; inside it is pid 1, which reaps every orphan of the sandbox as well.
    """
    # Hold none of the child's descriptors: the host sees the end of its pipes and of the tool
    # bridge when the program's side closes, not when this process exits.
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, 1 << 16)
    watched = FORWARDED | {signal.SIGCHLD}
    while True:
        info = signal.sigtimedwait(watched, 1.0)
        if info is None:
            if host_pid is not None and os.getppid() != host_pid:  # the host died without closing the sandbox
                os.kill(child, signal.SIGKILL)
            continue
        if info.si_signo != signal.SIGCHLD:
            try:
                os.kill(child, info.si_signo)
            except ProcessLookupError:
                pass
            continue
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                os._exit(1)
            if pid == 0:
                break
            if pid == child:
                # A signal's death is told as 128 + its number: pid 1 cannot end itself by a signal.
                os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


def main(config_json):
    config = json.loads(config_json)
    host_pid = os.getppid()
    join_cgroups(config.get("cgroup_procs", []))
    if libc.unshare(CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWPID | CLONE_NEWNS) != 0:
        fail("unshare(CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWPID | CLONE_NEWNS)")
    build_view(config["view"], config["read_paths"], config["write_paths"], config.get("hidden_paths", ()))
    # Blocked before the forks so that none is lost in between; the program unblocks them before exec.
    previous_mask = signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED | {signal.SIGCHLD})
    init = os.fork()  # pid 1 of the new PID namespace
    if init:
        relay(init, host_pid)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:  # the waiter killed: so is the sandbox
        fail("prctl(PR_SET_PDEATHSIG)")
    # The program runs as pid 2, not 1: pid 1 ignores every signal it has no handler for, so a program
    # could not even kill itself, and it would inherit the duty of reaping every orphan.
    program = os.fork()
    if program:
        relay(program)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        fail("prctl(PR_SET_PDEATHSIG)")
    set_limits(config["rlimits"])
    drop_privileges(config.get("identity"))
    landlock(config["read_paths"], config["write_paths"])
    # seccomp.py: io_uring, new user namespaces, keyrings, inotify/fanotify and the rest listed there and, for
    # terminal commands, unix sockets (the kernel refuses those itself once its sockets exist, `startup.start`).
    try:
        install_filter(deny_unix_sockets=bool(config.get("deny_unix_sockets")))
    except OSError as exc:
        fail("seccomp", str(exc))
    signal.pthread_sigmask(signal.SIG_SETMASK, previous_mask)
    for fd in config.get("inherit_fds", []):
        os.set_inheritable(fd, True)
    os.chdir(config["cwd"])
    argv = config["argv"]
    os.execve(argv[0], argv, config["env"])
