"""Bounds what a program's prints send to the host: the first and last `limit` characters.

Runs inside the kernel (see `kernel_side/__init__.py`). The host bounds the output again (a program
can undo this guard), so this only spares the channel and the host's memory from megabytes that
would be cut anyway; it also keeps an honest program's every message far below the size the host's
sockets accept (`kernel.MAX_MESSAGE_BYTES`): the value of the last expression, a `display()` and an
exception's text and traceback are bounded too.

Threads left running by an earlier program: ipykernel sends what any thread prints under the parent
header of the program running *now*, so a thread started by program 1 would write into program 2's
observation. Threads started by a program are tagged with its number; what a thread prints while another
program runs (or none) is dropped, and the program that was running is told how much.
"""

import contextlib
import sys
import threading


def install(limit, shell=None):
    from ipykernel.iostream import OutStream

    if shell is None:
        from IPython import get_ipython

        shell = get_ipython()
    state = {"seen": 0, "tail": [], "tail_len": 0, "program": 0, "stray": 0}
    original = OutStream.write
    original_start = threading.Thread.start

    def start_thread(self, *args, **kwargs):
        self._ptc_program = state["program"]
        return original_start(self, *args, **kwargs)

    def write(self, string):
        if not isinstance(string, str):
            return original(self, string)
        started_by = getattr(threading.current_thread(), "_ptc_program", None)
        if started_by is not None and started_by != state["program"]:
            state["stray"] += len(string)
            return len(string)
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
        state["seen"], state["tail"], state["tail_len"], state["stray"] = 0, [], 0, 0
        state["program"] += 1
        # IPython's `_tee` (switched off below) was active around the cell that installed this guard,
        # and on leaving it set each stream's `write` on the *instance* to the bound original method,
        # which would hide the class's `write` for good.
        for stream in (sys.stdout, sys.stderr):
            if isinstance(stream, OutStream):
                vars(stream).pop("write", None)

    def finish(*_):
        if state["seen"] > limit:
            tail = "".join(state["tail"])[-limit:]
            dropped = state["seen"] - limit - len(tail)
            original(sys.stdout, f"\n[... {dropped} characters of output cut ...]\n" + tail)
        if state["stray"]:
            original(
                sys.stdout,
                f"\n[{state['stray']} characters printed meanwhile by threads of earlier programs were dropped]\n",
            )
        state["seen"], state["tail"], state["tail_len"], state["stray"] = 0, [], 0, 0
        # Between two programs no thread is current: ipykernel gives the next request's parent header
        # to every write before `pre_run_cell` runs, so a thread's print in that gap would land in it.
        state["program"] += 1

    def bounded(text):
        text = text if isinstance(text, str) else str(text)
        if len(text) <= limit:
            return text
        half = limit // 2
        return f"{text[:half]}\n[... {len(text) - 2 * half} characters cut ...]\n{text[-half:]}"

    class Text:  # an exception value whose str() is bounded (ipykernel calls str(evalue) itself)
        def __init__(self, text):
            self.text = text

        def __str__(self):
            return self.text

    original_showtraceback = shell._showtraceback

    def showtraceback(etype, evalue, stb):
        lines = [bounded(line) for line in (stb or [])[-100:]]
        text = bounded(evalue)
        if isinstance(evalue, BaseException) and len(text) < len(str(evalue)):
            # ipykernel's reply to the request reads str() of the exception itself, not this call's
            # argument: an exception with a huge message is given the bounded one.
            with contextlib.suppress(Exception):
                evalue.args = (text,)
        return original_showtraceback(etype, Text(text), lines)

    original_format = shell.display_formatter.format

    def format_display(*args, **kwargs):
        data, metadata = original_format(*args, **kwargs)
        if isinstance(data, dict):  # only the plain text reaches the host; richer forms would only weigh
            data = {"text/plain": bounded(data.get("text/plain", ""))}
        return data, metadata

    threading.Thread.start = start_thread
    shell._showtraceback = showtraceback
    shell.display_formatter.format = format_display
    OutStream.write = write
    # IPython >= 9 copies every write into shell.history_manager.outputs (kept for the whole
    # session, ~10 us per write); nothing here reads that history, so switch the copy off.
    if hasattr(shell, "_tee"):
        shell._tee = lambda channel: contextlib.nullcontext()
    shell.events.register("pre_run_cell", start)
    shell.events.register("post_run_cell", finish)
    return write
