"""Finding 4 of round three: one bridge frame must not cost the host gigabytes.

A frame just under the old 64 MiB bound, filled with `[{},{},...]`, grew the host by ~3 GB (49 times
its size): it was parsed whole, then walked for its depth. Now a frame over MAX_FRAME is read off in
pieces and refused, and a frame's bytes are scanned for the values and the nesting they can make
before they are parsed, so what a frame costs the host stays a small multiple of its size.

Checked here:
- the attack for real, from a program in a live confined kernel writing into the bridge's socket: the
  host's peak resident memory grows by little, the frame gets an error reply, and the bridge serves on;
- deep and over-count frames are refused with error replies that say why; brackets and commas inside
  strings are not structure, so a long argument full of them still reaches its tool;
- the scan's verdict is the parsed structure's, on random JSON (escapes, brackets in strings, spaces);
- the host's frame reader on a bare socketpair: frames sent together, in pieces, larger than its
  buffer, and over the bound, each answered in order;
- requests and replies on sockets of their own: a call wakes the host's serving thread once, not twice
  (one socket both ways woke each side a second time for nothing, a cost on every call).
"""
import json
import random
import socket
import struct
import threading
import time
from pathlib import Path

import pytest

from progagent_lib.runtime import PTCRuntime
from progagent_lib.runtime import bridge as bridge_module
from security.test_host_attacks import RAW as HOST_ATTACKS_RAW
from progagent_lib.runtime.bridge import BadFrame, BridgeServer, check_shape, parse_request

GiB = 1 << 30
MiB = 1 << 20


