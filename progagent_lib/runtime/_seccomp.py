"""A seccomp filter that refuses to create unix-domain sockets (standard library only, run as source).

Why: Landlock (up to ABI 7) does not mediate connect() to a *pathname* unix socket, and the sandbox
runs as uid 0 (without capabilities), which owns most sockets on the host. Refusing socket(AF_UNIX)
closes that door. The kernel installs this filter on itself right after start-up (its zmq sockets and
the tool bridge exist by then; later it only accepts connections) with TSYNC, so that every thread of
the process is covered; terminal commands get it before exec. socketpair() stays allowed: it makes
an unconnected pair, reaching nothing, and Python's asyncio and multiprocessing pipes rely on it.
"""
import ctypes
import platform

# (AUDIT_ARCH, __NR_socket) per machine. Other architectures: refuse to pretend.
_ARCH = {"x86_64": (0xC000003E, 41), "aarch64": (0xC00000B7, 198)}
_SECCOMP_RET_ALLOW = 0x7FFF0000
_SECCOMP_RET_ERRNO_EPERM = 0x00050000 | 1
_X32_SYSCALL_BIT = 0x40000000


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


def install_unix_socket_filter():
    machine = platform.machine()
    if machine not in _ARCH:
        raise OSError(f"no seccomp filter for {machine}: the sandbox supports x86_64 and aarch64")
    audit_arch, nr_socket = _ARCH[machine]
    LD_W_ABS, JEQ_K, JSET_K, RET_K = 0x20, 0x15, 0x45, 0x06
    program = [
        (LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        (JEQ_K, 1, 0, audit_arch),
        (RET_K, 0, 0, _SECCOMP_RET_ERRNO_EPERM),  # a foreign ABI (e.g. int 0x80): refuse everything
        (LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
        (JSET_K, 0, 1, _X32_SYSCALL_BIT),
        (RET_K, 0, 0, _SECCOMP_RET_ERRNO_EPERM),  # x32 syscalls
        (JEQ_K, 0, 3, nr_socket),
        (LD_W_ABS, 0, 0, 16),  # seccomp_data.args[0] (low 32 bits): the address family
        (JEQ_K, 0, 1, 1),  # AF_UNIX
        (RET_K, 0, 0, _SECCOMP_RET_ERRNO_EPERM),
        (RET_K, 0, 0, _SECCOMP_RET_ALLOW),
    ]
    filters = (_SockFilter * len(program))(*[_SockFilter(*ins) for ins in program])
    prog = _SockFprog(len(program), filters)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    nr_seccomp = {"x86_64": 317, "aarch64": 277}[machine]
    SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC = 1, 1
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS, required for an unprivileged filter
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.syscall(nr_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, ctypes.byref(prog)) != 0:
        raise OSError(ctypes.get_errno(), "seccomp(SECCOMP_SET_MODE_FILTER) failed")
