"""Adversarial programs against the host side: the tools, the bridge, the kernel's sockets, the verifier.

`test_security.py` attacks the kernel's confinement; this file attacks what runs *outside* it as the
host (unconfined, as root): the workspace file tools (symlink and FIFO swaps under a flipping thread),
the tool socket (raw and fuzzed frames), the kernel's own Jupyter sockets, floods through arguments,
errors and the disk, and a verifier racing a thread left running.

After every attack the runtime must answer `print(40 + 2)` and a tool call (`answers`). Race loops
are bounded (a few thousand tries each) so the file runs in well under a minute of tries in all.
"""
import json
import os
import random
import struct
import subprocess
import sys
import time

import pytest

from progagent_lib.runtime import PTCRuntime
from progagent_lib.runtime import bridge as bridge_module
from progagent_lib.task import ToolError
from progagent_lib.task.environment import MAX_ERROR_CHARS, MAX_LOGGED_ARGUMENT_CHARS
from progagent_lib.task.task import sweep_episode_copies

GiB = 1 << 30
TRIES = 2000  # per race: the old resolve-then-open lost within ~40


@pytest.fixture(scope="module")
def rt(episode):
    with PTCRuntime(episode, timeout=30, memory_limit=2 * GiB, file_size_limit=64 << 20, max_processes=48,
                    max_output_chars=5000) as runtime:
        assert runtime.execute("canary = 'still-here'").error is None
        yield runtime


def answers(rt, keep_state=True):
    """The runtime still serves: a plain program, a tool call, and (normally) the earlier state."""
    result = rt.execute("print(40 + 2)\nprint(tools.get_supplier(supplier_id=1)['id'])\nprint(globals().get('canary'))",
                        timeout=20)
    assert result.error is None and not result.timed_out, result.observation
    lines = result.output.split()
    assert lines[:2] == ["42", "1"], result.observation
    if keep_state:
        assert lines[2] == "still-here"
    pids, main = rt.session.sandbox.group.pids(), rt.session.main_pids()
    assert sorted(pids) == sorted(main) and len(main) == 3, f"processes left behind: {pids} (the waiter, pid 1 and the kernel: {main})"


# A flipping thread: swaps two names atomically, as fast as it can, until told to stop.
FLIPPER = """
import ctypes, os, threading
_libc = ctypes.CDLL(None, use_errno=True)
RENAME_EXCHANGE = 2
def start_flipper(a, b):
    stop = threading.Event()
    def flip():
        while not stop.is_set():
            _libc.renameat2(-100, a.encode(), -100, b.encode(), RENAME_EXCHANGE)
    thread = threading.Thread(target=flip, daemon=True)
    thread.start()
    return stop, thread
"""


def run_race(rt, setup: str, loop_body: str, tries: int = TRIES) -> dict:
    """Set the stage, flip two names in a thread while calling a tool `tries` times; returns counts."""
    code = FLIPPER + setup + f"""
stop, thread = start_flipper(A, B)
seen = {{"ok": 0, "errors": {{}}, "leaks": 0}}
try:
    for _ in range({tries}):
        try:
{loop_body}
            seen["ok"] += 1
        except ToolError as exc:
            key = str(exc)[:60]
            seen["errors"][key] = seen["errors"].get(key, 0) + 1
finally:
    stop.set()
    thread.join()
import json as _json
print(_json.dumps(seen))
"""
    result = rt.execute(code, timeout=120)
    assert result.error is None and not result.timed_out, result.observation
    return json.loads(result.output.strip().splitlines()[-1])


# --- 1. symlink races in the file tools -------------------------------------------------------------------------
def test_race_read_file_never_reads_through_a_swapped_symlink(rt, restock_task):
    setup = f"""
import os
os.makedirs('race_r/real', exist_ok=True)
open('race_r/real/oracle.py', 'w').write('decoy')
if not os.path.lexists('race_r/link'):
    os.symlink({str(restock_task.root)!r}, 'race_r/link')
A, B = 'race_r/real', 'race_r/link'
"""
    body = """            text = tools.read_file(path='race_r/real/oracle.py')
            if 'def solve' in text:
                seen["leaks"] += 1"""
    seen = run_race(rt, setup, body)
    assert seen["leaks"] == 0
    assert seen["ok"] > 0 and any("symbolic link" in e or "no file" in e for e in seen["errors"]), seen
    answers(rt)


