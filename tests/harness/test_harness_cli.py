"""`progagent run`: parallel episodes appended to JSON lines, resume after a kill, the summary table."""
import json

import polars as pl
import pytest

from progagent_lib.cli import main
from progagent_lib.harness import read_jsonl
from progagent_lib.harness.summary import pass_at_k, summarize, trajectories_frame


def test_run_resume_and_table(tmp_path, capsys, restock_task):
    out = tmp_path / "runs" / "teacher.jsonl"
    argv = ["run", "--tasks", str(restock_task.root), "--scales", "v0,v1", "--harness", "dtc,ptc",
            "--policy", "oracle", "--out", str(out), "--workers", "2", "--no-progress"]
    assert main(argv) == 0
    first = capsys.readouterr().out
    runs = read_jsonl(out)
    assert len(runs) == 4 and {(t.scale, t.harness) for t in runs} == {("v0", "dtc"), ("v0", "ptc"), ("v1", "dtc"), ("v1", "ptc")}
    assert all(t.reward == 1.0 for t in runs)
    assert "pass@1" in first and "tool_output_tokens" in first and "retail/restock_orders" in first

    # A killed run: drop one finished episode and leave half a line behind; the rerun does only that one.
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines[:3]) + "\n" + lines[3][: len(lines[3]) // 2])
    assert main(argv) == 0
    assert "3 of 4 episodes are already" in capsys.readouterr().out
    with pytest.warns(UserWarning, match="not a whole trajectory"):
        runs = read_jsonl(out)
    assert len(runs) == 4 and len({t.key for t in runs}) == 4


def test_run_rejects_unknown_harness_and_policy(tmp_path, capsys, restock_task):
    assert main(["run", "--tasks", str(restock_task.root), "--harness", "ptc,xyz", "--out", str(tmp_path / "o.jsonl")]) == 2
    assert "unknown harness(es) ['xyz']" in capsys.readouterr().err
    assert main(["run", "--tasks", str(restock_task.root), "--policy", "gpt", "--out", str(tmp_path / "o.jsonl")]) == 2
    assert "unknown policy" in capsys.readouterr().err


def test_max_tool_calls_flag_cuts_the_teacher(tmp_path, capsys, restock_task):
    out = tmp_path / "cut.jsonl"
    assert main(["run", "--tasks", str(restock_task.root), "--harness", "dtc", "--policy", "oracle", "--out", str(out),
                 "--max-tool-calls", "10", "--no-progress"]) == 0
    (t,) = read_jsonl(out)
    assert t.end_reason == "max_tool_calls" and t.model_tool_calls == 10 and t.reward == 0.0


def test_pass_at_k_and_summary_by_group():
    assert pass_at_k(4, 0, 2) == 0.0 and pass_at_k(4, 4, 1) == 1.0
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25) and pass_at_k(4, 1, 2) == pytest.approx(0.5)
    from progagent_lib.harness.trajectory import Trajectory

    runs = [Trajectory("a/b", "v0", 0, "ptc", "p", sample=i, reward=float(i == 0), score=0.5 + 0.5 * (i == 0),
                       tool_output_tokens=100 * (i + 1), tool_calls=3) for i in range(4)]
    table = summarize(runs, k=2)
    row = table.row(0, named=True)
    assert row["episodes"] == 4 and row["pass_rate"] == 0.25 and row["pass@2"] == pytest.approx(0.5)
    assert row["mean_score"] == pytest.approx(0.625) and row["tool_output_tokens"] == 250
    assert trajectories_frame(runs).height == 4 and isinstance(table, pl.DataFrame)


def test_run_batch_in_memory_and_policy_checks(restock_task):
    from progagent_lib.harness.batch import run_batch
    from progagent_lib.policy import OracleTeacher

    result = run_batch([restock_task], ["v0"], ["dtc"], OracleTeacher("dtc"), samples=2, progress=False)
    assert result.ran == 2 and result.skipped == 0 and not result.failures
    assert sorted(t.sample for t in result.trajectories) == [0, 1]
    assert result.summary().row(0, named=True)["pass@2"] == 1.0
    with pytest.raises(ValueError, match="plays the 'dtc' harness only"):
        run_batch([restock_task], ["v0"], ["ptc"], OracleTeacher("dtc"), progress=False)
    factory = run_batch([restock_task], ["v0"], ["ptc"], lambda h: OracleTeacher(h), progress=False)
    assert factory.trajectories[0].harness == "ptc" and factory.trajectories[0].reward == 1.0


def test_cost_by_harness_pivots_scales_against_harnesses():
    from progagent_lib.harness.summary import cost_by_harness
    from progagent_lib.harness.trajectory import Trajectory

    runs = [Trajectory("a/b", s, 0, h, "p", tool_output_tokens=n)
            for s, h, n in [("v0", "dtc", 1000), ("v0", "ptc", 100), ("v3", "dtc", 8000), ("v3", "ptc", 200)]]
    table = cost_by_harness(runs)
    assert table.columns == ["scale", "dtc", "ptc", "dtc/ptc"]
    assert table["dtc/ptc"].to_list() == [10.0, 40.0]


def test_a_half_written_task_is_skipped_not_fatal(tmp_path, capsys, restock_task):
    import shutil

    pool = tmp_path / "tasks"
    shutil.copytree(restock_task.root, pool / "retail" / "restock_orders", ignore=shutil.ignore_patterns("__pycache__"))
    (pool / "retail" / "draft").mkdir()
    (pool / "retail" / "draft" / "task.toml").write_text('id = "retail/draft"\ndomain = "retail"\ntitle = "draft"\n')
    out = tmp_path / "o.jsonl"
    code = main(["run", "--tasks", str(pool), "--harness", "ptc", "--out", str(out), "--no-progress"])
    captured = capsys.readouterr()
    assert code == 1 and "skipped: task" in captured.err and "draft" in captured.err
    assert [t.task_id for t in read_jsonl(out)] == ["retail/restock_orders"]
