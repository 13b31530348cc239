"""The host side against what a program leaves in its workspace, and one episode against its batch.

- The safe walk (`WorkspaceFS.walk`, behind `list_files` and the verifier's snapshot) holds one descriptor per
  level of the current path, not one per folder waiting its turn: ~20k sibling folders neither hide a report
  nor exhaust the host's descriptors. Running out of descriptors anyway is reported, never a silent miss.
- A verifier fed a hostile report (a CSV field past `csv.field_size_limit()`, invalid UTF-8, JSON nested past
  the recursion limit, NUL bytes ...) scores 0 with a failed criterion naming the exception; only a verifier
  that raises on the untouched state it was generated with is a task defect (VerifierError). Every task in
  the pool meets such files at every path its verifier reads.
- In a token rollout (GSPO's), an episode that raises ends errored and is left out of the loss; the others
  are played and scored as usual.
"""
import ast
import json
import os
import re
import resource

import pytest

from progagent_lib import load_task
from progagent_lib.harness import Limits
from progagent_lib.harness.chat_format import ChatFormat
from progagent_lib.task import ToolError, VerifierError, VerifyResult, find_task_dirs
from progagent_lib.task.certify import certify_task
from progagent_lib.task.environment import VERIFIER_FAILED
from progagent_lib.task.safe_fs import WorkspaceFS, WorkspaceReadError
from progagent_lib.train.gspo import GSPORunConfig, make_rollout_func
from progagent_lib.generation import ReplayTurns
from progagent_lib.train.rollout import RolloutSpec, run_token_episodes

from conftest import TASKS_DIR

TASK_DIRS = find_task_dirs(TASKS_DIR)
SIBLINGS = 19_500  # the workspace's tmpfs holds 20 000 inodes in all (WORKSPACE_MAX_FILES)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))  # counts the descriptor listdir itself holds, the same every time


class lowered_fd_limit:
    """RLIMIT_NOFILE's soft limit set to `soft` for the block (descriptors already open stay usable)."""

    def __init__(self, soft: int):
        self.soft = soft

    def __enter__(self):
        self.saved = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.soft, self.saved[1]))

    def __exit__(self, *exc):
        resource.setrlimit(resource.RLIMIT_NOFILE, self.saved)


# --- finding 6: descriptors in the safe walk ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def payment_task():
    return load_task(TASKS_DIR / "accounts_payable" / "discount_payment_run")


# The report the seed-0 instance asks for (the task's parameters name it).
REPORT = load_task(TASKS_DIR / "accounts_payable" / "discount_payment_run").params_for(0)["report_name"]


def test_many_sibling_folders_hide_no_report_and_the_walk_holds_a_descriptor_per_level(payment_task):
    env = payment_task.instantiate("v0", 0)
    try:
        answer = payment_task.oracle(env.tools)  # writes the report and releases the run
        workspace = env.workspace
        room = os.statvfs(workspace).f_favail - 200 if env.quota_mounted else SIBLINGS  # the tmpfs's inodes left
        siblings = min(SIBLINGS, room)
        assert siblings >= 19_000
        for i in range(siblings):  # as a program in the kernel would make them
            os.mkdir(workspace / f"d{i:05d}")
        (workspace / f"d{siblings - 1:05d}" / "late.txt").write_text("found")
        deep = workspace / "deep"
        for _ in range(40):  # and one chain of nested folders, to see descriptors follow the depth
            deep = deep / "d"
        deep.mkdir(parents=True)
        (deep / "bottom.txt").write_text("found")

        base = open_fds()
        peak, held = [0], {}
        bottom, late_file = "deep/" + "d/" * 40 + "bottom.txt", f"d{siblings - 1:05d}/late.txt"

        def count():  # the walk's `check`: every 256 entries, during the root's listing too
            peak[0] = max(peak[0], open_fds() - base)

        # The old walk opened every sibling while listing their parent: ~19 500 descriptors, far past this limit.
        with lowered_fd_limit(base + 256):
            files = {}
            for rel, size, is_dir in env.fs.walk(count):
                if not is_dir:
                    files[rel] = size
                if rel in (bottom, late_file, REPORT):
                    held[rel] = open_fds() - base
            listed = env.call_tool("list_files", {"pattern": REPORT})
            late = env.call_tool("list_files", {"pattern": f"d{siblings - 1:05d}/*"})
            verdict = env.verify(answer)
        assert REPORT in files and files[late_file] == 5 and bottom in files
        # Descriptors follow the depth, not the width: the root's copy, plus one per folder down to the file
        # (41 for the bottom file: deep/ and 40 d/), plus scandir's own duplicate while a folder is listed.
        assert held == {REPORT: 1, late_file: 2, bottom: 42}, held
        assert 1 <= peak[0] <= 3, peak[0]
        assert [item["path"] for item in listed["items"]] == [REPORT]
        assert [item["path"] for item in late["items"]] == [f"d{siblings - 1:05d}/late.txt"]
        by_name = {c.name: c for c in verdict.criteria}
        assert by_name["run_file_written"].passed, by_name["run_file_written"].detail
        assert by_name["run_file_written"].detail == f"{REPORT} matches the expected result"
        assert verdict.reward == 1.0, verdict.summary()
    finally:
        env.close()


