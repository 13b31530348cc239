"""The verifier as untrusted work (issue 37, section 5): each attack observed against the host, performed for real.

- A final answer past MAX_ANSWER_CHARS is never read by a verifier: `env.verify` scores it 0 with a criterion
  saying why, and `claim_done` refuses it with an observation naming the bound while the episode goes on.
- criteria() run in a child of the verification server with CPU-time, memory and wall-clock budgets: a verifier
  kept busy by what the program wrote (restock_orders' answer regex, quadratic, in C, holding the GIL) leaves the
  host's other threads running, is stopped at its budget, and the episode scores 0 and is kept.
- A 32 MiB report of short rows (932 MiB in the host before) leaves the host's peak memory flat.
- ~20k empty folders in the workspace hide no report, with the host held to a few dozen descriptors; sparse files
  cannot use up the copy's byte bound so that a report is left out; a walk that gives up says so.
"""
import json
import os
import re
import resource
import socket
import threading
import time

import pytest

from progagent_lib import load_pool, load_task
from progagent_lib.harness.episode import Episode, Limits
from progagent_lib.harness.turn import ToolCall, Turn
from progagent_lib.task import VerifierError, VerifyResult
from progagent_lib.task.environment import ANSWER_BOUND, MAX_ANSWER_CHARS, VERIFIER_FAILED, WORKSPACE_QUOTA
from progagent_lib.task.verify_worker import MAX_REPLY_BYTES, _collect

from conftest import TASKS_DIR

BUDGET = re.compile(r"^criteria\(\) ran past the verifier's (CPU-)?time budget of 3 s and was stopped$")


def report_name(env) -> str:
    return env.params["report_name"]


def turn(name, **arguments):
    return Turn(tool_calls=[ToolCall(name, arguments)])


def write_task(root, name, environment):
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "task.toml").write_text(f'id = "tmp/{name}"\ndomain = "tmp"\ntitle = "A test task"\n')
    (folder / "prompt.md").write_text("Write the report.")
    (folder / "generator.py").write_text(
        "def generate(ctx):\n    ctx.db.execute('CREATE TABLE t (v)')\n    ctx.db.execute('INSERT INTO t VALUES (1)')\n")
    (folder / "environment.py").write_text(environment)
    (folder / "oracle.py").write_text("def solve(tools):\n    tools.write_file(path='report.txt', content='9.99')\n"
                                      "    return 'done'\n")
    return load_task(folder)


# restock_orders' answer regex, on what the program wrote instead of the (now bounded) answer: a run of n digits
# costs ~n^2/2 steps inside the regex engine, which holds the GIL throughout (60k digits: ~9 s).
RUNAWAY_ENV = '''
import re

from progagent_lib import Criterion, WorkspaceEnvironment


class Runaway(WorkspaceEnvironment):
    def criteria(self, final_response):
        path = self.workspace / "report.txt"
        text = path.read_text() if path.is_file() else ""
        if final_response in ("", "spin"):
            while True:  # a verifier that never ends, whatever it reads
                pass
        totals = re.findall(r"\\d[\\d,]*\\.\\d{2}", text)
        return [Criterion("report_has_a_total", bool(totals), 1.0, f"{len(totals)} totals")]
'''


@pytest.fixture(scope="module")
def runaway_task(tmp_path_factory):
    return write_task(tmp_path_factory.mktemp("tasks"), "runaway", RUNAWAY_ENV)


class Ticker:
    """A host thread that ticks every 5 ms; `longest_gap(start, end)` is the longest it went without a tick."""

    def __init__(self):
        self.ticks, self.stop = [], threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop.is_set():
            self.ticks.append(time.monotonic())
            time.sleep(0.005)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()

    def longest_gap(self, start, end):
        inside = [start] + [t for t in self.ticks if start <= t <= end] + [end]
        return max(b - a for a, b in zip(inside, inside[1:]))


# --- 1a. the answer's length ------------------------------------------------------------------------------------
def test_the_bound_is_far_above_every_oracle_answer():
    longest = 0
    for task in load_pool(TASKS_DIR):
        env = task.instantiate("v0", 0)
        try:
            longest = max(longest, len(task.oracle(env.tools)))
        finally:
            env.close()
    assert 0 < longest * 100 <= MAX_ANSWER_CHARS, longest


def test_an_answer_past_the_bound_scores_zero_unread(restock_task):
    env = restock_task.instantiate("v0", 0)
    try:
        answer = restock_task.oracle(env.tools)
        assert env.verify(answer).reward == 1.0
        attack = answer + " " + "1" * 200_000  # the observed attack: 92-123 s of regex holding the GIL
        started = time.monotonic()
        verdict = env.verify(attack, timeout=5)  # were it read, the budget would stop it with another criterion
        assert isinstance(verdict, VerifyResult) and (verdict.reward, verdict.score) == (0.0, 0.0)
        [refused] = verdict.criteria
        assert (refused.name, refused.passed) == (ANSWER_BOUND, False)
        assert refused.detail == (f"the final answer has {len(attack):,} characters, more than the 20,000 a verifier "
                                  "reads; it was not judged"), refused.detail
        assert time.monotonic() - started < 1.0  # refused before anything is copied or run
    finally:
        env.close()


