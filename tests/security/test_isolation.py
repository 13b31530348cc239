"""Isolation between episodes and from the host, round three: each finding tried for real.

Findings (issue "Isolation between episodes and from the host, round three") and what is checked:
1. io_uring went around the socket filter: `io_uring_setup` is refused (EPERM) in a program and in a
   terminal command, so its socket/connect operations cannot be reached at all.
2. Episodes could read each other: two live episodes, the attacker told the victim's socket paths
   and pids by the test (the strongest position), tries every channel; none opens, and the victim's
   secret never shows in the attacker's output.
3. /proc showed the neighbours: the sandbox has its own PID namespace (the kernel is pid 2) and no
   /proc (mountinfo, other processes' command lines: ENOENT, since round four's private view).
5. An idle flood of signed iopub messages: the host's memory stays bounded while idle, and the next
   program comes back at once (the flooding kernel is restarted, and the observation says why).
7. User namespaces: `unshare(CLONE_NEWUSER)` and `clone(CLONE_NEWUSER)` are refused (EPERM),
   `clone3` is ENOSYS (glibc falls back to clone, so threads and subprocesses still work).
9. Output printed by a thread of an earlier program is dropped from the next program's observation,
   which says how much was dropped.
Findings 4 (one frame, 3 GB), 6 (descriptor exhaustion), 8 (a verifier that raises), 10 (control
characters) and 11 (the engine's API key) have their own test files: test_isolation_bridge.py,
test_isolation_host.py, test_isolation_text.py and test_engine.py.
"""
import os
import time

import pytest

from progagent_lib.runtime import PTCRuntime
from progagent_lib.runtime import kernel as kernel_module

GiB = 1 << 30
ERRNO_CODE = ("import ctypes, errno\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.syscall.restype = ctypes.c_long\n"
              "def call(nr, *args):\n    ctypes.set_errno(0)\n    rc = libc.syscall(nr, *args)\n"
              "    return 'ok' if rc >= 0 else errno.errorcode[ctypes.get_errno()]\n")


def rss_mib() -> float:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.fixture(scope="module")
def rt(episode):
    with PTCRuntime(episode, timeout=20, memory_limit=2 * GiB, max_processes=48, max_output_chars=5000) as runtime:
        assert runtime.execute("canary = 'still-here'").error is None
        yield runtime


def answers(rt, keep_state=True):
    result = rt.execute("print(40 + 2)\nprint(tools.get_supplier(supplier_id=1)['id'])\nprint(globals().get('canary'))")
    assert result.error is None and not result.timed_out, result.observation
    assert result.output.split()[:2] == ["42", "1"], result.observation
    if keep_state:
        assert result.output.split()[2] == "still-here"


# --- 1 and 7: the seccomp filter ---------------------------------------------------------------------------------
def test_io_uring_and_user_namespaces_are_refused_in_a_program(rt):
    result = rt.execute(ERRNO_CODE + "buf = ctypes.create_string_buffer(256)\n"
                        "print('io_uring_setup', call(425, 8, buf))\nprint('io_uring_enter', call(426, 0, 1, 0, 0, None, 0))\n"
                        "print('io_uring_register', call(427, 0, 0, None, 0))\n"
                        "print('unshare_user', call(272, 0x10000000))\nprint('unshare_user_net', call(272, 0x10000000 | 0x40000000))\n"
                        "print('clone_user', call(56, 0x10000000 | 17, 0, 0, 0, 0))\nprint('clone3', call(435, None, 0))\n"
                        "import socket\ntry:\n    socket.socket(socket.AF_UNIX)\n    print('unix_socket ok')\n"
                        "except OSError as exc:\n    print('unix_socket', errno.errorcode[exc.errno])\n")
    assert result.error is None, result.observation
    seen = dict(line.split() for line in result.output.splitlines())
    assert seen == {"io_uring_setup": "EPERM", "io_uring_enter": "EPERM", "io_uring_register": "EPERM",
                    "unshare_user": "EPERM", "unshare_user_net": "EPERM", "clone_user": "EPERM", "clone3": "ENOSYS",
                    "unix_socket": "EPERM"}, seen
    # clone3 refused whole still leaves threads and processes working (glibc falls back to clone).
    works = rt.execute("import threading, subprocess\nout = []\nt = threading.Thread(target=lambda: out.append('thread'))\n"
                       "t.start(); t.join()\nprint(out[0], subprocess.run(['echo', 'child'], capture_output=True, text=True).stdout)")
    assert works.output.split() == ["thread", "child"], works.observation
    answers(rt)