def test_walk_deeper_than_its_bound_is_reported(tmp_path):
    deep = tmp_path
    for _ in range(12):
        deep = deep / "d"
    deep.mkdir(parents=True)
    fs = WorkspaceFS(tmp_path)
    try:
        with pytest.raises(ToolError, match="more than 8 levels deep"):
            list(fs.walk(max_depth=8))
        assert len(list(fs.walk(max_depth=12))) == 12
    finally:
        fs.close()


def test_folders_that_vanish_or_become_links_mid_walk_are_left_out_without_an_error(tmp_path):
    for name in ("a", "b", "c"):
        (tmp_path / name).mkdir()
    for i in range(600):
        (tmp_path / "a" / f"f{i:03d}").write_text("x")
    (tmp_path / "b" / "gone.txt").write_text("x")
    fs = WorkspaceFS(tmp_path)
    calls = []

    def swap():  # the second check runs while a/ is listed: b/ and c/ were listed as folders, not opened yet
        calls.append(1)
        if len(calls) == 2:
            (tmp_path / "b" / "gone.txt").unlink()
            (tmp_path / "b").rmdir()
            (tmp_path / "c").rmdir()
            (tmp_path / "c").symlink_to("/etc")

    try:
        entries = list(fs.walk(swap))
    finally:
        fs.close()
    assert not (tmp_path / "b").exists() and (tmp_path / "c").is_symlink()
    assert [rel for rel, _, is_dir in entries if is_dir] == ["a", "b", "c"]  # listed before they went
    assert [rel for rel, _, is_dir in entries if not is_dir] == [f"a/f{i:03d}" for i in range(600)]


def test_out_of_descriptors_is_reported_not_a_silent_miss(payment_task):
    env = payment_task.instantiate("v0", 0)
    try:
        (env.workspace / REPORT).write_text("invoice_no,amount_paid,discount\n")
        env.fs.root_fd()  # the workspace's own descriptor stays open, as in an episode that already used a tool
        probe = os.open("/dev/null", os.O_RDONLY)
        os.close(probe)
        # Every number below `probe` is in use: with that soft limit, not a single descriptor more can be opened.
        with lowered_fd_limit(probe):
            with pytest.raises(OSError) as opened:
                os.open("/dev/null", os.O_RDONLY)
            with pytest.raises(WorkspaceReadError) as walked:
                list(env.fs.walk())
            with pytest.raises(ToolError) as listing:
                env.call_tool("list_files", {})
            with pytest.raises(ToolError) as reading:
                env.call_tool("read_file", {"path": REPORT})
            verdict = env.verify("paid 0.00")
        assert opened.value.errno == 24  # EMFILE
        for raised in (walked, listing, reading):
            assert "ran out of file descriptors (EMFILE)" in str(raised.value), str(raised.value)
        assert isinstance(verdict, VerifyResult) and (verdict.reward, verdict.score) == (0.0, 0.0)
        [failed] = verdict.criteria
        assert failed.name == VERIFIER_FAILED and not failed.passed
        assert failed.detail.startswith("copying the workspace for the verifier raised "
                                        "progagent_lib.task.safe_fs.WorkspaceReadError: the host ran out of file "
                                        "descriptors (EMFILE)"), failed.detail
        # With descriptors back, the same episode lists and verifies its report as usual.
        assert [i["path"] for i in env.call_tool("list_files", {"pattern": "*.csv"})["items"]] == [REPORT]
        assert "run_file_written" in {c.name for c in env.verify("paid 0.00").criteria}
    finally:
        env.close()


