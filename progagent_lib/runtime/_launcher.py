"""The confinement launcher: runs as the first code of a sandboxed child, then execs the real program.

This file is never imported by the sandboxed process: the host reads its text and runs it with
`python -I -c SOURCE CONFIG_JSON`, so the child needs nothing from the project tree (which it
cannot read). It depends on the standard library only and must stay that way.

Order matters: every step that needs root's capabilities (joining the cgroup, new namespaces,
secure bits) happens before the capabilities are dropped; Landlock comes last because it forbids
the writes the earlier steps do.
"""
import ctypes
import json
import os
import resource
import sys

CLONE_NEWNET = 0x40000000
CLONE_NEWIPC = 0x08000000
PR_SET_NO_NEW_PRIVS = 38
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
# SECBIT_NOROOT | _LOCKED, SECBIT_NO_SETUID_FIXUP | _LOCKED, SECBIT_KEEP_CAPS_LOCKED, NO_CAP_AMBIENT_RAISE | _LOCKED:
# uid 0 gains no capabilities on exec, ever again.
SECURE_BITS = 0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80
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
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


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


def drop_capabilities():
    if libc.prctl(PR_SET_SECUREBITS, SECURE_BITS, 0, 0, 0) != 0:
        fail("prctl(PR_SET_SECUREBITS)")
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != 22:  # EINVAL: no such cap
            fail("prctl(PR_CAPBSET_DROP)", str(cap))
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable x 2 words: all zero
    if libc.syscall(SYS_CAPSET, header, data) != 0:
        fail("capset")
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        fail("prctl(PR_SET_NO_NEW_PRIVS)")


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


def main():
    config = json.loads(sys.argv[1])
    join_cgroups(config.get("cgroup_procs", []))
    if libc.unshare(CLONE_NEWNET | CLONE_NEWIPC) != 0:
        fail("unshare(CLONE_NEWNET | CLONE_NEWIPC)")
    set_limits(config["rlimits"])
    drop_capabilities()
    landlock(config["read_paths"], config["write_paths"])
    if config.get("deny_unix_sockets"):
        install_unix_socket_filter()  # defined by _seccomp.py, whose source precedes this file's
    for fd in config.get("inherit_fds", []):
        os.set_inheritable(fd, True)
    os.chdir(config["cwd"])
    argv = config["argv"]
    os.execve(argv[0], argv, config["env"])


main()
