"""Seccomp filters of the sandbox (standard library only: it runs in the sandbox, see `kernel_side/__init__.py`).

Two filters, stacked (a later filter can only add refusals):
- `install_filter()`, installed by the launcher before exec on every sandboxed process (kernel and
  terminal commands alike), refuses what Landlock and the dropped capabilities leave open:
  * io_uring (`io_uring_setup`, `io_uring_enter`, `io_uring_register`): its socket and connect
    operations run in the kernel's own workers and go around a filter on `socket()`;
  * new user namespaces: `unshare` and `clone` with CLONE_NEWUSER (a user namespace hands back full
    capabilities inside it, and with them network namespaces, netfilter and other kernel surface
    that normally needs CAP_NET_ADMIN); `clone3` keeps its flags in memory a filter cannot read, so
    it is refused whole with ENOSYS, on which glibc falls back to `clone`;
  * foreign ABIs (int 0x80 on x86_64) and x32 system calls, whose numbers would slip past the checks;
  * calls that reach across sandboxes or into the host's kernel state (`CROSSING`, each with its reason):
    - `add_key`, `request_key`, `keyctl`: the kernel keyrings are per uid and outlive processes: a
      key one episode stores is readable by the next that gets the same uid (a channel between episodes);
    - `inotify_init`, `inotify_init1`, `inotify_add_watch`, `fanotify_init`, `fanotify_mark`: watches
      report the names of files others write, even where listing a folder is refused;
    - `name_to_handle_at`, `open_by_handle_at`: file handles name inodes without a path walk (Landlock
      and the private view mediate paths);
    - `perf_event_open`, `bpf`, `userfaultfd`: kernel-wide observation (counters, tracing) and a way to
      stall host-side copies of the sandbox's memory at will;
    - `syslog`: the host kernel's log (other sandboxes' faults, paths, addresses);
    - `ptrace`, `process_vm_readv`, `process_vm_writev`, `kcmp`, `pidfd_getfd`: another process's
      memory and descriptors (the PID namespace and the distinct uid already hide other sandboxes: a second wall).
- `install_filter(deny_unix_sockets=True)` also refuses `socket(AF_UNIX, ...)`: Landlock (up to ABI 7)
  does not mediate connect() to a *pathname* unix socket, and the sandbox runs as uid 0 (without
  capabilities), which owns most sockets on the host. Terminal commands get it before exec; the
  kernel adds it on itself (`install_unix_socket_filter`, from `startup.start`) right after start-up, once its zmq sockets
  and the tool bridge exist (later it only accepts connections), with TSYNC so that every thread of
  the process is covered. socketpair() stays allowed: it makes an unconnected pair, reaching
  nothing, and Python's asyncio and multiprocessing pipes rely on it.
"""

import ctypes
import platform

# Per machine: AUDIT_ARCH and the numbers of the system calls the filters look at. Others: refuse to pretend.
_SECCOMP_ARCH = {
    "x86_64": {
        "arch": 0xC000003E,
        "seccomp": 317,
        "socket": 41,
        "clone": 56,
        "unshare": 272,
        "clone3": 435,
        "io_uring": (425, 426, 427),
        "crossing": {
            "add_key": 248,
            "request_key": 249,
            "keyctl": 250,
            "inotify_init": 253,
            "inotify_init1": 294,
            "inotify_add_watch": 254,
            "fanotify_init": 300,
            "fanotify_mark": 301,
            "name_to_handle_at": 303,
            "open_by_handle_at": 304,
            "perf_event_open": 298,
            "bpf": 321,
            "userfaultfd": 323,
            "syslog": 103,
            "ptrace": 101,
            "process_vm_readv": 310,
            "process_vm_writev": 311,
            "kcmp": 312,
            "pidfd_getfd": 438,
        },
    },
    "aarch64": {
        "arch": 0xC00000B7,
        "seccomp": 277,
        "socket": 198,
        "clone": 220,
        "unshare": 97,
        "clone3": 435,
        "io_uring": (425, 426, 427),
        "crossing": {
            "add_key": 217,
            "request_key": 218,
            "keyctl": 219,
            "inotify_init1": 26,
            "inotify_add_watch": 27,
            "fanotify_init": 262,
            "fanotify_mark": 263,
            "name_to_handle_at": 264,
            "open_by_handle_at": 265,
            "perf_event_open": 241,
            "bpf": 280,
            "userfaultfd": 282,
            "syslog": 116,
            "ptrace": 117,
            "process_vm_readv": 270,
            "process_vm_writev": 271,
            "kcmp": 272,
            "pidfd_getfd": 438,
        },
    },
}
_SECCOMP_RET_ALLOW = 0x7FFF0000
_SECCOMP_RET_EPERM = 0x00050000 | 1
_SECCOMP_RET_ENOSYS = 0x00050000 | 38
_SECCOMP_X32_BIT = 0x40000000
_SECCOMP_CLONE_NEWUSER = 0x10000000
_SECCOMP_AF_UNIX = 1