# --- finding 8: a verifier that raises -----------------------------------------------------------------------
def test_report_field_past_the_csv_limit_scores_zero_with_the_exception_named(payment_task):
    env = payment_task.instantiate("v0", 0)
    try:
        answer = payment_task.oracle(env.tools)
        assert env.verify(answer).reward == 1.0
        (env.workspace / REPORT).write_text('invoice_no,amount_paid,discount\n"' + "x" * 140_000 + '",1,0\n')
        verdict = env.verify(answer)  # file_matches reads it with the csv module, which raises csv.Error
        assert verdict.reward == 0.0
        failed = [c for c in verdict.criteria if not c.passed]
        assert [c.name for c in failed] == ["run_file_written"], verdict.summary()
        assert failed[0].detail == f"{REPORT} not readable as CSV: field larger than field limit (131072)"
    finally:
        env.close()


RAISING_ENV = '''
from progagent_lib.task import Criterion, Environment, tool


class Raising(Environment):
    @tool
    def count(self) -> int:
        """Count rows."""
        return self.query("SELECT count(*) AS n FROM t")[0]["n"]

    def criteria(self, final_response):
        if (self.workspace / "not_a_list").exists():
            return "not a list"
        raise KeyError("oops" * 1000)
'''


def write_task(root, name, environment):
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "task.toml").write_text(f'id = "tmp/{name}"\ndomain = "tmp"\ntitle = "A test task"\n')
    (folder / "prompt.md").write_text("Count the rows.")
    (folder / "generator.py").write_text(
        "def generate(ctx):\n    ctx.db.execute('CREATE TABLE t (v)')\n    ctx.db.execute('INSERT INTO t VALUES (1)')\n")
    (folder / "environment.py").write_text(environment)
    (folder / "oracle.py").write_text("def solve(tools):\n    return str(tools.count())\n")
    return load_task(folder)


def test_a_verifier_raising_on_its_own_untouched_state_is_still_a_task_defect(tmp_path, monkeypatch):
    monkeypatch.setenv("PROGAGENT_CACHE", str(tmp_path / "cache"))
    task = write_task(tmp_path, "raising", RAISING_ENV)
    env = task.instantiate("v0", 0)
    try:
        with pytest.raises(VerifierError, match=r"tmp/raising.*environment.py.*criteria\(\) raised KeyError"):
            env.verify("1")  # nothing changed since generation: only the task can be at fault
        (env.workspace / "report.csv").write_text("a,b\n")
        verdict = env.verify("1")  # a changed workspace: the episode's input may be what broke the verifier
        [failed] = verdict.criteria
        assert (failed.name, failed.passed, verdict.score, verdict.reward) == (VERIFIER_FAILED, False, 0.0, 0.0)
        assert failed.detail.startswith("criteria() raised KeyError: 'oopsoops") and "characters cut" in failed.detail
        assert len(failed.detail) < 700  # the message is bounded: it may quote what the program wrote
        (env.workspace / "not_a_list").write_text("")
        with pytest.raises(VerifierError, match="must return a non-empty list of Criterion"):
            env.verify("1")  # a broken contract is the task's, whatever the workspace holds
    finally:
        env.close()
    report = certify_task(task, scales=["v0"], seeds=[0])
    assert not report.passed and "runs" in {c.name for c in report.failures()}


