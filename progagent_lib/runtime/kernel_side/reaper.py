"""Reaps the kernel's children that the host killed (a program may not leave processes behind).

Runs inside the kernel (see `kernel_side/__init__.py`): killed children stay zombies, counted against
the sandbox's process limit, until their parent waits for them.
"""

import os


def reap_children():
    """Wait for every child that has ended, without blocking."""
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                return
        except ChildProcessError:
            return