def status_kib(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {key} in /proc/self/status")


class peak_growth:
    """The host process's peak resident memory during the block, in MiB above what it held at the start.

    The peak (VmHWM) is reset to the current size first (`/proc/self/clear_refs`); where that is not
    allowed, a thread samples VmRSS every millisecond instead.
    """

    def __enter__(self):
        try:
            Path("/proc/self/clear_refs").write_text("5")
            self.sampler = None
        except OSError:
            self.samples, self.stop = [], threading.Event()
            self.sampler = threading.Thread(target=self._sample, daemon=True)
        self.start = status_kib("VmRSS")
        if self.sampler is not None:
            self.sampler.start()
        return self

    def _sample(self):
        while not self.stop.is_set():
            self.samples.append(status_kib("VmRSS"))
            time.sleep(0.001)

    def __exit__(self, *exc):
        if self.sampler is None:
            peak = status_kib("VmHWM")
        else:
            self.stop.set()
            self.sampler.join()
            peak = max(self.samples + [status_kib("VmRSS")])
        self.mib = (peak - self.start) / 1024


@pytest.fixture(scope="module")
def rt(episode):
    with PTCRuntime(episode, timeout=60, memory_limit=2 * GiB, max_processes=48, max_output_chars=5000) as runtime:
        assert runtime.execute("canary = 'still-here'").error is None
        yield runtime


def answers(rt):
    """The bridge still serves an ordinary call, and the kernel kept its state."""
    result = rt.execute("print(tools.get_supplier(supplier_id=1)['id'])\nprint(globals().get('canary'))", timeout=20)
    assert result.error is None and not result.timed_out, result.observation
    assert result.output.split() == ["1", "still-here"], result.observation
    assert rt.session.bridge.serving and rt.session.bridge.broken is None


# The program's way into the bridge: the proxy's own socket, lock and reader, from its closure
# (test_host_attacks.py's prelude, whose `raw(body)` sends one frame and returns the host's reply).
RAW = HOST_ATTACKS_RAW + "send_frame = raw\n"


def run_raw(rt, code: str) -> dict:
    result = rt.execute(RAW + code, timeout=60)
    assert result.error is None, result.observation
    return json.loads(result.output.strip().splitlines()[-1])


# --- the attack, from a live confined kernel --------------------------------------------------------------------
def test_a_frame_of_empty_objects_just_under_the_bound_costs_the_host_little(rt):
    size = bridge_module.MAX_FRAME
    with peak_growth() as grown:
        reply = run_raw(rt, f"n = ({size} - 2) // 3\nbody = b'[' + b'{{}},' * (n - 1) + b'{{}}]'\n"
                            f"assert {size} - 4 < len(body) <= {size}\n"
                            "print(json.dumps(send_frame(body)))")
    assert reply["id"] is None and f"more than {bridge_module.MAX_VALUES} values" in reply["error"]
    # The frame itself is held once; parsing it would have cost ~70 bytes a value (~100 MB at 4 MiB, ~750 MB at 32).
    assert grown.mib < 200, f"the host grew by {grown.mib:.0f} MiB for one frame of {size >> 20} MiB"
    answers(rt)


def test_a_frame_over_the_bound_is_refused_without_being_held(rt):
    size = 2 * bridge_module.MAX_FRAME
    with peak_growth() as grown:
        reply = run_raw(rt, f"with lock:\n    sock.sendall(struct.pack('!I', {size}))\n"
                            "    chunk = b'[' * (1 << 20)\n"
                            f"    for _ in range({size} >> 20):\n        sock.sendall(chunk)\n"
                            "    (n,) = struct.unpack('!I', recv_exact(4))\n    print(recv_exact(n).decode())")
    assert reply["id"] is None and f"a frame of {size} bytes" in reply["error"] and "at most" in reply["error"]
    assert grown.mib < 50, f"the host grew by {grown.mib:.0f} MiB for a frame it refused"
    answers(rt)


def test_deep_and_overcount_frames_are_refused_with_error_replies(rt):
    call = '{"id": 7, "name": "get_supplier", "arguments": {"supplier_id": %s}}'
    deep = call % ("[" * 10_000 + "]" * 10_000)
    just_deep_enough = call % ("[" * 30 + "1" + "]" * 30)  # with the request and its arguments: 32 levels
    one_too_deep = call % ("[" * 31 + "1" + "]" * 31)
    many = call % ("[" + "0," * bridge_module.MAX_VALUES + "0]")
    replies = run_raw(rt, f"print(json.dumps([send_frame(b) for b in {[b.encode() for b in (deep, just_deep_enough, one_too_deep, many)]!r}]))")
    assert [r["id"] for r in replies] == [None, 7, None, None]
    assert f"nested deeper than {bridge_module.MAX_DEPTH} levels" in replies[0]["error"]
    assert "supplier_id" in replies[1]["error"] and "malformed" not in replies[1]["error"]  # the tool's own check
    assert f"nested deeper than {bridge_module.MAX_DEPTH} levels" in replies[2]["error"]
    assert f"more than {bridge_module.MAX_VALUES} values" in replies[3]["error"]
    answers(rt)


def test_brackets_and_commas_in_strings_are_not_structure(rt):
    # 600 000 brackets, commas and escaped quotes in one argument: past both bounds if they counted.
    result = rt.execute("text = '[{,\"\\\\' * 150_000\nprint(len(text), tools.list_products(page=1, category=text)['items'])",
                        timeout=60)
    assert result.error is None, result.observation
    assert result.output.split() == ["750000", "[]"], result.observation
    answers(rt)


def voluntary_switches(tid: int) -> int:
    for line in Path(f"/proc/self/task/{tid}/status").read_text().splitlines():
        if line.startswith("voluntary_ctxt_switches:"):
            return int(line.split()[1])
    raise AssertionError("no voluntary_ctxt_switches")


def test_a_call_wakes_the_serving_thread_once(rt):
    tid = rt.session.bridge._thread.native_id
    assert rt.execute("tools.get_supplier(supplier_id=1)").error is None
    before = voluntary_switches(tid)
    result = rt.execute("for _ in range(2000):\n    tools.get_supplier(supplier_id=1)", timeout=60)
    assert result.error is None, result.observation
    per_call = (voluntary_switches(tid) - before) / 2000
    assert per_call < 1.5, f"the serving thread slept {per_call:.2f} times per call (once is waiting for the request)"


# --- the scan against the parsed structure ------------------------------------------------------------------------
def _reference(value, depth=1):
    """(nesting, the scan's value bound) of a parsed JSON value, from its structure."""
    if isinstance(value, (list, dict)):
        children = list(value.values()) if isinstance(value, dict) else value
        nested = [_reference(child, depth + 1) for child in children]
        # The bound is the `[`, `{` and `,` of a value's JSON, plus one: its bracket, its commas, its children's.
        return (max([depth] + [n for n, _ in nested]),
                2 + max(len(children) - 1, 0) + sum(b - 1 for _, b in nested))
    return depth - 1, 1


def _random_string(rng):
    return "".join(rng.choice(['"', "\\", "[", "]", "{", "}", ",", ":", "a", " ", "é", "\u2028", "\x00", "😀"])
                   for _ in range(rng.randrange(0, 8)))


def _random_value(rng, depth=0):
    kind = rng.randrange(9 if depth < 9 else 4)
    if kind == 0:
        return _random_string(rng)
    if kind == 1:
        return rng.choice([0, -1.5e300, 12345678901234567890, True, False, None])
    if kind in (2, 3):
        return rng.choice(["", "\\", '"', "[", "]]]"])
    if kind < 6:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(0, 5))]
    return {_random_string(rng): _random_value(rng, depth + 1) for _ in range(rng.randrange(0, 5))}