# Contents a program could leave where a verifier looks for its report: each breaks some parser.
HOSTILE = {
    "csv_field_past_limit": b'id,name,amount\n1,"' + b"x" * 140_000 + b'",1\n',
    "unquoted_long_field": b"id,name\n" + b"y" * 140_000 + b",2\n",
    "invalid_utf8": b"id,name\n\xff\xfe\x80\x81,\xc3\x28\n",
    "many_columns": (",".join(f"c{i}" for i in range(50_000)) + "\n" + ",".join("1" * 50_000) + "\n").encode(),
    "deep_json": b"[" * 200_000 + b"]" * 200_000,
    "deep_object": b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    "nul_bytes": b"id,name\x00\n\x00\x001,\x00\n" + b"\x00" * 1000,
    "json_wrong_shapes": b'{"rows": [null, 1, "x", {"id": []}], "total": "NaN", "items": {"a": {"b": null}}}',
    "huge_integer": b"id,amount\n1," + b"9" * 5_000 + b"\n",
}
HOSTILE_ANSWER = "\x00 \ud800 NaN inf -0 1e309 \u0663\u066b\u0665 " + "9" * 40  # NUL, a lone surrogate, odd numbers
_REPORT_NAME = re.compile(r"^[\w./-]+\.(csv|json|jsonl|md|txt|tsv)$")


def report_paths(task) -> list[str]:
    """Every workspace file the task's verifier may read: the file names written in its environment.py."""
    tree = ast.parse((task.root / "environment.py").read_text())
    names = {node.value for node in ast.walk(tree)
             if isinstance(node, ast.Constant) and isinstance(node.value, str) and _REPORT_NAME.match(node.value)}
    return sorted(names) or ["report.csv"]  # a verifier that reads no file still meets a changed workspace


@pytest.mark.parametrize("folder", TASK_DIRS, ids=[str(p.relative_to(TASKS_DIR)) for p in TASK_DIRS])
def test_every_verifier_scores_hostile_reports_without_raising(folder):
    task = load_task(folder)
    env = task.instantiate("v0", 0)
    try:
        paths = report_paths(task)
        for kind, data in HOSTILE.items():
            for path in paths:
                target = env.workspace / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            verdict = env.verify(HOSTILE_ANSWER, timeout=30)
            assert isinstance(verdict, VerifyResult), kind
            assert verdict.reward == 0.0 and 0.0 <= verdict.score < 1.0, (kind, verdict.summary())
            if any(c.name == VERIFIER_FAILED for c in verdict.criteria):
                [failed] = verdict.criteria
                assert verdict.score == 0.0 and failed.detail.startswith("criteria() raised "), (kind, failed.detail)
    finally:
        env.close()


# --- finding 8: one episode of a GSPO batch raises -----------------------------------------------------------
ROLLOUT_ENV = '''
import csv
import io

from progagent_lib.task import Criterion, tool
from progagent_lib.task.workspace import WorkspaceEnvironment


class Counting(WorkspaceEnvironment):
    @tool
    def count(self) -> int:
        """Count rows."""
        return self.query("SELECT count(*) AS n FROM t")[0]["n"]

    def criteria(self, final_response):
        if final_response == "boom":
            raise KeyError("a verifier defect")
        path = self.workspace / "report.csv"
        rows = list(csv.reader(io.StringIO(path.read_text()))) if path.is_file() else []
        return [Criterion("said", final_response == "1"), Criterion("report_sane", len(rows) < 10)]
'''


def tool_call(name, **arguments):
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


@pytest.fixture
def rollout_tasks(tmp_path, monkeypatch):
    monkeypatch.setenv("PROGAGENT_CACHE", str(tmp_path / "cache"))
    counting = write_task(tmp_path, "counting", ROLLOUT_ENV)
    broken = write_task(tmp_path, "no_state", ROLLOUT_ENV)
    (broken.root / "generator.py").write_text("def generate(ctx):\n    raise RuntimeError('no state today')\n")
    return counting, load_task(broken.root)


