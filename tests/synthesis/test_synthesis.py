"""Synthesis pipeline (with a scripted constructor), and export to Harbor / the authors' layout."""
import importlib.util
import json
import os
import shutil
import subprocess
import tomllib
import sys
from pathlib import Path

import pytest

from progagent_lib.synthesis.export import export_authors, export_harbor, import_authors
from progagent_lib.synthesis.pipeline import parse_files, synthesize
from progagent_lib.task import load_task
from progagent_lib.task.certify import certify_task

from conftest import TASKS_DIR

EXAMPLE = TASKS_DIR / "retail" / "restock_orders"
FILES = ("task.toml", "prompt.md", "generator.py", "environment.py", "oracle.py")


def answer_from(folder: Path, task_id: str, oracle_edit=None) -> str:
    texts = {name: (folder / name).read_text() for name in FILES}
    texts["task.toml"] = texts["task.toml"].replace('id = "retail/restock_orders"', f'id = "{task_id}"')
    if oracle_edit:
        texts["oracle.py"] = oracle_edit(texts["oracle.py"])
    return "Here is the task.\n" + "".join(f"=== FILE: {n} ===\n```python\n{t}```\n" for n, t in texts.items())


class ScriptedConstructor:
    """Stands in for the remote constructor model, which cannot be reached from tests.

    It answers Stage I with two intents; the first construction is correct, the second has an oracle
    bug that certification catches and the repair round fixes: its report goes under a fixed name, not the one asked
    for. (An oracle bug that only changes values, such as no case-pack rounding, is not caught: the oracle's state is
    the verifier's truth, see docs/tasks.md.)
    """

    def __init__(self):
        self.requests = []

    def complete(self, messages):
        self.requests.append(messages)
        prompt = messages[-1]["content"]
        if "Answer with a JSON list" in prompt:
            pct = {"name": "target_pct", "values": [100, 110, 120, 150], "changes": "how far above target to fill"}
            return json.dumps([{"request": "Restock the shop shelves", "parameters": [pct]},
                               {"request": "Restock after a supplier dispute", "parameters": [
                                   pct, {"name": "report_name", "values": ["a.csv", "b.csv", "c.csv", "d.csv"]}]}])
        task_id = next(line.split(": ", 1)[1] for line in messages[0]["content"].splitlines() if line.startswith("Task id to use:"))
        if "supplier_dispute" in task_id and len(messages) == 1:
            return answer_from(EXAMPLE, task_id, lambda s: s.replace(
                "tools.write_file(path=report_name,", "tools.write_file(path='report.csv',"))
        return answer_from(EXAMPLE, task_id)


def test_pipeline_certifies_a_task_and_repairs_a_broken_one(tmp_path, monkeypatch):
    monkeypatch.setenv("PROGAGENT_CACHE", str(tmp_path / "cache"))
    constructor = ScriptedConstructor()
    candidates = synthesize(constructor, "retail", "inventory", 2, tmp_path / "staging", tmp_path / "pool",
                            example=EXAMPLE, max_repairs=2, scales=("v0", "v3"), seeds=(0,), progress=False)
    first, second = candidates
    assert first.certified and len(first.attempts) == 1
    assert second.certified and [a.passed for a in second.attempts] == [False, True]
    assert any("oracle_R1" in p for p in second.attempts[0].problems)
    feedback = "\n".join(m["content"] for m in constructor.requests[-1])  # the repair round's messages
    assert "the reference solution wrote no such file" in feedback and "create_purchase_order" in feedback
    assert load_task(second.output).id == "retail/restock_after_a_supplier_dispute"
    # Stage I's proposed parameters reach construction and the report
    assert "target_pct: values [100, 110, 120, 150]" in constructor.requests[1][0]["content"]
    assert second.parameters[1]["name"] == "report_name"
    report = json.loads((tmp_path / "staging" / "synth_report.json").read_text())
    assert [c["certified"] for c in report] == [True, True]


def test_a_candidate_without_parameters_is_sent_back(tmp_path, monkeypatch):
    """One fixed program passes every instance of a task without parameters: synthesis asks for them."""
    monkeypatch.setenv("PROGAGENT_CACHE", str(tmp_path / "cache"))
    from progagent_lib.synthesis.pipeline import construct_task
    from task.test_task_format import GOOD_ENV

    class Unparametrised:
        def complete(self, messages):
            files = {"task.toml": 'id = "tmp/fixed"\ndomain = "tmp"\ntitle = "A fixed request"\n', "prompt.md": "Count the rows.\n",
                     "generator.py": "def generate(ctx):\n    ctx.db.execute('CREATE TABLE t (v)')\n",
                     "environment.py": GOOD_ENV, "oracle.py": "def solve(tools):\n    return str(tools.count())\n"}
            return "".join(f"=== FILE: {n} ===\n{t}" for n, t in files.items())

    candidate = construct_task(Unparametrised(), "tmp", "rows", "Count the rows", "tmp/fixed",
                               tmp_path / "staging", tmp_path / "pool", EXAMPLE, max_repairs=0, scales=("v0",), seeds=(0,))
    assert not candidate.certified
    assert any("defines no params(ctx), so one fixed program passes every instance" in p for p in candidate.attempts[0].problems)