def test_the_scan_judges_as_the_parsed_structure_does(monkeypatch):
    monkeypatch.setattr(bridge_module, "MAX_VALUES", 40)
    monkeypatch.setattr(bridge_module, "MAX_DEPTH", 5)
    rng = random.Random(4)
    verdicts = {True: 0, False: 0}
    for _ in range(3000):
        value = {"id": 1, "arguments": _random_value(rng)}
        separators = rng.choice([(",", ":"), (", ", ": "), (" ,\n", " :\t")])
        body = json.dumps(value, separators=separators, ensure_ascii=rng.random() < 0.5).encode()
        depth, bound = _reference(value)
        refused = depth > 5 or bound > 40
        try:
            check_shape(body)
            parse_request(body)
            judged = False
        except BadFrame:
            judged = True
        assert judged == refused, (body, depth, bound)
        verdicts[refused] += 1
    assert min(verdicts.values()) > 300  # both verdicts were tried often


@pytest.mark.parametrize("body, message", [
    (b'{"id": 1, "a": "never closed [[[[', "not JSON"),
    (b'{"id": 1, "a": "ends in a backslash \\', "not JSON"),
    (b'{"id": 1, "a": "\\"' + b"[" * 40 + b'"}', None),  # an escaped quote does not end the string
    (b'{"id": 1, "a": "\\\\", "b": ' + b"[" * 40 + b"1" + b"]" * 40 + b"}", "nested deeper"),  # an escaped backslash does
    (b"[" * 40 + b"]" * 39, "not JSON"),
    (b"]" * 40 + b"[" * 40, "malformed"),
    (b"\xfe\xff\x00[\x00{", "not JSON"),  # UTF-16 is not read: the scan reads UTF-8 bytes
    (b'{"id": 1, "a": [' + b'"",' * 200_001 + b'""]}', "values"),  # strings alone: values too
    (b"  {\"id\": 2}  \n", None),
])
def test_edge_frames(body, message):
    if message is None:
        assert isinstance(parse_request(body), dict)
    else:
        with pytest.raises(BadFrame, match=message):
            parse_request(body)


def test_the_scan_is_fast_on_hostile_bytes():
    # Bytes that make a naive string matcher backtrack or rescan: every quote escaped, no closing one.
    started = time.process_time()
    for body in (b'"' + b'\\"' * (4 * MiB), b'"\\' * (4 * MiB), b'{"a": "' + b"\\\\" * (4 * MiB) + b'"}'):
        with pytest.raises(BadFrame):
            parse_request(body + b"[" * 40)
    assert time.process_time() - started < 5.0  # linear: about 0.1 s here; quadratic would be hours


