"""`progagent train eval`: a saved checkpoint evaluated under two harnesses on held-out seeds, from a YAML preset."""
import json

from progagent_lib.cli import main
from progagent_lib.harness import read_jsonl
from progagent_lib.generation.tiny_model import TinyModelConfig, build_tiny_model


def test_train_eval_cli_writes_the_pass_rate_table(tmp_path, repo, monkeypatch, capsys):
    monkeypatch.chdir(repo)
    build_tiny_model("tasks", TinyModelConfig(vocab_size=1024, hidden_size=64, intermediate_size=128, head_dim=16),
                     save_to=tmp_path / "model")
    config = tmp_path / "eval.yaml"
    config.write_text(
        f"model: {tmp_path / 'model'}\noutput_dir: {tmp_path / 'eval'}\ntask_ids: [retail/restock_orders]\n"
        "harnesses: [dtc, ptc]\nseeds: [1000, 1001]\nmax_turns: 1\nmax_new_tokens: 4\nstage: sft\n")
    assert main(["train", "eval", "--config", str(config)]) == 0
    assert "| dtc | v0 | 2 | 0 |" in capsys.readouterr().out
    # The episodes are trajectories in `progagent run`'s format, the policy named by model and stage.
    records = read_jsonl(tmp_path / "eval" / "trajectories.jsonl")
    assert sorted((r.harness, r.seed) for r in records) == [("dtc", 1000), ("dtc", 1001), ("ptc", 1000), ("ptc", 1001)]
    assert {r.policy for r in records} == {f"hf:{tmp_path / 'model'}@sft"} and all(r.messages for r in records)
    # An untrained model never calls claim_done within 4 tokens: the real verifier gives no reward.
    assert all(r.reward == 0.0 and r.end_reason in ("turn_cut", "no_tool_call") for r in records)
    table = json.loads((tmp_path / "eval" / "pass_rates.json").read_text())
    assert [row["harness"] for row in table] == ["dtc", "ptc"] and all(row["pass_rate"] == 0.0 for row in table)