def test_claim_done_with_a_long_answer_is_refused_and_the_episode_goes_on(restock_task):
    # No context budget here: under a task's own limits 200,000 characters would end the episode by that budget.
    limits = Limits(max_turns=10, max_context_tokens=None)
    with Episode(restock_task, "v0", 0, "dtc", limits=limits, policy_name="scripted") as episode:
        answer = restock_task.oracle(episode.env.tools)  # the right orders and report, as tools would make them
        [refused] = episode.add_turn(turn("claim_done", action="1" * 200_000))
        assert not episode.finished
        assert refused["content"] == ("Error: claim_done's action has 200,000 characters; a final answer may have at "
                                      "most 20,000. Nothing was submitted: call claim_done again with a shorter answer.")
        episode.add_turn(turn("claim_done", action=answer))
        t = episode.to_trajectory()
    assert (t.end_reason, t.reward, t.error, t.final_answer) == ("claim_done", 1.0, "", answer)


# --- 1b/c. a runaway verifier ------------------------------------------------------------------------------------
def test_a_runaway_verifier_stops_at_its_budget_host_threads_run_and_the_episode_is_kept(runaway_task):
    with Episode(runaway_task, "v0", 0, "dtc", policy_name="scripted") as episode, Ticker() as ticker:
        episode.env.verify_timeout = 3
        episode.add_turn(turn("write_file", path="report.txt", content="1" * 60_000))
        started = time.monotonic()
        episode.add_turn(turn("claim_done", action="the total is in the report"))
        ended = time.monotonic()
        t = episode.to_trajectory()
        gap = ticker.longest_gap(started, ended)
    assert ended - started >= 2.5, ended - started  # the hostile verification ran up to its budget ...
    assert gap < 1.0, f"a host thread stood still for {gap:.1f} s while the verifier ran"  # ... beside the host
    assert (t.end_reason, t.reward, t.score, t.error) == ("claim_done", 0.0, 0.0, "")  # scored 0, kept
    [stopped] = t.criteria
    assert stopped["name"] == VERIFIER_FAILED and BUDGET.match(stopped["detail"]), stopped["detail"]


def test_a_runaway_on_the_restock_answer_regex_leaves_host_threads_running(restock_task):
    env = restock_task.instantiate("v0", 0)
    try:
        restock_task.oracle(env.tools)
        with Ticker() as ticker:
            started = time.monotonic()
            verdict = env.verify("1" * MAX_ANSWER_CHARS)  # the longest answer read: ~1 s of regex in its process
            ended = time.monotonic()
        assert ticker.longest_gap(started, ended) < 0.5, ticker.longest_gap(started, ended)
        failed = [c.name for c in verdict.criteria if not c.passed]
        assert failed == ["total_cost_reported"], verdict.summary()  # judged in full, the total not given
    finally:
        env.close()


def test_a_budget_spent_with_nothing_of_the_episodes_to_read_is_the_tasks_defect(runaway_task):
    env = runaway_task.instantiate("v0", 0)
    try:
        with pytest.raises(VerifierError, match=r"tmp/runaway.*environment.py.*ran past the verifier's (CPU-)?time "
                                                r"budget of 3 s.*untouched state and an empty answer"):
            env.verify("", timeout=3)
        for answer in ("spin", ""):  # the answer is the episode's; then its state is
            verdict = env.verify(answer, timeout=3)
            [stopped] = verdict.criteria
            assert (stopped.name, verdict.reward) == (VERIFIER_FAILED, 0.0) and BUDGET.match(stopped.detail)
            (env.workspace / "report.txt").write_text("")
    finally:
        env.close()


# --- 2. a large report --------------------------------------------------------------------------------------------
def peak_rss_kib() -> int:
    with open("/proc/self/status") as status:
        return int(next(line for line in status if line.startswith("VmHWM:")).split()[1])


def reset_peak_rss() -> None:
    """VmHWM back to the current RSS (Linux >= 4.0), so the next peak is this block's own."""
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")


def test_a_32_mib_report_of_short_rows_leaves_host_memory_flat(restock_task):
    env = restock_task.instantiate("v0", 0)
    try:
        answer = restock_task.oracle(env.tools)
        env.verify(answer)  # the verification server started, its sockets made: not counted below
        with open(env.workspace / report_name(env), "w") as report:
            report.write("sku,supplier,quantity,cost\n")
            for _ in range(32):
                report.write("S,a,1,1\n" * (1 << 17))  # 32 MiB of 8-byte rows, written 1 MiB at a time
        reset_peak_rss()
        before = peak_rss_kib()
        verdict = env.verify(answer)
        grown_mib = (peak_rss_kib() - before) / 1024
        assert grown_mib < 32, f"the host's peak RSS grew by {grown_mib:.0f} MiB verifying a 32 MiB report"
        assert verdict.reward == 0.0
        report = {c.name: c for c in verdict.criteria}["report_written"]
        assert not report.passed and "cannot be read whole" in report.detail  # file_matches reads a bounded prefix
    finally:
        env.close()