def test_io_uring_and_user_namespaces_are_refused_in_a_terminal_command(rt):
    script = (ERRNO_CODE + "buf = ctypes.create_string_buffer(256)\nprint(call(425, 8, buf), call(272, 0x10000000), call(435, None, 0))\n"
              "import socket\ntry:\n    socket.socket(socket.AF_UNIX); print('unix ok')\nexcept OSError as exc:\n    print('unix', exc.errno)\n")
    result = rt.terminal(f"python3 - <<'EOF'\n{script}EOF\nunshare -U true; echo unshare=$?")
    lines = result.output.splitlines()
    assert "EPERM EPERM ENOSYS" in lines and "unix 1" in lines, result.observation
    assert any(line == "unshare=1" for line in lines), result.observation


# --- 3: the PID namespace and no /proc -----------------------------------------------------------------------------
def test_the_sandbox_sees_no_other_process(rt):
    result = rt.execute("import os, errno\nprint('pid', os.getpid(), os.getppid())\n"
                        "for path in ('/proc/self/mountinfo', '/proc/1/cmdline', '/proc/self/status'):\n"
                        "    try:\n        open(path).read()\n        print(path, 'read')\n"
                        "    except OSError as exc:\n        print(path, errno.errorcode[exc.errno])\n"
                        "try:\n    os.listdir('/proc')\nexcept OSError as exc:\n    print('listdir', errno.errorcode[exc.errno])\n"
                        f"try:\n    os.kill({os.getpid()}, 0)\n    print('host visible')\nexcept OSError as exc:\n"
                        "    print('host', errno.errorcode[exc.errno])\n")
    lines = result.output.splitlines()
    assert lines[0] == "pid 2 1", result.observation  # in its own namespace, under the sandbox's init
    assert lines[1:4] == ["/proc/self/mountinfo ENOENT", "/proc/1/cmdline ENOENT", "/proc/self/status ENOENT"]
    assert lines[4] == "listdir ENOENT" and lines[5] in ("host ESRCH", "host EPERM"), result.observation
    terminal = rt.terminal("echo $$; cat /proc/self/mountinfo; ls /proc")
    assert terminal.output.splitlines()[0] == "2" and "No such file or directory" in terminal.output
    assert "progagent-runtime" not in terminal.output and "workspace" not in terminal.output


# --- 2: two live episodes ------------------------------------------------------------------------------------------
ATTACK = ERRNO_CODE + """import os, socket, time, json
report = {}
def attempt(name, fn):
    try:
        report[name] = fn()
    except OSError as exc:
        report[name] = errno.errorcode.get(exc.errno, str(exc.errno))
    except Exception as exc:
        report[name] = type(exc).__name__
def read(path):
    with open(path, 'rb') as fh:
        return 'read %d bytes' % len(fh.read())
attempt('connection_file', lambda: read(TARGET['connection_file']))
attempt('workspace_file', lambda: read(TARGET['workspace_file']))
attempt('ipc_listdir', lambda: os.listdir(TARGET['ipc']))
attempt('cmdline', lambda: read('/proc/%d/cmdline' % TARGET['kernel_pid']))
def unix_connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return 'connected'
attempt('unix_iopub', lambda: unix_connect(TARGET['iopub']))
attempt('unix_shell', lambda: unix_connect(TARGET['shell']))
buf = ctypes.create_string_buffer(256)
report['io_uring'] = call(425, 8, buf)
report['userns'] = call(272, 0x10000000)
for pid in TARGET['pids']:
    attempt('kill_%d' % pid, lambda: os.kill(pid, 9) or 'signalled')
try:
    import zmq
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b'')
    sub.connect('ipc://' + TARGET['iopub'])
    received = []
    deadline = time.time() + 2.0
    while time.time() < deadline:
        if sub.poll(100):
            received.append(b''.join(sub.recv_multipart()))
    report['zmq_iopub'] = 'received %d messages' % len(received)
    report['zmq_saw_secret'] = any(TARGET['secret'].encode() in m for m in received)
    sub.close(0)
    ctx.term()
except Exception as exc:
    report['zmq_iopub'] = type(exc).__name__
print(json.dumps(report))
"""


