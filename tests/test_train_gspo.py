"""GSPO through TRL on the tiny model: one real RL step, checkpoints, and a resumed run continuing its step count."""
import json

import pytest

from progagent_lib.train.gspo import DYNAMICS_FILE, DynamicsLog, GSPORunConfig, grpo_args, run_gspo
from progagent_lib.train.models import TinyModelConfig, build_tiny_model


@pytest.fixture(scope="module")
def tiny_path(repo, tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny")
    build_tiny_model(repo / "tasks", TinyModelConfig(vocab_size=1024, hidden_size=64, intermediate_size=128, head_dim=16), save_to=path)
    return path


def small_config(tiny_path, output_dir, max_steps):
    return GSPORunConfig(model=str(tiny_path), output_dir=str(output_dir), tasks_root="tasks",
                         task_ids=["retail/restock_orders"], harness="dtc", scales=["v0"], train_seeds=[0, 1],
                         num_generations=2, max_steps=max_steps, save_steps=1, max_turns=2, max_new_tokens=16,
                         max_completion_tokens=128)


def test_gspo_is_grpo_with_sequence_ratio_and_no_kl(tmp_path):
    args = grpo_args(GSPORunConfig(output_dir=str(tmp_path), epsilon=1e-2, epsilon_high=2e-2))
    assert (args.importance_sampling_level, args.loss_type, args.beta) == ("sequence", "grpo", 0.0)
    assert (args.epsilon, args.epsilon_high) == (1e-2, 2e-2)


@pytest.mark.slow
def test_killed_run_resumes_step_count_and_dynamics(tiny_path, tmp_path, repo, monkeypatch):
    monkeypatch.chdir(repo)
    out = tmp_path / "run"
    first = run_gspo(small_config(tiny_path, out, max_steps=1))
    assert first["global_step"] == 1 and (out / "checkpoint-1").is_dir()
    # The run was killed after logging a step it never checkpointed: that line must not survive the resume.
    with (out / DYNAMICS_FILE).open("a") as f:
        f.write(json.dumps({"step": 2, "mean_reward": 123.0}) + "\n")

    second = run_gspo(small_config(tiny_path, out, max_steps=2))
    assert second["global_step"] == 2 and (out / "checkpoint-2").is_dir()
    log = DynamicsLog.read(out / DYNAMICS_FILE)
    assert [r["step"] for r in log] == [1, 2]
    assert log[1]["mean_reward"] != 123.0 and log[1]["episodes"] == 2
    for key in ("mean_reward", "tool_output_tokens_per_episode", "tool_calls_per_episode", "runtime_errors_per_episode",
                "dtc_like_program_share", "episode_length_tokens", "truncation_rate"):
        assert key in log[0]


@pytest.mark.slow
def test_gspo_with_lora_saves_a_plain_merged_checkpoint(tiny_path, tmp_path, repo, monkeypatch):
    from dataclasses import replace

    from progagent_lib.train.gspo import LoraSettings
    from progagent_lib.train.models import load_model

    monkeypatch.chdir(repo)
    config = replace(small_config(tiny_path, tmp_path / "lora", max_steps=1), lora=LoraSettings(r=4, alpha=8))
    result = run_gspo(config)
    assert result["global_step"] == 1
    assert not (tmp_path / "lora" / "final" / "adapter_config.json").exists()
    model, _ = load_model(result["final_model"])
    assert model.config.model_type == "qwen3" and not any("lora" in name for name in model.state_dict())