def test_a_verifier_past_its_memory_budget_is_stopped(tmp_path, monkeypatch):
    """The child's memory budget (RLIMIT_AS) stops a verifier that allocates without bound; the episode scores 0."""
    from task.test_task_format import GOOD_ENV, write_task

    monkeypatch.setenv("PROGAGENT_CACHE", str(tmp_path / "cache"))
    hungry = GOOD_ENV.replace('return [Criterion("said", final_response == "1")]',
                              'held = [bytearray(64 << 20) for _ in range(16)]\n'
                              '        return [Criterion("said", bool(held))]')
    task = load_task(write_task(tmp_path, "hungry", **{"environment.py": hungry}))
    env = task.instantiate("v0", 0)
    try:
        env.verify_memory = 256 << 20
        [stopped] = env.verify("1").criteria
        assert (stopped.name, stopped.detail) == (VERIFIER_FAILED, "criteria() needed more than the verifier's "
                                                                   "memory budget of 256 MiB and was stopped")
    finally:
        env.close()


def test_the_host_reads_no_more_of_a_reply_than_its_bound():
    ours, child = socket.socketpair()
    status, server = socket.socketpair()
    sent = [0]

    def flood():  # a child writing far past the bound; its writes fail once the host stops reading
        try:
            while sent[0] < 64 * MAX_REPLY_BYTES:
                sent[0] += child.send(b"x" * 65536)
        except OSError:
            pass
        child.close()
        server.sendall(b"\x00\x00\x00\x0b{\"exit\": 0}")
        server.close()

    writer = threading.Thread(target=flood)
    writer.start()
    try:
        reply, said = _collect(ours, status, time.monotonic() + 30)
    finally:
        writer.join()
        ours.close()
        status.close()
    assert reply is None and json.loads(said[4:]) == {"exit": 0}
    assert sent[0] < 4 * MAX_REPLY_BYTES  # the writer met a closed socket soon after the bound


# --- 3. many folders, sparse files, deep folders ----------------------------------------------------------------
def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


class lowered_fd_limit:
    def __init__(self, soft):
        self.soft = soft

    def __enter__(self):
        self.saved = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.soft, self.saved[1]))

    def __exit__(self, *exc):
        resource.setrlimit(resource.RLIMIT_NOFILE, self.saved)


def test_a_report_among_20k_empty_folders_is_found_with_a_few_dozen_descriptors(restock_task):
    env = restock_task.instantiate("v0", 0)
    try:
        answer = restock_task.oracle(env.tools)
        env.verify(answer)
        # As many folders as the workspace's tmpfs has inodes left (20,000 in all), as a program would make them.
        room = os.statvfs(env.workspace).f_favail - 50 if env.quota_mounted else 19_950
        assert room >= 19_000, room
        for i in range(room):
            os.mkdir(env.workspace / f"d{i:05d}")
        # One descriptor per folder would need ~20k: 64 over what the host holds now is far below that.
        with lowered_fd_limit(open_fds() + 64):
            verdict = env.verify(answer)
        assert verdict.reward == 1.0, verdict.summary()
        report = {c.name: c for c in verdict.criteria}["report_written"]
        assert report.passed and report.detail.endswith("matches the expected result"), report.detail
    finally:
        env.close()


def test_sparse_files_cannot_use_up_the_copy_so_that_a_report_is_left_out(restock_task):
    env = restock_task.instantiate("v0", 0)
    try:
        answer = restock_task.oracle(env.tools)
        assert env.workspace_quota == WORKSPACE_QUOTA and report_name(env) > "a"
        for name in ("a_hole_0.bin", "a_hole_1.bin"):  # sorted before the report; no data, so no quota used
            with open(env.workspace / name, "wb") as hole:
                hole.truncate(WORKSPACE_QUOTA // 2)
        reset_peak_rss()
        before = peak_rss_kib()
        verdict = env.verify(answer)
        assert (peak_rss_kib() - before) / 1024 < 32  # holes are not read into the host's memory
        report = {c.name: c for c in verdict.criteria}["report_written"]
        assert report.passed and report.detail.endswith("matches the expected result"), verdict.summary()
    finally:
        env.close()


def test_a_walk_that_gives_up_says_so_never_not_found(restock_task):
    env = restock_task.instantiate("v0", 0)
    try:
        answer = restock_task.oracle(env.tools)
        deep = env.workspace
        for _ in range(300):
            deep = deep / "d"
        deep.mkdir(parents=True)
        [failed] = env.verify(answer).criteria
        assert failed.name == VERIFIER_FAILED and "not found" not in failed.detail
        assert failed.detail.startswith("copying the workspace for the verifier raised progagent_lib.task.tools."
                                        "ToolError: the workspace nests folders more than 256 levels deep"), failed.detail
    finally:
        env.close()
