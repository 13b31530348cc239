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
                         num_generations=2, num_iterations=1, max_steps=max_steps, save_steps=1, max_turns=2,
                         max_new_tokens=16, max_context_tokens=4096)


def test_gspo_is_grpo_with_sequence_ratio_and_no_kl(tmp_path):
    args = grpo_args(GSPORunConfig(output_dir=str(tmp_path), epsilon=1e-2, epsilon_high=2e-2))
    assert (args.importance_sampling_level, args.loss_type, args.beta) == ("sequence", "grpo", 0.0)
    assert (args.epsilon, args.epsilon_high) == (1e-2, 2e-2)


def test_several_passes_per_generation_batch_in_micro_batches(tmp_path):
    """The ratio is 1 on the first optimizer step over a batch; only later ones (minibatches or num_iterations > 1)
    let the clip act. Episodes go through the model in micro-batches, their gradients accumulated over a minibatch."""
    args = grpo_args(GSPORunConfig(output_dir=str(tmp_path), num_generations=4, prompts_per_step=2, micro_batch_size=2,
                                   num_iterations=2, max_steps=4))
    assert (args.per_device_train_batch_size, args.gradient_accumulation_steps, args.num_iterations) == (2, 4, 2)
    assert args.steps_per_generation == 4   # TRL counts micro-batches: the whole generation batch
    # The GSPO paper's minibatches: the batch of 8 split into 2 optimizer steps of 4 episodes (2 micro-batches each).
    args = grpo_args(GSPORunConfig(output_dir=str(tmp_path), num_generations=4, prompts_per_step=2, micro_batch_size=2,
                                   minibatches=2, num_iterations=1, max_steps=4))
    assert (args.gradient_accumulation_steps, args.steps_per_generation, args.num_iterations) == (2, 4, 1)
    with pytest.raises(ValueError, match="micro_batch_size=3"):
        grpo_args(GSPORunConfig(output_dir=str(tmp_path), num_generations=4, micro_batch_size=3))
    with pytest.raises(ValueError, match="minibatches=3 must divide"):
        grpo_args(GSPORunConfig(output_dir=str(tmp_path), num_generations=4, minibatches=3))
    with pytest.raises(ValueError, match="multiple of minibatches x num_iterations = 4"):
        grpo_args(GSPORunConfig(output_dir=str(tmp_path), num_generations=4, minibatches=2, num_iterations=2, max_steps=6))


def test_dynamics_lines_say_which_batch_and_pass(tmp_path):
    log = DynamicsLog(tmp_path / DYNAMICS_FILE, group_size=2, sample_episodes=0, steps_per_batch=2)
    assert [log.position(step) for step in (1, 2, 3)] == [{"generation": 1, "pass": 1, "passes": 2},
                                                          {"generation": 1, "pass": 2, "passes": 2},
                                                          {"generation": 2, "pass": 1, "passes": 2}]
    log.rollout_seconds, log.weight_sync_seconds = 5.0, 1.0
    log.summarise([])
    first = log.write(1, 8.0, {"loss": 0.5, "clip_ratio/region_mean": 0.0})
    second = log.write(2, 2.0, {"loss": 0.25, "clip_ratio/region_mean": 0.5})
    # rollout and sync are spent once per batch: on its first line only
    assert (first["seconds_rollout"], first["seconds_weight_sync"], first["seconds_update"]) == (5.0, 1.0, 2.0)
    assert (second["seconds_rollout"], second["seconds_update"], second["clip_region"]) == (0.0, 2.0, 0.5)
    assert [line["step"] for line in DynamicsLog.read(log.path)] == [1, 2]


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
                "malformed_calls_per_episode", "end_reasons", "zero_variance_group_share", "dtc_like_program_share",
                "episode_length_tokens", "truncation_rate", "loss"):
        assert key in log[0]
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert [s["step"] for s in samples] == [1, 1, 2, 2] and all(s["messages"] for s in samples)  # 2 kept per batch


@pytest.mark.slow
def test_second_pass_over_a_batch_is_off_policy_and_clip_fractions_are_logged(tiny_path, tmp_path, repo, monkeypatch):
    from dataclasses import replace

    monkeypatch.chdir(repo)
    config = replace(small_config(tiny_path, tmp_path / "two", max_steps=2), num_iterations=2, learning_rate=5e-3,
                     epsilon=1e-4, epsilon_high=1e-4)
    result = run_gspo(config)
    log = result["dynamics"]
    # one generation batch, trained on twice: a line per optimizer step
    assert [(line["generation"], line["pass"]) for line in log] == [(1, 1), (1, 2)]
    assert log[0]["episodes"] == log[1]["episodes"] == 2
    assert all("clip_region" in line and 0.0 <= line["clip_region"] <= 1.0 for line in log)


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
