"""Bounds what a program's prints send to the host: the first and last `limit` characters.

Runs inside the kernel (see `kernel_side/__init__.py`). The host bounds the output again (a program
can undo this guard), so this only spares the channel and the host's memory from megabytes that
would be cut anyway.
"""
import contextlib
import sys


def install(limit, shell=None):
    from ipykernel.iostream import OutStream

    if shell is None:
        from IPython import get_ipython

        shell = get_ipython()
    state = {"seen": 0, "tail": [], "tail_len": 0}
    original = OutStream.write

    def write(self, string):
        if not isinstance(string, str):
            return original(self, string)
        seen = state["seen"]
        state["seen"] = seen + len(string)
        if seen + len(string) <= limit:
            return original(self, string)
        keep = max(0, limit - seen)
        rest = string[-limit:] if len(string) - keep > limit else string[keep:]  # no copy of a huge string
        if keep:
            original(self, string[:keep])
        state["tail"].append(rest)
        state["tail_len"] += len(rest)
        if state["tail_len"] > 4 * limit:  # trim now and then, not on every write
            joined = "".join(state["tail"])[-limit:]
            state["tail"], state["tail_len"] = [joined], len(joined)
        return len(string)

    def start(*_):
        state["seen"], state["tail"], state["tail_len"] = 0, [], 0

    def finish(*_):
        if state["seen"] > limit:
            tail = "".join(state["tail"])[-limit:]
            dropped = state["seen"] - limit - len(tail)
            original(sys.stdout, f"\n[... {dropped} characters of output cut ...]\n" + tail)
        start()

    OutStream.write = write
    # IPython >= 9 copies every write into shell.history_manager.outputs (kept for the whole
    # session, ~10 us per write); nothing here reads that history, so switch the copy off.
    if hasattr(shell, "_tee"):
        shell._tee = lambda channel: contextlib.nullcontext()
    shell.events.register("pre_run_cell", start)
    shell.events.register("post_run_cell", finish)
    return write
