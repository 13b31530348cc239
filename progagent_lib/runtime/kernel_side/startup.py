"""What a (re)started kernel runs before the first program, and what binds a pooled kernel to its folder.

Runs inside the kernel (see `kernel_side/__init__.py`).
"""

import os
import sys

from . import seccomp, tools_proxy


def start(fd, max_frame, deny_unix_sockets):
    """Install the kernel's own seccomp filter (if asked), then `tools`; return `(tools, ToolError)`.

    The filter comes first, once the kernel's zmq sockets exist (see `seccomp.py`): from then on no
    code in the kernel can make a unix socket.
    """
    if deny_unix_sockets:
        seccomp.install_unix_socket_filter()
    tools, tool_error = tools_proxy.install(fd, max_frame)
    # As in any Jupyter kernel, modules the program writes into its folder are importable
    # (the kernel runs with `python -I`, which leaves the current folder out of sys.path).
    sys.path.insert(0, "")
    return tools, tool_error


def enter_workspace(path):
    """A pooled kernel's working folder becomes its episode's workspace (mounted at `path`)."""
    os.chdir(path)
