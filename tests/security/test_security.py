"""Adversarial programs against the confined kernel.

Every attack asserts two things: it was contained (the secret was not read, the file was not
written, the host survived, the count of processes came back down...) and the runtime still serves
the next program (a tool call works and a variable set before the attacks is still there, unless
the attack could only be stopped by a restart, which must then be reported).

One module-scoped runtime takes almost every attack in turn; the few that end in a restart use a
fresh runtime so that they do not wipe the shared one's state.
"""
import os
import socket
import sqlite3
import time

import pytest

from progagent_lib.runtime import PTCRuntime
from progagent_lib.cache import cache_root
from progagent_lib.task.task import episodes_root

GiB = 1 << 30


@pytest.fixture(scope="module")
def other_episode(restock_task):
    env = restock_task.instantiate("v0", 1)
    (env.workspace / "secret_of_other_episode.txt").write_text("other-episode-secret")
    yield env
    env.close()


@pytest.fixture(scope="module")
def rt(episode):
    # Smaller bounds than the defaults so that the bombs are quick and light on a shared machine.
    with PTCRuntime(episode, timeout=20, memory_limit=2 * GiB, file_size_limit=16 << 20, max_processes=48,
                    max_output_chars=5000) as runtime:
        result = runtime.execute("canary = 'still-here'")
        assert result.error is None, result.observation
        yield runtime


def serves(rt, keep_state=True):
    """The runtime answers the next program: tools work and (normally) the state survived."""
    result = rt.execute("print(tools.get_supplier(supplier_id=1)['id'])\nprint(globals().get('canary'))", timeout=20)
    assert result.error is None, result.observation
    lines = result.output.split()
    assert lines[0] == "1"
    if keep_state:
        assert lines[1] == "still-here"
    group = rt.session.sandbox.group
    pids, main = rt.session.sandbox.group.pids(), rt.session.main_pids()
    assert sorted(pids) == sorted(main) and len(main) == 3, f"processes left behind: {pids} (the waiter, pid 1 and the kernel: {main})"


def denied(result):
    return result.error is not None and result.error.name in ("PermissionError", "FileNotFoundError", "OSError")


# --- reading what the program must not see -------------------------------------------------------------------
@pytest.mark.parametrize("name", ["environment.py", "oracle.py", "generator.py", "task.toml"])
def test_cannot_read_task_files(rt, restock_task, name):
    result = rt.execute(f"print(open({str(restock_task.root / name)!r}).read()[:200])")
    assert denied(result) and "def " not in result.output and "id =" not in result.output
    serves(rt)


def test_cannot_list_the_task_folder(rt, restock_task):
    result = rt.execute(f"import os\nprint(os.listdir({str(restock_task.root)!r}))")
    assert denied(result) and "oracle" not in result.output
    serves(rt)


def test_cannot_read_another_episodes_workspace(rt, other_episode):
    target = other_episode.workspace / "secret_of_other_episode.txt"
    result = rt.execute(f"print(open({str(target)!r}).read())")
    assert denied(result) and "other-episode-secret" not in result.output
    listing = rt.execute(f"import os\nprint(os.listdir({str(episodes_root())!r}))")
    assert denied(listing)
    serves(rt)


def test_cannot_read_the_environment_cache(rt, restock_task, episode):
    restock_task.state_dir("v0", 0)  # make sure it exists
    result = rt.execute(f"import os\nfor root, dirs, files in os.walk({str(cache_root() / 'envs')!r}):\n    print(root, files)")
    assert "data.db" not in result.output and "READY" not in result.output
    db = rt.execute(f"print(open({str(restock_task.state_dir('v0', 0) / 'data.db')!r}, 'rb').read(16))")
    assert denied(db)
    serves(rt)


def test_the_database_never_enters_the_kernel(rt, episode):
    result = rt.execute(f"import sqlite3\nsqlite3.connect({str(episode.db_path)!r}).execute('select * from products').fetchall()")
    assert result.error is not None and "SKU-" not in result.output
    serves(rt)


def test_cannot_read_the_project_tree_or_system_secrets(rt, repo):
    for path in (repo / "pyproject.toml", repo / "progagent_lib" / "task" / "task.py", "/etc/shadow", "/root/.bash_history"):
        result = rt.execute(f"print(open({str(path)!r}).read()[:100])")
        assert denied(result), (path, result.observation)
    serves(rt)


def test_symlink_and_hardlink_do_not_escape(rt, restock_task, other_episode):
    oracle = restock_task.root / "oracle.py"
    secret = other_episode.workspace / "secret_of_other_episode.txt"
    result = rt.execute(f"import os\nos.symlink({str(oracle)!r}, 'oracle_link.py')\nprint(open('oracle_link.py').read())")
    assert denied(result) and "def solve" not in result.output
    hard = rt.execute(f"import os\nos.link({str(secret)!r}, 'stolen.txt')")
    assert denied(hard) and not (rt.workspace / "stolen.txt").exists()
    serves(rt)