def test_race_write_file_never_writes_outside(rt, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    setup = f"""
import os
os.makedirs('race_w/real', exist_ok=True)
if not os.path.lexists('race_w/link'):
    os.symlink({str(outside)!r}, 'race_w/link')
A, B = 'race_w/real', 'race_w/link'
"""
    body = """            tools.write_file(path='race_w/real/pwned.txt', content='x')"""
    seen = run_race(rt, setup, body)
    assert list(outside.iterdir()) == [], "a file was written outside the workspace"
    assert seen["ok"] > 0, seen
    answers(rt)


def test_race_write_file_deep_path_never_writes_outside(rt, tmp_path):
    outside = tmp_path / "outside_deep"
    (outside / "sub").mkdir(parents=True)
    setup = f"""
import os
os.makedirs('race_d/real/sub', exist_ok=True)
if not os.path.lexists('race_d/link'):
    os.symlink({str(outside)!r}, 'race_d/link')
A, B = 'race_d/real', 'race_d/link'
"""
    body = """            tools.write_file(path='race_d/real/sub/new/pwned.txt', content='x')"""
    run_race(rt, setup, body, tries=1000)
    assert list((outside / "sub").iterdir()) == []
    answers(rt)


def test_race_list_files_never_lists_through_a_swapped_symlink(rt, tmp_path):
    outside = tmp_path / "outside_list"
    outside.mkdir()
    (outside / "host_secret.txt").write_text("s")
    setup = f"""
import os
os.makedirs('race_l/real', exist_ok=True)
if not os.path.lexists('race_l/link'):
    os.symlink({str(outside)!r}, 'race_l/link')
A, B = 'race_l/real', 'race_l/link'
"""
    body = """            page = tools.list_files(pattern='race_l/*')
            if any('host_secret' in f['path'] for f in page['items']):
                seen["leaks"] += 1"""
    seen = run_race(rt, setup, body, tries=500)
    assert seen["leaks"] == 0
    answers(rt)


# --- 2. FIFO swaps: nothing may block the host --------------------------------------------------------------------
def test_race_fifo_swap_during_read_file_does_not_hang(rt):
    setup = """
import os
open('race_f_file.txt', 'w').write('plain text')
if not os.path.lexists('race_f_fifo'):
    os.mkfifo('race_f_fifo')
A, B = 'race_f_file.txt', 'race_f_fifo'
"""
    body = """            assert tools.read_file(path='race_f_file.txt') == 'plain text'"""
    seen = run_race(rt, setup, body)
    assert seen["ok"] > 0 and any("not a regular file" in e for e in seen["errors"]), seen
    answers(rt)


def test_race_fifo_swap_during_write_file_does_not_hang(rt):
    setup = """
import os
open('race_fw_file.txt', 'w').write('x')
if not os.path.lexists('race_fw_fifo'):
    os.mkfifo('race_fw_fifo')
A, B = 'race_fw_file.txt', 'race_fw_fifo'
"""
    body = """            tools.write_file(path='race_fw_file.txt', content='y')"""
    seen = run_race(rt, setup, body)
    assert seen["ok"] > 0, seen
    answers(rt)


def test_fifo_with_a_reader_waiting_cannot_block_read_file(rt):
    result = rt.execute("import os\nif not os.path.exists('plain_fifo'):\n    os.mkfifo('plain_fifo')\n"
                        "try:\n    tools.read_file(path='plain_fifo')\nexcept ToolError as exc:\n    print(exc)", timeout=20)
    assert "not a regular file" in result.output and not result.timed_out
    answers(rt)


def test_left_over_thread_swapping_the_report_for_a_fifo_cannot_hang_the_verifier(restock_task):
    env = restock_task.instantiate("v0", 5)
    try:
        with PTCRuntime(env, timeout=20) as runtime:
            result = runtime.execute(FLIPPER + """
import os
open('restock_report.csv', 'w').write('sku,supplier,quantity,cost\\n')
os.mkfifo('fifo_for_verifier')
stop, thread = start_flipper('restock_report.csv', 'fifo_for_verifier')
""")
            assert result.error is None, result.observation
            verdict = env.verify("total 0", timeout=20)  # the flipper is still running in the kernel
            assert verdict.criteria and not verdict.reward
            answers_result = runtime.execute("print(40 + 2)\nprint(tools.get_supplier(supplier_id=1)['id'])")
            assert answers_result.output.split() == ["42", "1"]
    finally:
        env.close()


# --- 3. links, devices and paths that leave the workspace (no race needed) --------------------------------------
@pytest.mark.parametrize("target", ["/etc/passwd", "/dev/zero", "/proc/self/environ", "../data.db"])
def test_read_file_refuses_links_to_anything(rt, target):
    result = rt.execute(f"import os\nname = 'lnk_' + str(abs(hash({target!r})))\n"
                        f"if not os.path.lexists(name):\n    os.symlink({target!r}, name)\n"
                        "try:\n    print(tools.read_file(path=name)[:50])\nexcept ToolError as exc:\n    print('refused:', exc)")
    assert "refused:" in result.output and "symbolic link" in result.output, result.observation
    answers(rt)


def test_read_file_refuses_dotdot_paths(rt):
    result = rt.execute("for p in ('../data.db', 'docs/../../data.db', '/etc/passwd'):\n    try:\n"
                        "        tools.read_file(path=p)\n    except ToolError as exc:\n        print('refused', exc)")
    assert result.output.count("refused") == 3
    answers(rt)


def test_write_file_onto_a_symlink_leaves_its_target_alone(rt, tmp_path):
    target = tmp_path / "host_file.txt"
    target.write_text("host")
    result = rt.execute(f"import os\nos.symlink({str(target)!r}, 'lnk_write')\n"
                        "try:\n    tools.write_file(path='lnk_write', content='pwned')\nexcept ToolError as exc:\n    print('refused', exc)")
    assert "refused" in result.output
    assert target.read_text() == "host"
    answers(rt)


def test_write_file_refuses_a_hard_linked_file(rt):
    result = rt.execute("import os\nopen('hl_a.txt', 'w').write('a')\nos.link('hl_a.txt', 'hl_b.txt')\n"
                        "try:\n    tools.write_file(path='hl_b.txt', content='b')\nexcept ToolError as exc:\n    print('refused', exc)")
    assert "refused" in result.output and "hard links" in result.output
    answers(rt)


def test_list_files_does_not_follow_links_as_the_host(rt):
    result = rt.execute("import os\nos.symlink('/etc/shadow', 'shadow_link')\nos.symlink('/etc', 'etc_link')\n"
                        "print([f for f in tools.list_files(pattern='*')['items'] if f['path'].startswith(('shadow_link', 'etc_link'))])")
    assert result.output.strip() == "[]", result.observation
    answers(rt)


# --- 4. floods: errors, arguments, call counts, the disk ------------------------------------------------------------
def test_a_thirty_megabyte_exception_message_is_bounded(rt):
    result = rt.execute("raise ValueError('z' * (30 << 20))")
    assert result.error is not None and result.error.name == "ValueError"
    assert len(result.observation) < 3 * rt.max_output_chars
    answers(rt)


def test_a_tool_error_echoing_a_huge_argument_is_bounded(rt):
    result = rt.execute("try:\n    tools.get_supplier(supplier_id='z' * (3 << 20))\nexcept ToolError as exc:\n"
                        "    print(len(str(exc)))")
    assert int(result.output.strip()) <= MAX_ERROR_CHARS + 100
    answers(rt)


def test_huge_arguments_are_not_kept_in_the_call_logs(rt, episode):
    before = len(episode.call_log)
    result = rt.execute("junk = 'j' * (3 << 20)\nfor _ in range(11):\n    try:\n"
                        "        tools.list_products(page=1, category=junk)\n    except ToolError:\n        pass\ndel junk")
    assert result.error is None, result.observation
    assert len(result.tool_calls) == 11
    for call in [*result.tool_calls, *episode.call_log[before:]]:
        assert len(json.dumps(call.arguments)) < 4 * MAX_LOGGED_ARGUMENT_CHARS
        assert call.arguments["category"]["omitted"] and call.arguments["category"]["chars"] >= 3 << 20
    answers(rt)


def test_call_records_per_program_are_bounded(rt, monkeypatch):
    monkeypatch.setattr(bridge_module, "MAX_CALL_RECORDS", 50)
    result = rt.execute("for _ in range(80):\n    tools.get_supplier(supplier_id=1)")
    assert len(result.tool_calls) == 50 and result.tool_calls_not_recorded == 30
    answers(rt)


def test_disk_flood_stops_at_the_workspace_quota(restock_task):
    env = restock_task.instantiate("v0", 6, workspace_quota=48 << 20)
    try:
        assert env.quota_mounted
        with PTCRuntime(env, timeout=60, file_size_limit=32 << 20) as runtime:
            result = runtime.execute("written = 0\nchunk = b'x' * (1 << 20)\ntry:\n    for i in range(8):\n"
                                     "        with open(f'flood_{i}.bin', 'wb') as fh:\n            for _ in range(32):\n"
                                     "                fh.write(chunk)\n                written += len(chunk)\n"
                                     "except OSError as exc:\n    print('stopped', exc.errno)\nprint(written)")
            assert "stopped 28" in result.output, result.observation  # ENOSPC
            assert int(result.output.split()[-1]) <= 48 << 20
            used = sum(p.stat().st_size for p in env.workspace.rglob("*") if p.is_file())
            assert used <= 48 << 20
            full = runtime.execute("try:\n    tools.write_file(path='more.txt', content='x' * (1 << 20))\n"
                                   "except ToolError as exc:\n    print(exc)")
            assert "quota" in full.output or "full" in full.output, full.observation
            runtime.execute("import glob, os\nfor f in glob.glob('flood_*'):\n    os.remove(f)")
            assert runtime.execute("print(40 + 2)\nprint(tools.get_supplier(supplier_id=1)['id'])").output.split() == ["42", "1"]
    finally:
        env.close()


def test_write_file_checks_the_quota_where_no_mount_bounds_it(restock_task):
    env = restock_task.instantiate("v0", 7, workspace_quota=None)
    try:
        env.workspace_quota = env.fs.quota_bytes = 4096
        env.tools.write_file("small.txt", "x" * 1000)
        with pytest.raises(ToolError, match="quota"):
            env.tools.write_file("big.txt", "x" * 5000)
    finally:
        env.close()


def test_many_small_files_stop_at_the_inode_bound(rt):
    result = rt.execute("import os\nos.makedirs('inodes', exist_ok=True)\nmade = 0\ntry:\n"
                        "    for i in range(60_000):\n        open(f'inodes/{i}', 'w').close()\n        made += 1\n"
                        "except OSError as exc:\n    print('stopped', exc.errno)\nprint(made)\n"
                        "import shutil\nshutil.rmtree('inodes')", timeout=60)
    assert "stopped 28" in result.output, result.observation
    answers(rt)


def test_a_host_side_call_past_the_deadline_is_stopped(episode):
    with pytest.raises(ToolError, match="time limit"):
        episode.call_tool("list_files", {"pattern": "*"}, deadline=time.monotonic() - 1)
    with pytest.raises(ToolError, match="time limit"):
        episode.call_tool("list_products", {"page": 1}, deadline=time.monotonic() - 1)
    # a query that runs past the deadline is stopped by sqlite's progress handler, with the reason given
    episode._deadline = time.monotonic() - 1
    try:
        with pytest.raises(Exception, match="interrupted"):
            episode.db.execute("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c").fetchone()
    finally:
        episode._deadline = None
    assert episode.call_tool("list_products", {"page": 1})["items"]


# --- 5. the tool socket: raw frames -----------------------------------------------------------------------------
RAW = """
import json, struct
def _bridge():
    req = next(c.cell_contents for c in tools.get_supplier.__closure__
               if getattr(c.cell_contents, '__name__', '') == 'request')
    cells = dict(zip(req.__code__.co_freevars, (c.cell_contents for c in req.__closure__)))
    return cells['sock'], cells['lock'], cells['recv_exact']
sock, lock, recv_exact = _bridge()
def raw(body):
    with lock:
        sock.sendall(struct.pack('!I', len(body)) + body)
        (n,) = struct.unpack('!I', recv_exact(4))
        return json.loads(recv_exact(n))
"""


@pytest.mark.parametrize("body", [
    b"not json at all", b"[1, 2, 3]", b"\xff\xfe\xfd", b"[" * 200_000 + b"]" * 200_000, b'"a string"', b"null",
    b'{"id": [1], "name": 5, "arguments": []}', b'{"id": 1, "name": "get_supplier", "arguments": [1]}',
    b'{"id": 1, "name": "get_supplier", "arguments": {"supplier_id": {"a": {"b": {"c": 1}}}}}',
    b'{"id": 1, "name": "get_supplier", "arguments": ' + b'{"a":' * 60 + b"1" + b"}" * 60 + b"}",
    b'{"id": 1, "op": "specs", "name": "verify"}' + b" " * 10, b'{"id": 1, "name": "criteria", "arguments": {}}',
], ids=["text", "list", "bad-utf8", "deep-list", "string", "null", "wrong-types", "list-arguments", "nested-argument",
        "deep-arguments", "specs", "non-tool"])
def test_malformed_frames_get_an_error_reply_and_the_bridge_goes_on(rt, body):
    result = rt.execute(RAW + f"print(json.dumps(raw({body!r})))")
    assert result.error is None, result.observation
    reply = json.loads(result.output.strip().splitlines()[-1])
    if b'"op": "specs"' in body:
        assert "result" in reply
    else:
        assert "error" in reply
    assert rt.session.bridge.serving
    answers(rt)


def test_an_oversized_frame_is_discarded_and_refused(rt):
    size = bridge_module.MAX_FRAME + 1
    result = rt.execute(RAW + f"with lock:\n    sock.sendall(struct.pack('!I', {size}))\n"
                        f"    chunk = b' ' * (1 << 20)\n    left = {size}\n    while left:\n"
                        "        sock.sendall(chunk[:left])\n        left -= min(left, len(chunk))\n"
                        "    (n,) = struct.unpack('!I', recv_exact(4))\n    print(json.loads(recv_exact(n))['error'])")
    assert "at most" in result.output, result.observation
    answers(rt)


def test_fuzzed_frames_are_all_answered(rt):
    rng = random.Random(14)
    bodies = [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))) for _ in range(300)]
    bodies += [json.dumps(rng.choice([{"id": rng.random()}, {"name": None}, {"arguments": {}}, [], 3.5, {"id": "x" * 500,
                                      "name": "get_supplier", "arguments": {"supplier_id": "1"}}])).encode() for _ in range(100)]
    result = rt.execute(RAW + f"bodies = {bodies!r}\nreplies = [raw(b) for b in bodies]\n"
                        "print(sum('error' in r for r in replies), len(replies))")
    errors, total = map(int, result.output.split())
    assert total == 400 and errors == 400
    answers(rt)