class _SeccompInsn(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SeccompProg(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SeccompInsn))]


def seccomp_program(machine, base=True, deny_unix_sockets=False):
    """The BPF program as (code, jt, jf, k) tuples: `base` the launcher's refusals, then the AF_UNIX one."""
    if machine not in _SECCOMP_ARCH:
        raise OSError(f"no seccomp filter for {machine}: the sandbox supports x86_64 and aarch64")
    nr = _SECCOMP_ARCH[machine]
    LD_W_ABS, JEQ_K, JSET_K, RET_K = 0x20, 0x15, 0x45, 0x06
    NR, ARCH, ARG0_LOW = 0, 4, 16  # offsets in struct seccomp_data (little-endian: args[0]'s low word)
    # Each check: (syscall number, what to refuse it with, None | ("arg0_eq", v) | ("arg0_has", bit)).
    checks = []
    if base:
        checks += [(n, _SECCOMP_RET_EPERM, None) for n in nr["io_uring"]]
        checks += [(n, _SECCOMP_RET_EPERM, None) for n in nr["crossing"].values()]
        checks += [
            (nr["clone3"], _SECCOMP_RET_ENOSYS, None),
            (nr["unshare"], _SECCOMP_RET_EPERM, ("arg0_has", _SECCOMP_CLONE_NEWUSER)),
            (nr["clone"], _SECCOMP_RET_EPERM, ("arg0_has", _SECCOMP_CLONE_NEWUSER)),
        ]
    if deny_unix_sockets:
        checks.append((nr["socket"], _SECCOMP_RET_EPERM, ("arg0_eq", _SECCOMP_AF_UNIX)))
    program = [
        (LD_W_ABS, 0, 0, ARCH),
        (JEQ_K, 1, 0, nr["arch"]),
        (RET_K, 0, 0, _SECCOMP_RET_EPERM),  # a foreign ABI (e.g. int 0x80): refuse everything
        (LD_W_ABS, 0, 0, NR),
        (JSET_K, 0, 1, _SECCOMP_X32_BIT),
        (RET_K, 0, 0, _SECCOMP_RET_EPERM),  # x32 system calls
    ]
    for number, refusal, condition in checks:
        if condition is None:
            program += [(JEQ_K, 0, 1, number), (RET_K, 0, 0, refusal)]
        else:
            test = JEQ_K if condition[0] == "arg0_eq" else JSET_K
            # Not this call: skip the 4 instructions below. This call: load arg0, refuse if it matches,
            # else allow (the checks are on distinct numbers, so nothing later could refuse it).
            program += [
                (JEQ_K, 0, 4, number),
                (LD_W_ABS, 0, 0, ARG0_LOW),
                (test, 0, 1, condition[1]),
                (RET_K, 0, 0, refusal),
                (RET_K, 0, 0, _SECCOMP_RET_ALLOW),
            ]
    program.append((RET_K, 0, 0, _SECCOMP_RET_ALLOW))
    return program


def install_filter(base=True, deny_unix_sockets=False):
    machine = platform.machine()
    program = seccomp_program(machine, base, deny_unix_sockets)
    insns = (_SeccompInsn * len(program))(*[_SeccompInsn(*ins) for ins in program])
    prog = _SeccompProg(len(program), insns)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC = 1, 1
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS, required for an unprivileged filter
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if (
        libc.syscall(
            _SECCOMP_ARCH[machine]["seccomp"], SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, ctypes.byref(prog)
        )
        != 0
    ):
        raise OSError(ctypes.get_errno(), "seccomp(SECCOMP_SET_MODE_FILTER) failed")


def install_unix_socket_filter():
    """The kernel's second filter, once its own sockets exist (the first came from the launcher)."""
    install_filter(base=False, deny_unix_sockets=True)