def _target(runtime, workspace_file: str, secret: str) -> dict:
    session = runtime.session
    ipc = session.sandbox.ipc
    return {"connection_file": str(ipc / "kernel.json"), "ipc": str(ipc), "iopub": str(ipc / "k-2"),
            "shell": str(ipc / "k-1"), "workspace_file": workspace_file, "kernel_pid": session.kernel_pid,
            "pids": list(session.main_pids()), "secret": secret}


def test_two_live_episodes_cannot_read_or_drive_each_other(restock_task):
    import json

    victim_env, attacker_env = restock_task.instantiate("v0", 11), restock_task.instantiate("v0", 12)
    secret = "victim-secret-7f3a"
    try:
        with PTCRuntime(victim_env, timeout=30) as victim, PTCRuntime(attacker_env, timeout=30) as attacker:
            assert os.path.exists(victim.session.sandbox.ipc / "k-2"), "the victim's iopub socket path changed"
            victim.execute(f"open('notes.txt', 'w').write({secret!r})\nimport threading, time\n"
                           f"def talk():\n    while True:\n        print({secret!r}); time.sleep(0.05)\n"
                           "threading.Thread(target=talk, daemon=True).start()")
            target = _target(victim, str(victim_env.workspace / "notes.txt"), secret)
            # The victim runs a program that prints its secret while the attacker listens.
            victim_run = []
            import threading

            listener = threading.Thread(target=lambda: victim_run.append(victim.execute(
                f"import time\nfor _ in range(40):\n    print({secret!r}); time.sleep(0.05)")))
            listener.start()
            result = attacker.execute(f"TARGET = {json.dumps(target)}\n" + ATTACK)
            listener.join()
            assert result.error is None, result.observation
            report = json.loads(result.output.strip().splitlines()[-1])
            assert secret not in result.output
            # Not in the attacker's private view at all (round four): ENOENT, where Landlock alone gave EACCES.
            assert report["connection_file"] == "ENOENT" and report["workspace_file"] == "ENOENT"
            assert report["ipc_listdir"] == "ENOENT" and report["cmdline"] == "ENOENT"
            assert report["unix_iopub"] == "EPERM" and report["unix_shell"] == "EPERM"
            assert report["io_uring"] == "EPERM" and report["userns"] == "EPERM"
            assert all(report[f"kill_{pid}"] in ("ESRCH", "EPERM") for pid in target["pids"]), report
            assert report["zmq_iopub"] in ("received 0 messages", "ZMQError"), report
            assert not report.get("zmq_saw_secret"), report
            # The victim was neither read nor driven: its program ran to the end, its kernel kept its state.
            assert victim_run and victim_run[0].output.count(secret) >= 40 and not victim_run[0].kernel_restarted
            after = victim.execute("print(open('notes.txt').read())")
            assert after.output.strip() == secret and not after.kernel_restarted
    finally:
        victim_env.close()
        attacker_env.close()


# --- 5: an idle flood on iopub ---------------------------------------------------------------------------------------
FLOOD = ("k = get_ipython().kernel\nimport threading\nparent = k.get_parent()\n"
         "def flood():\n    big = 'z' * (1 << 20)\n    while True:\n"
         "        k.session.send(k.iopub_socket, 'stream', {'name': 'stdout', 'text': big}, parent=parent)\n"
         "threading.Thread(target=flood, daemon=True).start()\nprint('flooding')")