# --- the host's frame reader, on a bare socketpair ----------------------------------------------------------------
class Peer:
    """The kernel's side of a bare bridge: requests out on its end, replies in on the socket passed over it."""

    def __init__(self, server: BridgeServer):
        self.requests = server.kernel_sock
        _, fds, _, _ = socket.recv_fds(self.requests, 1, 1)
        self.replies = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, fileno=fds[0])
        for sock in (self.requests, self.replies):
            sock.settimeout(10)

    def sendall(self, data: bytes) -> None:
        self.requests.sendall(data)

    def recv(self, n: int) -> bytes:
        return self.replies.recv(n)


@pytest.fixture
def bare():
    server = BridgeServer(router=None)  # every request gets an error reply naming its id
    peer = Peer(server)
    yield server, peer
    server.close()
    peer.replies.close()


def read_reply(peer) -> dict:
    def exact(n):
        data = b""
        while len(data) < n:
            chunk = peer.recv(n - len(data))
            assert chunk, "the bridge closed"
            data += chunk
        return data
    (n,) = struct.unpack("!I", exact(4))
    return json.loads(exact(n))


def frame(request_id, pad=0) -> bytes:
    body = json.dumps({"id": request_id, "op": "nothing", "pad": "x" * pad}).encode()
    return struct.pack("!I", len(body)) + body


def test_frames_sent_together_in_pieces_and_large_are_answered_in_order(bare):
    server, peer = bare
    peer.sendall(frame(1) + frame(2) + frame(3)[:5])  # two whole frames and the start of a third
    time.sleep(0.1)
    peer.sendall(frame(3)[5:])
    for byte in frame(4):  # one byte at a time
        peer.sendall(bytes([byte]))
    large = frame(5, pad=bridge_module.READ_BUFFER * 3)  # larger than the reader's buffer
    peer.sendall(frame(6)[:3])
    peer.sendall(frame(6)[3:] + large[:1000])
    time.sleep(0.05)
    peer.sendall(large[1000:] + frame(7))
    assert [read_reply(peer)["id"] for _ in range(7)] == [1, 2, 3, 4, 6, 5, 7]
    over = bridge_module.MAX_FRAME + 1
    start = frame(8)  # a frame's start, then the rest of the oversized body in big pieces
    peer.sendall(struct.pack("!I", over) + start)
    left = over - len(start)
    chunk = b" " * MiB
    while left:
        peer.sendall(chunk[:left])
        left -= min(left, len(chunk))
    peer.sendall(frame(9))
    refused = read_reply(peer)
    assert refused["id"] is None and f"a frame of {over} bytes" in refused["error"]
    assert read_reply(peer)["id"] == 9  # the frame after the refused one is read in step
    assert server.serving and server.broken is None and server.bad_frames == 1


def test_a_frame_that_stops_short_breaks_the_channel_for_good(bare, monkeypatch):
    monkeypatch.setattr(bridge_module, "FRAME_IDLE", 0.2)
    server, peer = bare
    peer.sendall(frame(1)[:10])
    deadline = time.monotonic() + 5
    while server.serving and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not server.serving and "stopped short" in server.broken


def test_an_honest_call_over_the_bound_fails_at_once_with_a_tool_error(rt):
    # The proxy refuses what the host would refuse unread, instead of waiting for a reply that never names it.
    result = rt.execute(f"try:\n    tools.get_supplier(supplier_id='z' * {bridge_module.MAX_FRAME})\n"
                        "except ToolError as exc:\n    print('refused:', exc)", timeout=20)
    assert not result.timed_out and "refused:" in result.output and "more than the tool bridge carries" in result.output
    answers(rt)