def test_a_frame_that_stops_short_restarts_the_kernel_with_state_lost(restock_task):
    env = restock_task.instantiate("v0", 8)
    try:
        with PTCRuntime(env, timeout=20) as runtime:
            runtime.execute("x = 1")
            runtime.execute(RAW + "sock.sendall(struct.pack('!I', 100) + b'{\"id\": 1')")
            time.sleep(bridge_module.FRAME_IDLE + 1)
            result = runtime.execute("print(40 + 2)\nprint(tools.get_supplier(supplier_id=1)['id'])\nprint('x' in globals())")
            assert result.output.split() == ["42", "1", "False"], result.observation
            assert result.kernel_restarted and "restarted" in result.observation
    finally:
        env.close()


# --- 6. the kernel's own Jupyter sockets ------------------------------------------------------------------------
def test_garbage_on_the_kernels_iopub_socket_restarts_it_with_state_lost(restock_task):
    env = restock_task.instantiate("v0", 9)
    try:
        with PTCRuntime(env, timeout=20) as runtime:
            runtime.execute("x = 1")
            # Garbage that does not name the running program is dropped on its raw bytes, undecoded.
            ignored = runtime.execute("k = get_ipython().kernel\n"
                                      "k.iopub_socket.send_multipart([b'garbage', b'<IDS|MSG>', b'x', b'{', b'{', b'{', b'{'])\n"
                                      "import time\ntime.sleep(0.5)\nprint('on')")
            assert ignored.output.strip() == "on" and not ignored.kernel_restarted, ignored.observation
            # Garbage that names it must be decoded, fails, and the kernel is restarted.
            result = runtime.execute("me = k.get_parent()['header']['msg_id'].encode()\n"
                                     "k.iopub_socket.send_multipart([b'garbage', b'<IDS|MSG>', b'x', b'{', b'{\"msg_id\": \"' + me + b'\"', b'{', b'{'])\n"
                                     "time.sleep(1)")
            assert result.kernel_restarted and result.error is not None and result.error.name == "KernelProtocolError"
            after = runtime.execute("print(40 + 2)\nprint(tools.get_supplier(supplier_id=1)['id'])\nprint('x' in globals())")
            assert after.output.split() == ["42", "1", "False"]
    finally:
        env.close()