def test_an_idle_flood_keeps_the_hosts_memory_bounded_and_the_next_program_prompt(restock_task):
    env = restock_task.instantiate("v0", 13)
    try:
        with PTCRuntime(env, timeout=20) as runtime:
            runtime.execute("x = 1")
            before = rss_mib()
            assert runtime.execute(FLOOD).error is None
            peak = before
            for _ in range(30):  # 3 s idle: the thread sends ~1 MiB messages as fast as it can
                time.sleep(0.1)
                peak = max(peak, rss_mib())
            bound = kernel_module.IOPUB_QUEUE * kernel_module.MAX_MESSAGE_BYTES / (1 << 20)
            assert peak - before < min(bound, 300), f"host memory grew {peak - before:.0f} MiB while idle"
            started = time.monotonic()
            result = runtime.execute("print('after')")
            seconds = time.monotonic() - started
            # The flood is more than a program's message budget: the kernel is restarted, and says so. Either the host's
            # drain refuses what came while idle, or the kernel died first of its own memory limit (its send queue
            # grows while the host reads no more than its bound); which comes first depends on the machine's speed.
            assert result.kernel_restarted and "[the kernel was restarted" in result.observation
            assert result.error is None or "MiB of messages" in result.error.message, result.error
            assert seconds < kernel_module.STARTUP_TIMEOUT, seconds
            after = runtime.execute("print(40 + 2)\nprint('x' in globals())")
            assert after.output.split() == ["42", "False"] and not after.kernel_restarted
    finally:
        env.close()


def test_messages_of_no_running_program_are_dropped_undecoded(rt):
    # A leftover thread that sends a few signed messages under an old parent header: dropped between
    # and during programs, with no restart and nothing in the observation.
    rt.execute("k = get_ipython().kernel\nimport threading, time\nold = k.get_parent()\n"
               "def chatter():\n    for _ in range(100):\n"
               "        k.session.send(k.iopub_socket, 'stream', {'name': 'stdout', 'text': 'FORGED'}, parent=old)\n"
               "        time.sleep(0.01)\nthreading.Thread(target=chatter, daemon=True).start()")
    time.sleep(0.3)
    result = rt.execute("import time\ntime.sleep(0.5)\nprint('clean')")
    assert result.output.strip() == "clean" and not result.kernel_restarted, result.observation
    answers(rt)


def test_a_forged_oversized_message_loses_the_kernel_not_the_host(restock_task):
    env = restock_task.instantiate("v0", 14)
    try:
        with PTCRuntime(env, timeout=5) as runtime:
            before = rss_mib()
            size = kernel_module.MAX_MESSAGE_BYTES * 4
            result = runtime.execute("k = get_ipython().kernel\n"
                                     f"k.session.send(k.iopub_socket, 'stream', {{'name': 'stdout', 'text': 'q' * {size}}}, "
                                     "parent=k.get_parent())\nprint('sent')")
            assert rss_mib() - before < size / (1 << 20), "the host read the oversized message"
            assert "q" * 100 not in result.output
            after = runtime.execute("print(40 + 2)")
            assert "42" in after.output, after.observation
    finally:
        env.close()


# --- 9: output of an earlier program's thread ------------------------------------------------------------------
def test_a_left_over_threads_prints_stay_out_of_the_next_observation(rt):
    first = rt.execute("import threading, time\nstop = threading.Event()\n"
                       "def chatter():\n    while not stop.is_set():\n        print('OLD THREAD'); time.sleep(0.01)\n"
                       "threading.Thread(target=chatter, daemon=True).start()\ntime.sleep(0.1)\nprint('first')")
    assert "OLD THREAD" in first.output and "first" in first.output  # its own program sees it
    time.sleep(0.2)
    second = rt.execute("import time\ntime.sleep(0.3)\nprint('second')")
    assert "OLD THREAD" not in second.output, second.observation
    assert second.output.startswith("second") and "printed meanwhile by threads of earlier programs were dropped" in second.output
    rt.execute("stop.set()")
    answers(rt)