def test_host_environment_variables_do_not_leak(rt):
    os.environ["PROGAGENT_TEST_SECRET"] = "host-only-value"
    try:
        result = rt.execute("import os\nprint(sorted(os.environ))\nprint(os.environ.get('PROGAGENT_TEST_SECRET'))")
        assert "host-only-value" not in result.output and "PROGAGENT_CACHE" not in result.output
    finally:
        del os.environ["PROGAGENT_TEST_SECRET"]
    serves(rt)


# --- writing outside the workspace -------------------------------------------------------------------------------
def test_cannot_write_outside_the_workspace(rt, repo, other_episode, restock_task):
    for path in (repo / "pwned.txt", other_episode.workspace / "pwned.txt", restock_task.root / "pwned.txt",
                 "/tmp/pwned-by-kernel.txt", other_episode.workspace.parent / "data.db"):
        result = rt.execute(f"open({str(path)!r}, 'a').write('x')")
        assert denied(result), (path, result.observation)
    assert not (repo / "pwned.txt").exists() and not os.path.exists("/tmp/pwned-by-kernel.txt")
    assert sqlite3.connect(other_episode.db_path).execute("select count(*) from products").fetchone()[0] > 0
    serves(rt)


def test_file_size_is_bounded(rt):
    result = rt.execute("open('big.bin', 'wb').write(b'0' * (64 << 20))")
    assert result.error is not None and "File too large" in result.error.message
    assert (rt.workspace / "big.bin").stat().st_size <= 16 << 20
    (rt.workspace / "big.bin").unlink()
    serves(rt)


# --- network ---------------------------------------------------------------------------------------------------------
def test_cannot_reach_a_loopback_server_on_the_host(rt):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(0.5)
    port = server.getsockname()[1]
    result = rt.execute(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)")
    assert result.error is not None and result.error.name in ("PermissionError", "ConnectionRefusedError", "OSError", "TimeoutError")
    with pytest.raises(socket.timeout):
        server.accept()
    server.close()
    serves(rt)


def test_cannot_reach_the_outside_network(rt):
    tcp = rt.execute("import socket\nsocket.create_connection(('93.184.216.34', 80), timeout=2)")
    assert tcp.error is not None and not tcp.timed_out
    udp = rt.execute("import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.sendto(b'x', ('8.8.8.8', 53))")
    assert udp.error is not None and "unreachable" in udp.error.message.lower()
    dns = rt.execute("import socket\nsocket.getaddrinfo('example.com', 80)")
    assert dns.error is not None
    serves(rt)


def test_cannot_open_a_listening_port(rt):
    result = rt.execute("import socket\ns = socket.socket()\ns.bind(('0.0.0.0', 8765))\ns.listen()")
    assert result.error is not None
    serves(rt)


def test_cannot_reach_an_abstract_unix_socket_of_the_host(rt):
    name = f"\0progagent-test-{os.getpid()}"
    server = socket.socket(socket.AF_UNIX)
    server.bind(name)
    server.listen(1)
    result = rt.execute(f"import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({name!r})")
    assert result.error is not None
    server.close()
    serves(rt)


# --- resources -----------------------------------------------------------------------------------------------------
def test_fork_bomb_is_bounded_and_cleaned_up(rt):
    result = rt.execute("import os, time\nchildren = 0\ntry:\n    while True:\n        if os.fork() == 0:\n"
                        "            time.sleep(60)\n            os._exit(0)\n        children += 1\n"
                        "except BlockingIOError:\n    print('fork refused after', children)")
    assert "fork refused after" in result.output
    assert int(result.output.split()[-1]) < 48
    serves(rt)


def test_shell_fork_bomb_is_bounded_and_cleaned_up(rt):
    result = rt.execute("import subprocess, time\nsubprocess.Popen(['bash', '-c', ':(){ :|:& };:'], stdout=subprocess.DEVNULL,"
                        " stderr=subprocess.DEVNULL)\ntime.sleep(1)\nprint('bomb ran')")
    assert "bomb ran" in result.output or result.error is not None
    serves(rt)


def test_memory_bomb_fails_inside_the_kernel(rt):
    result = rt.execute("blocks = []\nwhile True:\n    blocks.append(bytearray(256 << 20))")
    assert result.error is not None and result.error.name == "MemoryError"
    rt.execute("del blocks")
    serves(rt)


def test_endless_loop_is_interrupted_and_state_kept(rt):
    result = rt.execute("while True:\n    pass", timeout=1)
    assert result.timed_out and not result.kernel_restarted
    serves(rt)