@pytest.fixture(scope="module")
def chat():
    from progagent_lib.generation.tiny_model import train_tokenizer

    corpus = [ROLLOUT_ENV, tool_call("claim_done", action="1"), tool_call("count"), "Count the rows."] * 20
    return ChatFormat(train_tokenizer(corpus, vocab_size=512), model_name="tiny")


def scripts(chat):
    """Turns per episode, as tokens: [unbuilt], [a verifier defect], [a hostile report], [a plain solve]."""
    def turns(*texts):
        return [chat.tokenizer(t + "<|im_end|>", add_special_tokens=False)["input_ids"] for t in texts]

    hostile = "a,b\n\"" + "z" * 140_000 + "\",1\n"
    return [[], turns(tool_call("claim_done", action="boom")),
            turns(tool_call("write_file", path="report.csv", content=hostile), tool_call("claim_done", action="1")),
            turns(tool_call("count"), tool_call("claim_done", action="1"))]


def test_an_episode_that_raises_ends_errored_and_the_batch_goes_on(rollout_tasks, chat):
    counting, broken = rollout_tasks
    specs = [RolloutSpec(broken, "v0", 0, 0), RolloutSpec(counting, "v0", 0, 1), RolloutSpec(counting, "v0", 0, 2),
             RolloutSpec(counting, "v0", 0, 3)]
    limits = Limits(max_turns=10, max_context_tokens=None, max_new_tokens=None)
    unbuilt, defect, hostile, solved = run_token_episodes(specs, "dtc", chat, ReplayTurns(scripts(chat)), limits)

    assert unbuilt.errored and unbuilt.completion_ids == [] and unbuilt.prompt_ids
    assert unbuilt.trajectory.error.startswith("the episode raised while starting: progagent_lib.task.task."
                                               "GenerationError: task 'tmp/no_state' (generator.py): generate() "
                                               "raised RuntimeError: no state today"), unbuilt.trajectory.error
    assert defect.errored and defect.reward == 0.0 and defect.turns == 1
    assert defect.trajectory.error.startswith("the episode raised while playing a turn: "
                                              "progagent_lib.task.verification.VerifierError: task 'tmp/counting' "
                                              "(environment.py): criteria() raised KeyError: 'a verifier defect'")
    # A hostile report is the episode's own doing: scored 0 with the exception named, not errored.
    assert not hostile.errored and hostile.end_reason == "claim_done" and hostile.reward == 0.0
    assert [(c["name"], c["passed"]) for c in hostile.trajectory.criteria] == [(VERIFIER_FAILED, False)]
    assert hostile.trajectory.criteria[0]["detail"] == "criteria() raised _csv.Error: field larger than field limit (131072)"
    assert not solved.errored and (solved.end_reason, solved.reward, solved.turns) == ("claim_done", 1.0, 2)


def test_gspo_leaves_errored_episodes_out_of_the_loss(rollout_tasks, chat):
    counting, broken = rollout_tasks
    config = GSPORunConfig(harness="dtc", num_generations=4, max_turns=10, max_new_tokens=None,
                           max_context_tokens=None, max_observation_chars=4000)
    rollout = make_rollout_func(config, [counting, broken], chat=chat,
                                turn_generator=lambda trainer, specs: ReplayTurns(scripts(chat)))
    prompts = [[{"role": "user", "content": "x", "episode": f"{task.id}|v0|0"}]
               for task in (broken, counting, counting, counting)]
    trainer = type("Trainer", (), {"processing_class": chat.tokenizer})()
    out = rollout(prompts, trainer)
    # The two errored episodes get their group's mean reward (no advantage) and no trained token.
    assert out["verifier_reward"] == [0.5, 0.5, 0.0, 1.0]
    assert not any(out["env_mask"][0]) and not any(out["env_mask"][1])
    assert any(out["env_mask"][2]) and any(out["env_mask"][3])
    assert all(len(m) == len(c) for m, c in zip(out["env_mask"], out["completion_ids"]))
