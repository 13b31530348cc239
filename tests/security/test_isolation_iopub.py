"""Isolation round four (issue 37): a thread left behind by a program floods iopub; the next program stays prompt.

Finding: after a leftover thread sent 12 messages of 64 MiB on iopub, the next one-line program took 34.6 s.
Each message is over the host's 8 MiB bound (`kernel.MAX_MESSAGE_BYTES`), so zmq dropped the connection
that carried it, and with it every message the kernel sent until the host reconnected: the next program's
`idle` status too, which the host then awaited until the program's 30 s deadline, two interrupts and a
restart. A flood of small messages does the same by another way: ipykernel's iopub socket drops what it
sends once 1000 messages wait for the host, the program's own output and `idle` among them.

Each attack here is a real hostile program in a real confined kernel; the thread starts flooding only once
the program that started it has returned. The next program, `print(1)`, must come back within the bound
below, either with its output and a note that the kernel was restarted first, or restarted with an error
that names the flood; the program after it then runs normally.
"""
import time

import pytest

from progagent_lib.runtime import PTCRuntime

# The runtime's bound is 5 s on an idle machine (issue 37). With the guards the next program takes about
# 1 s here, most of it a kernel restart, which slows several-fold when the shared 2-core machine is busy
# with other test runs; so the tests allow twice the bound. Without the guards the program waits for its
# 30 s deadline, two 2 s interrupt graces and a restart (~35 s): far above 10 s on any machine.
NEXT_PROGRAM_SECONDS = 10.0
PROGRAM_TIMEOUT = 30  # the runtime's default: what the program would wait for without the guards

SIZE = 64 << 20
WAIT_FOR_NEXT_PROGRAM = ("k = get_ipython().kernel\nimport threading, time\nold = k.get_parent()\n"
                         "def next_program_started():\n    while k.get_parent() is old:\n        time.sleep(0.0005)\n")
# Pre-serialized, so the thread sends all 12 the moment the next program starts: the one that hurts most.
OVERSIZED_AT_NEXT_START = (
    WAIT_FOR_NEXT_PROGRAM +
    f"frames = k.session.serialize(k.session.msg('stream', {{'name': 'stdout', 'text': 'z' * {SIZE}}}, parent=old))\n"
    "def flood():\n    next_program_started()\n"
    "    for _ in range(12):\n        k.iopub_socket.send_multipart(frames, copy=False)\n"
    "threading.Thread(target=flood, daemon=True).start()\nprint('armed')")
# Built and signed one by one in the thread (each takes a while), from the moment program 1 has returned.
OVERSIZED_AFTER_RETURN = (
    "k = get_ipython().kernel\nimport threading, time\nparent = k.get_parent()\n"
    "def flood():\n    time.sleep(0.05)\n    for _ in range(12):\n"
    f"        k.session.send(k.iopub_socket, 'stream', {{'name': 'stdout', 'text': 'z' * {SIZE}}}, parent=parent)\n"
    "threading.Thread(target=flood, daemon=True).start()\nprint('armed')")
# Tiny messages of no program, queued on ipykernel's IOPub thread in one go (ahead of the next program's own).
TINY = "T = [b'<IDS|MSG>', b'', b'', b'', b'', b'']\nsend = lambda: k.iopub_thread._really_send(T)\n"
ARMED_IF_QUEUE = "print('armed' if hasattr(k.iopub_thread, '_events') else 'no queue to flood')"
TINY_AT_NEXT_START = (
    WAIT_FOR_NEXT_PROGRAM + TINY +
    "def flood():\n    next_program_started()\n    k.iopub_thread._events.extend([send] * 100_000)\n"
    "    k.iopub_thread.schedule(lambda: None)\n"
    "threading.Thread(target=flood, daemon=True).start()\n" + ARMED_IF_QUEUE)
TINY_AFTER_RETURN = (
    "k = get_ipython().kernel\nimport threading, time\n" + TINY +
    "def flood():\n    time.sleep(0.05)\n    k.iopub_thread._events.extend([send] * 3_000_000)\n"
    "    k.iopub_thread.schedule(lambda: None)\n"
    "threading.Thread(target=flood, daemon=True).start()\n" + ARMED_IF_QUEUE)


def next_program_after(restock_task, seed: int, attack: str, pause: float):
    """Run `attack`, wait `pause`, time `print(1)`; check the program after it. Returns (result, seconds)."""
    env = restock_task.instantiate("v0", seed)
    try:
        with PTCRuntime(env, timeout=PROGRAM_TIMEOUT) as runtime:
            runtime.execute("x = 1")
            armed = runtime.execute(attack)
            assert armed.output.strip() == "armed", armed.observation
            time.sleep(pause)
            started = time.monotonic()
            result = runtime.execute("print(1)")
            seconds = time.monotonic() - started
            after = runtime.execute("print(40 + 2)\nprint(tools.get_supplier(supplier_id=1)['id'])")
            assert after.output.split() == ["42", "1"] and not after.kernel_restarted, after.observation
            return result, seconds
    finally:
        env.close()


def assert_prompt_and_said(result, seconds: float, cause: str) -> None:
    assert seconds < NEXT_PROGRAM_SECONDS, f"the next program took {seconds:.1f} s: {result.observation}"
    assert result.kernel_restarted and not result.timed_out, result.observation
    assert "[the kernel was restarted" in result.observation
    if result.error is None:  # restarted before it ran: its own output, then why
        first, *notes = result.output.split("\n")
        assert first == "1" and cause in notes[0], result.observation
    else:  # restarted while it ran: the error names the flood
        assert result.error.name == "KernelProtocolError" and cause in result.error.message, result.observation


@pytest.mark.parametrize("attack, pause", [(OVERSIZED_AT_NEXT_START, 0.2), (OVERSIZED_AFTER_RETURN, 0.5)],
                         ids=["raw-frames-at-next-start", "session-send-after-return"])
def test_an_oversized_flood_by_a_leftover_thread_leaves_the_next_program_prompt(restock_task, attack, pause):
    result, seconds = next_program_after(restock_task, 21, attack, pause)
    assert_prompt_and_said(result, seconds, "over the host's 8 MiB bound")


def test_a_burst_of_small_stray_messages_at_the_next_programs_start_is_caught(restock_task):
    # 100,000 messages ahead of the program's own: the kernel's socket drops what does not fit, its
    # output or its `idle` status with it. The host notices the messages of no program instead.
    result, seconds = next_program_after(restock_task, 22, TINY_AT_NEXT_START, 0.2)
    assert_prompt_and_said(result, seconds, "messages of no running program")


def test_a_flood_of_small_stray_messages_from_the_pause_on_is_caught(restock_task):
    # Three million messages queued once program 1 has returned: the host drains what came in the pause,
    # and the flood goes on while the next program runs, its own messages behind it.
    result, seconds = next_program_after(restock_task, 23, TINY_AFTER_RETURN, 0.5)
    assert_prompt_and_said(result, seconds, "messages of no running program")