def test_hundred_megabytes_of_output_are_cut(rt):
    result = rt.execute("import sys\nchunk = 'y' * 1_000_000\nfor _ in range(100):\n    sys.stdout.write(chunk)\nprint('end')")
    assert result.truncated and len(result.output) < 6000 and result.output.rstrip().endswith("end")
    serves(rt)


def test_output_through_the_file_descriptor_is_cut(rt):
    result = rt.execute("import os\nfor _ in range(20):\n    os.write(1, b'z' * 1_000_000)\nimport time; time.sleep(0.5)")
    assert len(result.output) < 6000
    serves(rt)


def test_raising_the_limits_is_refused(rt):
    result = rt.execute("import resource\nresource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))")
    assert result.error is not None
    moved = rt.execute("import os\nopen('/sys/fs/cgroup/pids/cgroup.procs', 'w').write(str(os.getpid()))")
    assert denied(moved)
    serves(rt)


# --- the host process ----------------------------------------------------------------------------------------------
def test_cannot_signal_the_host(rt):
    host = os.getpid()
    result = rt.execute(f"import os, signal\nos.kill({host}, signal.SIGKILL)")
    # The sandbox has its own PID namespace: the host's pid names no process there (ESRCH); where
    # the number happens to name one of the sandbox's own, Landlock's signal scope still applies.
    assert result.error is not None and result.error.name in ("ProcessLookupError", "PermissionError"), result.observation
    group = rt.execute(f"import os, signal\nos.killpg(os.getpgid({host}), signal.SIGTERM)")
    assert group.error is not None
    everyone = rt.execute("import os, signal\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept ProcessLookupError:\n"
                          "    pass  # the kernel is alone in its PID namespace\nprint('kernel alive')")
    assert "kernel alive" in everyone.output  # and this test process is evidently still alive
    serves(rt)


def test_cannot_open_the_hosts_files_through_proc(rt, episode):
    host = os.getpid()
    held = sqlite3.connect(episode.db_path)  # the host certainly has the episode database open now
    result = rt.execute(f"import os\nfor fd in os.listdir('/proc/{host}/fd'):\n    try:\n"
                        f"        print(open('/proc/{host}/fd/' + fd, 'rb').read(16))\n    except OSError as exc:\n"
                        f"        pass\nprint(open('/proc/{host}/environ').read())")
    assert denied(result) and "SQLite format" not in result.output
    root = rt.execute(f"print(open('/proc/{host}/root{episode.db_path}', 'rb').read(16))")
    assert denied(root)
    held.close()
    serves(rt)


def test_ctypes_cannot_regain_privileges(rt):
    code = ("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nresults = {}\n"
            "results['unshare_user_mount'] = libc.unshare(0x10000000 | 0x00020000)\n"
            "results['mount_tmpfs'] = libc.mount(b'none', b'/mnt', b'tmpfs', 0, None)\n"
            "results['setns_host_net'] = libc.setns(__import__('os').open('/proc/1/ns/net', 0), 0) if False else -1\n"
            f"results['ptrace_host'] = libc.ptrace(16, {os.getpid()}, None, None)\n"
            "results['chroot'] = libc.chroot(b'/')\n"
            "print(results)")
    result = rt.execute(code)
    assert result.error is None, result.observation
    values = eval(result.output)  # noqa: S307 - our own program's printed dict
    assert all(value == -1 for value in values.values()), values
    caps = rt.execute("import ctypes\nheader = (ctypes.c_uint32 * 2)(0x20080522, 0)\ndata = (ctypes.c_uint32 * 6)()\n"
                      "print(ctypes.CDLL(None).capget(header, data), list(data))")  # no /proc: capget(2) itself
    assert caps.output.strip() == "0 [0, 0, 0, 0, 0, 0]", caps.observation
    serves(rt)


# --- forging tool results and reaching the environment ---------------------------------------------------------
def test_replacing_tools_forges_nothing_on_the_host(rt, episode):
    orders_before = episode.db.execute("select count(*) from purchase_orders").fetchone()[0]
    calls_before = len(episode.call_log)
    result = rt.execute("real_tools = tools\nclass Forged:\n    def create_purchase_order(self, **kw):\n"
                        "        return {'order_id': 999, 'status': 'open'}\n"
                        "tools = Forged()\nprint(tools.create_purchase_order(product_id=1, supplier_id=1, quantity=5))\n"
                        "tools = real_tools")
    assert "999" in result.output and result.tool_calls == []  # the host saw no call
    assert episode.db.execute("select count(*) from purchase_orders").fetchone()[0] == orders_before
    assert len(episode.call_log) == calls_before
    serves(rt)