def test_parse_files_strips_fences():
    files = parse_files("=== FILE: a.py ===\n```python\nx = 1\n```\n=== FILE: b.md ===\nhello\n")
    assert files == {"a.py": "x = 1\n", "b.md": "hello\n"}


def run_script(script: Path, app: Path, logs: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "APP_DIR": str(app), "LOGS_DIR": str(logs),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    return subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=120)


def test_harbor_export_scores_oracle_end_state_1_and_empty_run_0(tmp_path, restock_task):
    seed = next(s for s in range(1, 50) if restock_task.params_for(s) != restock_task.params_for(0))
    folder = export_harbor(restock_task, tmp_path / "harbor", scales=["v1"], seed=seed)[0]
    for required in ("task.toml", "instruction.md", "environment/Dockerfile", "tests/test.sh", "solution/solve.sh"):
        assert (folder / required).is_file(), required
    # One instance: its rendered instruction and its parameters travel (the verifier and the solution read them).
    params = restock_task.params_for(seed)
    instruction = (folder / "instruction.md").read_text()
    assert restock_task.instruction(seed) in instruction and "{" not in instruction.split("---")[0]
    assert json.loads((folder / "environment/app/task/params.json").read_text()) == params
    assert json.loads(tomllib.loads((folder / "task.toml").read_text())["metadata"]["params"]) == params
    con_tables = subprocess.run([sys.executable, "-c", (
        "import sqlite3,sys; print([r[0] for r in sqlite3.connect(sys.argv[1]).execute("
        "\"select name from sqlite_master where type='table'\")])"), str(folder / "environment/app/state/data.db")],
        capture_output=True, text=True).stdout
    assert "_verifier_facts" not in con_tables, "verifier-only facts must not ship in the agent's image"
    rewards = {}
    for run in ("oracle", "empty"):
        app = tmp_path / run / "app"
        shutil.copytree(folder / "environment" / "app", app)
        if run == "oracle":
            assert run_script(folder / "solution" / "solve.sh", app, tmp_path / run / "logs").returncode == 0
        run_script(folder / "tests" / "test.sh", app, tmp_path / run / "logs")
        rewards[run] = (tmp_path / run / "logs" / "verifier" / "reward.txt").read_text().strip()
    assert rewards == {"oracle": "1", "empty": "0"}


def test_authors_layout_round_trip_keeps_certification(tmp_path, restock_task, monkeypatch):
    monkeypatch.setenv("PROGAGENT_CACHE", str(tmp_path / "cache"))
    exported = export_authors(restock_task, tmp_path / "authors")
    assert sorted(p.name for p in exported.iterdir()) == ["v0", "v1", "v2", "v3"]
    assert {p.name for p in (exported / "v2").iterdir()} == {"data.py", "env.py", "prompt.md", "task_verification.py"}
    spec = importlib.util.spec_from_file_location("authors_verification", exported / "v0" / "task_verification.py")
    verification = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(verification)
    env = restock_task.instantiate("v0", 0)
    try:  # their verification plays the oracle and keeps its state as the truth the criteria compare with
        reward, info = verification.verify(env)
        assert reward == 1.0, info
    finally:
        env.close()
    back = import_authors(exported, tmp_path / "native")
    assert back.id == restock_task.id and back.prompt == restock_task.prompt
    assert certify_task(back, scales=("v0", "v3"), seeds=(0,)).passed
    (exported / "v3" / "prompt.md").write_text("something else")
    with pytest.raises(Exception, match="prompt.md differs between scales"):
        import_authors(exported, tmp_path / "native2")


class SometimesGivesUp:
    """A real policy: plays the oracle teacher in even-numbered episodes and gives up at once in odd ones."""

    name = "sometimes"

    def __init__(self):
        from progagent_lib.policy import OracleTeacher

        self.teacher, self.episodes = OracleTeacher("ptc"), 0

    def start_episode(self, task):
        self.episodes += 1
        return self.teacher.start_episode(task) if self.episodes % 2 else GiveUp()


class GiveUp:
    def act(self, messages, tools):
        from progagent_lib.policy import Turn

        return Turn(text="I cannot do this.", tool_calls=[])


def test_difficulty_filter_keeps_only_tasks_in_range(tmp_path, restock_task):
    from progagent_lib.synthesis.difficulty import difficulty_filter

    always = difficulty_filter([restock_task], "oracle", tmp_path / "a.jsonl", k=2, scales=("v0",), progress=False)
    assert always.kept == [] and "outside" in always.decisions["reason"][0]
    assert always.pass_rates["pass_rate"].to_list() == [1.0]
    mixed = difficulty_filter([restock_task], lambda harness: SometimesGivesUp(), tmp_path / "b.jsonl", k=2,
                              scales=("v0",), progress=False)
    assert mixed.pass_rates["pass_rate"].to_list() == [0.5] and mixed.kept == [restock_task.id]
    assert json.loads(mixed.pass_rates["params"][0]) == restock_task.params_for(0)  # the instance the rollouts played


def test_audit_checks_scales_and_runs_an_independent_solver(restock_task):
    from progagent_lib.policy import OracleTeacher
    from progagent_lib.synthesis.audit import audit_task

    report = audit_task(restock_task, OracleTeacher("ptc"))
    checks = {f.check: f.passed for f in report.findings}
    assert checks["same_instruction_and_tools"] and checks["table_products_scales"] and checks["independent_solver"]