def test_signed_messages_of_the_wrong_shape_restart_the_kernel(restock_task):
    env = restock_task.instantiate("v0", 10)
    try:
        with PTCRuntime(env, timeout=20) as runtime:
            # The kernel holds the key: it can sign anything. A content that is a list, a parent that is a string.
            result = runtime.execute("k = get_ipython().kernel\ns = k.session\n"
                                     "msg = s.msg('stream', content={}, parent=k.get_parent())\n"
                                     "frames = [s.pack(msg['header']), s.pack(msg['parent_header']), s.pack({}), b'[1, 2]']\n"
                                     "k.iopub_socket.send_multipart([b'stream', b'<IDS|MSG>', s.sign(frames), *frames])\n"
                                     "import time\ntime.sleep(1)")
            assert result.kernel_restarted, result.observation
            after = runtime.execute("print(40 + 2)\nprint(tools.get_supplier(supplier_id=1)['id'])")
            assert after.output.split() == ["42", "1"]
    finally:
        env.close()


def test_stream_text_of_the_wrong_type_is_ignored(rt):
    result = rt.execute("k = get_ipython().kernel\nk.session.send(k.iopub_socket, 'stream', "
                        "{'name': 'stdout', 'text': 12345}, parent=k.get_parent())\nprint('after')")
    assert "after" in result.output and result.error is None
    answers(rt)


