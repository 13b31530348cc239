"""`progagent export trajectories FILE --format parquet|hf -o OUT`: real oracle episodes (DTC and PTC, written by
`progagent run`) exported, then loaded back with Hugging Face `datasets` as a user would: rows, rewards, metrics and
the chat with its tool calls as recorded."""
from __future__ import annotations

import dataclasses
import json

import pytest

from progagent_lib.cli import main
from progagent_lib.harness import read_jsonl, write_jsonl
from progagent_lib.harness.export import stage_of

datasets = pytest.importorskip("datasets", reason="datasets is in requirements.txt; install it to run this test")


@pytest.fixture(scope="module")
def oracle_runs(tmp_path_factory, restock_task):
    """Two real episodes of the oracle on restock_orders (v0, seed 0), one under DTC and one under PTC."""
    out = tmp_path_factory.mktemp("export") / "teacher.jsonl"
    assert main(["run", "--tasks", str(restock_task.root), "--harness", "dtc,ptc", "--policy", "oracle",
                 "--out", str(out), "--no-progress"]) == 0
    return out


def check_rows(rows: list[dict], trajectories) -> None:
    """Every episode is one row whose verdict, metrics, tools and chat are the trajectory's."""
    assert len(rows) == len(trajectories) == 2
    by_harness = {row["harness"]: row for row in rows}
    assert set(by_harness) == {"dtc", "ptc"}
    for t in trajectories:
        row = by_harness[t.harness]
        assert (row["reward"], row["score"]) == (t.reward, t.score) == (1.0, 1.0)
        assert {k: row[k] for k in ("task_id", "scale", "seed", "turns", "tool_output_tokens", "tool_calls",
                                    "end_reason", "stage")} == \
               {"task_id": "retail/restock_orders", "scale": "v0", "seed": 0, "turns": t.turns, "stage": None,
                "tool_output_tokens": t.tool_output_tokens, "tool_calls": t.tool_calls, "end_reason": "claim_done"}
        assert row["tool_output_tokens"] > 0 and json.loads(row["tools"]) == t.tools
        messages = row["messages"]
        assert [m["role"] for m in messages[:3]] == ["system", "user", "assistant"]
        assert messages[1]["content"] == t.instruction
        # The first tool call as recorded (OpenAI format: arguments a JSON string), and its result.
        first_call = messages[2]["tool_calls"][0]
        assert first_call == t.messages[2]["tool_calls"][0]
        result = next(m for m in messages if m["role"] == "tool")
        assert result["tool_call_id"] == first_call["id"] and result["content"] == t.calls[0].observation
    assert by_harness["dtc"]["tool_output_tokens"] > by_harness["ptc"]["tool_output_tokens"]
    assert json.loads(by_harness["ptc"]["messages"][2]["tool_calls"][0]["function"]["arguments"])["code"]


def test_parquet_loads_with_load_dataset(oracle_runs, tmp_path, capsys):
    out = tmp_path / "teacher.parquet"
    assert main(["export", "trajectories", str(oracle_runs), "--format", "parquet", "-o", str(out)]) == 0
    assert "wrote 2 episodes" in capsys.readouterr().out and out.is_file()
    table = datasets.load_dataset("parquet", data_files=str(out), split="train", cache_dir=str(tmp_path / "cache"))
    check_rows(list(table), read_jsonl(oracle_runs))


def test_hf_folder_loads_with_load_from_disk(oracle_runs, tmp_path):
    out = tmp_path / "teacher_dataset"
    assert main(["export", "trajectories", str(oracle_runs), "--format", "hf", "-o", str(out)]) == 0
    table = datasets.load_from_disk(str(out))
    assert table.num_rows == 2 and "messages" in table.column_names
    check_rows(list(table), read_jsonl(oracle_runs))


def test_stage_comes_from_the_evaluation_policy_label(oracle_runs, tmp_path):
    """The pipeline's evaluation names its policy hf:<model>@<stage>; the table carries the stage."""
    assert (stage_of("hf:smollm2@sft-ptc"), stage_of("memorize:v0:seed0"), stage_of("oracle"),
            stage_of("hf:/models/qwen@32768")) == ("sft-ptc", "memorize", None, None)
    labelled = tmp_path / "eval.jsonl"
    write_jsonl([dataclasses.replace(t, policy="hf:smollm2@gspo-ptc") for t in read_jsonl(oracle_runs)], labelled)
    out = tmp_path / "eval.parquet"
    assert main(["export", "trajectories", str(labelled), "--format", "parquet", "-o", str(out)]) == 0
    table = datasets.load_dataset("parquet", data_files=str(out), split="train", cache_dir=str(tmp_path / "cache"))
    assert table["stage"] == ["gspo-ptc", "gspo-ptc"]


def test_refusals_are_one_line_and_write_nothing(oracle_runs, tmp_path, capsys):
    out = tmp_path / "t.parquet"
    assert main(["export", "trajectories", str(oracle_runs), "--format", "parquet", "-o", str(out)]) == 0
    before = out.read_bytes()
    capsys.readouterr()
    # An existing output is kept unless --overwrite.
    assert main(["export", "trajectories", str(oracle_runs), "--format", "parquet", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "exists" in err and "--overwrite" in err and len(err.strip().splitlines()) == 1
    assert out.read_bytes() == before
    assert main(["export", "trajectories", str(oracle_runs), "--format", "parquet", "-o", str(out), "--overwrite"]) == 0
    # A file with no trajectory, and a missing file.
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert main(["export", "trajectories", str(empty), "--format", "hf", "-o", str(tmp_path / "none")]) == 2
    assert "no trajectory to export" in capsys.readouterr().err and not (tmp_path / "none").exists()
    assert not (tmp_path / "none.partial").exists()
    assert main(["export", "trajectories", str(tmp_path / "missing.jsonl"), "--format", "parquet", "-o",
                 str(tmp_path / "m.parquet")]) == 2
    assert "no such file" in capsys.readouterr().err
    # A value of the wrong type (a hostile or hand-edited file): one line, no traceback, no output.
    record = json.loads(oracle_runs.read_text().splitlines()[0])
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({**record, "turns": "many"}) + "\n")
    assert main(["export", "trajectories", str(bad), "--format", "parquet", "-o", str(tmp_path / "bad.parquet")]) == 1
    err = capsys.readouterr().err
    assert "wrong type" in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "bad.parquet").exists()


def test_a_line_cut_by_a_killed_run_is_skipped(oracle_runs, tmp_path):
    lines = oracle_runs.read_text().splitlines()
    cut = tmp_path / "killed.jsonl"
    cut.write_text(lines[0] + "\n" + lines[1][: len(lines[1]) // 2])
    out = tmp_path / "killed.parquet"
    with pytest.warns(UserWarning, match="not a whole trajectory"):
        assert main(["export", "trajectories", str(cut), "--format", "parquet", "-o", str(out)]) == 0
    table = datasets.load_dataset("parquet", data_files=str(out), split="train", cache_dir=str(tmp_path / "cache"))
    assert table.num_rows == 1