def test_raw_bridge_frames_cannot_call_non_tool_methods(rt, episode):
    code = ("import socket, json, struct, os\n"
            "tools._functions.clear()\n"
            "for name in ('verify', 'criteria', 'close', '__class__', 'query'):\n"
            "    try:\n        getattr(tools, name)\n    except AttributeError as exc:\n        print('refused', name)\n"
            "try:\n    tools.verify(final_response='x')\nexcept Exception as exc:\n    print(type(exc).__name__)\n")
    result = rt.execute(code)
    assert "refused verify" in result.output and "refused query" in result.output
    forged = rt.execute("import inspect\nreq = [c.cell_contents for c in tools.get_supplier.__closure__ if callable(c.cell_contents)]\n"
                        "for fn in req:\n    try:\n        print(fn({'name': 'verify', 'arguments': {'final_response': 'x'}}))\n"
                        "    except Exception as exc:\n        print('bridge said:', exc)")
    assert "bridge said: no tool named 'verify'" in forged.output
    assert not episode.done and not episode.closed
    serves(rt)


def test_importing_the_host_modules_fails(rt, repo):
    result = rt.execute(f"import sys\nsys.path.insert(0, {str(repo)!r})\nimport progagent_lib.task")
    assert result.error is not None and result.error.name in ("PermissionError", "ModuleNotFoundError", "ImportError")
    found = rt.execute("import gc\nprint(sorted({type(o).__name__ for o in gc.get_objects() if 'Env' in type(o).__name__}))")
    assert "RestockEnv" not in found.output
    serves(rt)


# --- attacks that can only end in a restart: fresh runtimes -------------------------------------------------------
def test_program_ignoring_interrupts_is_killed_and_the_restart_reported(tmp_path, episode):
    with PTCRuntime(episode, timeout=10) as runtime:
        runtime.execute("kept = 1")
        result = runtime.execute("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass", timeout=1)
        assert result.timed_out and result.kernel_restarted
        assert "lost" in result.observation
        after = runtime.execute("print('kept' in globals(), tools.get_supplier(supplier_id=1)['id'])")
        assert after.output.strip() == "False 1"


def test_segfault_through_ctypes_restarts_the_kernel(episode):
    with PTCRuntime(episode, timeout=10) as runtime:
        result = runtime.execute("import ctypes\nctypes.string_at(0)")
        assert result.kernel_restarted and result.error.name == "KernelDied"
        assert runtime.execute("print(tools.get_supplier(supplier_id=1)['id'])").output.strip() == "1"


def test_cannot_reach_a_pathname_unix_socket_of_the_host(rt, tmp_path):
    path = tmp_path / "host.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(1)
    server.settimeout(0.3)
    result = rt.execute(f"import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({str(path)!r})")
    assert result.error is not None and result.error.name == "PermissionError"
    with pytest.raises(socket.timeout):
        server.accept()
    server.close()
    serves(rt)


def test_terminal_cannot_reach_a_pathname_unix_socket(tmp_path):
    from progagent_lib.runtime import run_terminal

    path = tmp_path / "host.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(1)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    result = run_terminal(workspace, f"python3 -c \"import socket; socket.socket(socket.AF_UNIX).connect('{path}')\"")
    assert result.exit_code != 0 and "PermissionError" in result.output
    server.close()


def test_a_thread_left_running_cannot_call_tools_after_the_program_ends(rt, episode):
    rt.execute("import threading, time\nlate = []\ndef later():\n    time.sleep(0.5)\n    try:\n"
               "        late.append(tools.create_purchase_order(product_id=1, supplier_id=1, quantity=3))\n"
               "    except Exception as exc:\n        late.append(str(exc))\nthreading.Thread(target=later).start()")
    orders = episode.db.execute("select count(*) from purchase_orders").fetchone()[0]
    time.sleep(1.0)
    assert episode.db.execute("select count(*) from purchase_orders").fetchone()[0] == orders
    result = rt.execute("print(late)")
    assert "only be called while a program runs" in result.output and result.tool_calls == []
    serves(rt)


def test_memory_of_all_forked_processes_is_bounded_together(episode):
    with PTCRuntime(episode, timeout=20, memory_limit=512 << 20) as runtime:
        if runtime.session.sandbox.group.memory_path is None:
            pytest.skip("no writable cgroup v1 memory controller: only the per-process rlimit applies here")
        result = runtime.execute("import os, time\nkids = []\nfor _ in range(4):\n    pid = os.fork()\n    if pid == 0:\n"
                                 "        block = bytearray(200 << 20)\n        time.sleep(3)\n        os._exit(0)\n"
                                 "    kids.append(pid)\nprint([os.waitpid(k, 0)[1] for k in kids])")
        statuses = eval(result.output) if result.error is None else None  # noqa: S307 - our program's printed list
        # Each child alone fits its rlimit; together they exceed the sandbox's memory: some are killed.
        assert result.kernel_restarted or (statuses and any(s == 9 for s in statuses)), result.observation
        assert runtime.execute("print(tools.get_supplier(supplier_id=1)['id'])").output.strip() == "1"