# --- 7. processes and threads left behind ------------------------------------------------------------------------
def test_a_process_started_by_a_left_over_thread_does_not_live_into_the_next_program(rt):
    rt.execute("import threading, subprocess, time\nstray = {}\ndef later():\n    time.sleep(0.3)\n"
               "    stray['pid'] = subprocess.Popen(['sleep', '60']).pid\nthreading.Thread(target=later, daemon=True).start()")
    time.sleep(1.0)
    # The sandbox has its own PID namespace (and no /proc): ask the Linux kernel with signal 0.
    result = rt.execute("import os\ntry:\n    os.kill(stray['pid'], 0)\n    alive = True\nexcept ProcessLookupError:\n"
                        "    alive = False\nprint(stray.get('pid') is not None, alive)")
    assert result.output.split() == ["True", "False"], result.observation
    answers(rt)


def test_episode_copies_of_a_dead_process_are_swept(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    left = tmp_path / f"retail_restock_orders-v0-p{pid}-abc123"
    (left / "workspace").mkdir(parents=True)
    mine = tmp_path / f"retail_restock_orders-v0-p{os.getpid()}-def456"
    mine.mkdir()
    removed = sweep_episode_copies(tmp_path)
    assert removed == [left] and not left.exists() and mine.exists()


# --- 8. tools called as Python allows ------------------------------------------------------------------------------
def test_tools_accept_positional_arguments_in_process_and_in_the_kernel(rt, episode):
    assert episode.tools.get_supplier(1)["id"] == 1
    assert episode.tools.read_file("docs/purchasing_policy.md")
    with pytest.raises(ToolError, match="positional"):
        episode.tools.get_supplier(1, 2)
    with pytest.raises(ToolError, match="multiple values"):
        episode.tools.get_supplier(1, supplier_id=1)
    result = rt.execute("print(tools.get_supplier(1)['id'], len(tools.read_file('docs/purchasing_policy.md')) > 0)")
    assert result.output.split() == ["1", "True"], result.observation
    answers(rt)


def test_a_file_name_that_is_not_utf8_reaches_the_records_safely(rt, tmp_path):
    from progagent_lib.harness.trajectory import Trajectory, read_jsonl, write_jsonl

    result = rt.execute("import os\nopen(os.fsencode('odd') + b'\\xff.txt', 'w').write('x')\n"
                        "print([f['path'] for f in tools.list_files(pattern='odd*')['items']])")
    assert "odd" in result.output
    trajectory = Trajectory(task_id="t", scale="v0", seed=0, harness="ptc", policy="p", sample=0,
                            messages=[{"role": "tool", "content": result.observation}])
    path = tmp_path / "t.jsonl"
    write_jsonl(trajectory, path)
    assert read_jsonl(path)[0].messages == trajectory.messages
    answers(rt)
