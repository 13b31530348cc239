"""GSPO through TRL on the tiny model: one real RL step, checkpoints, and a resumed run continuing its step count;
the loss and its diagnostics (sequence ratio, sampler-trainer mismatch, truncated importance sampling), masked
truncated episodes, and no optimizer step where every advantage is zero."""
import json

import pytest

from progagent_lib.train import gspo as gspo_module
from progagent_lib.config import ConfigError
from progagent_lib.train.gspo import DYNAMICS_FILE, DynamicsLog, GSPORunConfig, grpo_args, run_gspo
from progagent_lib.generation.tiny_model import TinyModelConfig, build_tiny_model


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
    """The defaults are GSPO's (tests/train/test_gspo_variants.py: the other variants)."""
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
                "episode_length_tokens", "truncation_rate", "loss", "skipped", "importance_sampling"):
        assert key in log[0]
    for line in log:   # a step with an advantage reports its ratio, entropy and the sampler comparison; one without
        computed = ("ratio_mean", "entropy", "clip_region", "is_weight_mean", "logp_mismatch_mean", "logp_mismatch_max")
        assert all(k in line for k in computed) if not line["skipped"] else not any(k in line for k in computed)
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert [s["step"] for s in samples] == [1, 1, 2, 2] and all(s["messages"] for s in samples)  # 2 kept per batch


def alternating_reward(prompts, completions, verifier_reward, **_):
    """Rewards 0, 1, 0, 1, ...: every group has an advantage, so the policy moves (the tiny model never solves a task)."""
    return [float(index % 2) for index in range(len(prompts))]


def equal_reward(prompts, completions, verifier_reward, **_):
    return [1.0] * len(prompts)


@pytest.fixture
def log_prob_passes(monkeypatch):
    """(with gradient, only the model's tokens scored) of every text log-prob pass GSPOTrainer runs, per chunk of
    episodes, in order."""
    import torch

    from progagent_lib.train.gspo_trainer import GSPOTrainer

    passes = []
    original = GSPOTrainer._scored_logps_and_entropies

    def recorded(self, model, input_ids, attention_mask, logits_to_keep, scored, *args):
        passes.append((torch.is_grad_enabled(), scored is not None))
        return original(self, model, input_ids, attention_mask, logits_to_keep, scored, *args)

    monkeypatch.setattr(GSPOTrainer, "_scored_logps_and_entropies", recorded)
    return passes


def weights(folder):
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


@pytest.mark.slow
def test_a_batch_trained_on_once_takes_its_old_logprobs_from_the_loss_pass(tiny_path, tmp_path, repo, monkeypatch,
                                                                           log_prob_passes):
    """One minibatch, one pass: TRL keeps no old log-probs and none are computed in a pass of their own (one forward
    pass fewer per episode); the loss's own log-probs stand for them, so the ratio is exactly 1, and the sampler
    comparison and the TIS weights come from that pass."""
    monkeypatch.chdir(repo)
    monkeypatch.setattr(gspo_module, "verifier_reward", alternating_reward)
    log = run_gspo(small_config(tiny_path, tmp_path / "once", max_steps=1))["dynamics"]
    # every log-prob pass is the loss's (with gradient), scoring the model's tokens only; no old-log-prob pass
    assert log_prob_passes and all(grad and scored for grad, scored in log_prob_passes)
    line = log[0]
    assert line["skipped"] is False and line["ratio_mean"] == line["ratio_min"] == line["ratio_max"] == 1.0
    assert 0.0 <= line["logp_mismatch_mean"] <= line["logp_mismatch_max"] < 1e-4   # the sampler is the same model
    assert all(abs(line[k] - 1.0) < 1e-4 for k in ("is_weight_mean", "is_weight_min", "is_weight_max"))


@pytest.mark.slow
def test_second_pass_over_a_batch_is_off_policy_and_clip_fractions_are_logged(tiny_path, tmp_path, repo, monkeypatch,
                                                                             log_prob_passes):
    from dataclasses import replace

    import torch

    monkeypatch.chdir(repo)
    monkeypatch.setattr(gspo_module, "verifier_reward", alternating_reward)
    config = replace(small_config(tiny_path, tmp_path / "two", max_steps=2), num_iterations=2, learning_rate=5e-3,
                     epsilon=1e-4, epsilon_high=1e-4)
    result = run_gspo(config)
    # the loss's passes only, scoring the model's tokens only: each pass over the batch is one optimizer step, so the
    # first pass's log-probs are the old ones (kept for the second) and there is no no-gradient pass of their own
    passes = log_prob_passes
    assert passes and all(grad and scored for grad, scored in passes)
    log = result["dynamics"]
    # one generation batch, trained on twice: a line per optimizer step
    assert [(line["generation"], line["pass"]) for line in log] == [(1, 1), (1, 2)]
    assert log[0]["episodes"] == log[1]["episodes"] == 2
    assert all("clip_region" in line and 0.0 <= line["clip_region"] <= 1.0 for line in log)
    # The sequence ratio is exactly 1 on the first pass (nothing has moved) and moves on the second.
    assert log[0]["ratio_mean"] == log[0]["ratio_min"] == log[0]["ratio_max"] == 1.0
    assert log[1]["ratio_min"] < 1.0 < log[1]["ratio_max"] and log[1]["clip_region"] > 0.0
    assert all(line["entropy"] > 0.0 and line["skipped"] is False for line in log)
    # transformers' sampler is the trainer's own model: its log-probs agree with the trainer's but for rounding,
    # and the TIS weights are 1 but for as much; the mismatch is measured once per generation batch
    assert 0.0 <= log[0]["logp_mismatch_mean"] <= log[0]["logp_mismatch_max"] < 1e-4
    assert "logp_mismatch_mean" not in log[1]
    assert all(line["importance_sampling"] == "truncated" for line in log)
    assert all(abs(line[key] - 1.0) < 1e-4 for line in log for key in ("is_weight_mean", "is_weight_min", "is_weight_max"))
    before, after = weights(tiny_path), weights(tmp_path / "two" / "final")
    assert any(not torch.equal(before[name], after[name]) for name in before)   # the policy moved


@pytest.mark.slow
def test_a_step_without_advantage_leaves_weights_and_optimizer_untouched(tiny_path, tmp_path, repo, monkeypatch,
                                                                         log_prob_passes):
    """Equal rewards in every group: zero advantage, so no optimizer step — no weight decay, no momentum."""
    from dataclasses import replace

    import torch

    monkeypatch.chdir(repo)
    monkeypatch.setattr(gspo_module, "verifier_reward", equal_reward)
    out = tmp_path / "flat"
    config = replace(small_config(tiny_path, out, max_steps=2), num_iterations=2, learning_rate=1e-2,
                     weight_decay=0.1, importance_sampling="none")
    log = run_gspo(config)["dynamics"]
    assert [line["skipped"] for line in log] == [True, True]
    before, after = weights(tiny_path), weights(out / "final")
    assert before.keys() == after.keys() and all(torch.equal(before[name], after[name]) for name in before)
    assert torch.load(out / "checkpoint-2" / "optimizer.pt", weights_only=False)["state"] == {}   # no moments either
    # "none" is said on every line and in the saved config
    assert all(line["importance_sampling"] == "none" and "is_weight_mean" not in line for line in log)
    assert json.loads((out / "gspo_config.json").read_text())["importance_sampling"] == "none"
    # a batch without advantage computes no log-prob at all: not the old ones (held back, then not needed), not the
    # loss's; so no sampler comparison either
    assert log_prob_passes == [] and "logp_mismatch_max" not in log[0]


def test_ratio_mismatch_and_truncated_importance_weights():
    import torch

    from progagent_lib.train.gspo_trainer import log_importance_weights, logp_mismatch, truncated_importance_weights

    trainer = torch.tensor([[-1.0, -2.0, -0.5, 0.0], [-0.1, -0.2, -0.3, -0.4]])
    model_tokens = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]])
    # GSPO's ratio: exp of the mean log-ratio over each sequence's model tokens; 1 against itself
    assert torch.equal(log_importance_weights(trainer - trainer, model_tokens, "sequence").exp(), torch.ones(2, 1))
    shifted = trainer + torch.tensor([[0.2, 0.4, 9.0, 9.0], [0.1, 0.1, 0.1, 0.1]])   # masked tokens do not count
    torch.testing.assert_close(log_importance_weights(shifted - trainer, model_tokens, "sequence").exp(),
                               torch.tensor([[0.3], [0.1]]).exp())
    # GRPO's: one per token
    assert torch.equal(log_importance_weights(shifted - trainer, model_tokens, "token"), shifted - trainer)
    # the mismatch is 0 when the sampler's log-probs are the trainer's own; else |difference| over model tokens
    assert logp_mismatch(trainer, trainer.clone(), model_tokens).abs().max() == 0.0
    sampler = trainer - torch.tensor([[3.0, -0.5, 7.0, 7.0], [0.0, 0.0, 0.0, float("nan")]])
    torch.testing.assert_close(logp_mismatch(trainer, sampler, model_tokens), torch.tensor([3.0, 0.5, 0.0, 0.0, 0.0]))
    # TIS: min(p_trainer / p_sampler, cap) on model tokens; 1 off them and where the sampler gave no log-prob
    weights = truncated_importance_weights(trainer, sampler, model_tokens, cap=2.0)
    torch.testing.assert_close(weights, torch.tensor([[2.0, float(torch.tensor(-0.5).exp()), 1.0, 1.0],
                                                      [1.0, 1.0, 1.0, 1.0]]))
    assert weights.max() <= 2.0


def test_gspo_loss_is_trls_grpo_loss_with_a_sequence_ratio(tiny_path, tmp_path):
    """The loss written out in GSPOTrainer is the one TRL's GRPOTrainer computes for GSPO's settings; TIS scales it."""
    import torch
    from datasets import Dataset
    from trl import GRPOTrainer

    from progagent_lib.train.gspo_trainer import GSPOTrainer
    from progagent_lib.generation.sources import load_model

    model, tokenizer = load_model(str(tiny_path))
    args = grpo_args(GSPORunConfig(output_dir=str(tmp_path), num_generations=2, epsilon=0.1, epsilon_high=0.2))
    trainer = GSPOTrainer(model=model, processing_class=tokenizer, reward_funcs=[equal_reward], args=args,
                          train_dataset=Dataset.from_list([{"prompt": [{"role": "user", "content": "x"}]}] * 2))
    generator = torch.Generator().manual_seed(0)
    completion_mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]])
    inputs = {"prompt_ids": torch.randint(0, 1024, (2, 3), generator=generator), "prompt_mask": torch.tensor([[0, 1, 1], [1, 1, 1]]),
              "completion_ids": torch.randint(0, 1024, (2, 6), generator=generator), "completion_mask": completion_mask,
              "tool_mask": torch.tensor([[1, 1, 0, 0, 1, 1], [1, 1, 1, 1, 1, 1]]), "advantages": torch.tensor([0.7, -0.7]),
              "num_items_in_batch": torch.tensor(8)}
    with torch.no_grad():
        logps, _, _ = trainer._get_per_token_logps_and_entropies(
            model, torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], 1),
            torch.cat([inputs["prompt_mask"], completion_mask], 1), 6)
    for shift in (0.0, 0.05, -0.5):   # on-policy, inside the clip range, outside it
        inputs["old_per_token_logps"] = logps + shift
        model.train()
        trainer.current_gradient_accumulation_steps = 2
        ours, trls = trainer.compute_loss(model, inputs), GRPOTrainer._compute_loss(trainer, model, inputs)
        torch.testing.assert_close(ours, trls)
        weighted = trainer.compute_loss(model, {**inputs, "is_weight": torch.full((2, 6), 0.5)})
        torch.testing.assert_close(weighted, 0.5 * trls)


def test_log_prob_passes_drop_padding_columns_and_match_the_padded_pass(tiny_path, tmp_path):
    """Each chunk of a log-prob pass runs at its own episodes' width (TRL pads every episode to the batch's longest);
    the log-probs and entropies of the completion's tokens are those of TRL's padded pass, the dropped ones zero."""
    import torch
    from datasets import Dataset
    from trl import GRPOTrainer

    from progagent_lib.generation.sources import load_model
    from progagent_lib.train.gspo_trainer import GSPOTrainer

    model, tokenizer = load_model(str(tiny_path))
    model.eval()
    args = grpo_args(GSPORunConfig(output_dir=str(tmp_path), num_generations=2))
    trainer = GSPOTrainer(model=model, processing_class=tokenizer, reward_funcs=[equal_reward], args=args,
                          train_dataset=Dataset.from_list([{"prompt": [{"role": "user", "content": "x"}]}] * 2))
    generator = torch.Generator().manual_seed(0)
    prompt_mask = torch.tensor([[0, 0, 1, 1], [0, 1, 1, 1], [0, 0, 1, 1]])            # left-padded prompts
    completion_mask = torch.tensor([[1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 0, 0, 0], [1, 1, 0, 0, 0, 0, 0, 0]])
    ids = torch.randint(0, 1024, (3, 12), generator=generator)
    mask = torch.cat([prompt_mask, completion_mask], 1)
    widths = []
    hook = model.register_forward_pre_hook(lambda _, a, kw: widths.append(kw["input_ids"].shape[1]), with_kwargs=True)
    with torch.no_grad():
        ours = trainer._get_per_token_logps_and_entropies(model, ids, mask, 8, batch_size=1, compute_entropy=True)
        padded = GRPOTrainer._get_per_token_logps_and_entropies(trainer, model, ids, mask, 8, batch_size=1,
                                                                 compute_entropy=True)
        pair = trainer._get_per_token_logps_and_entropies(model, ids, mask, 8, batch_size=2)
    hook.remove()
    assert widths == [5, 8, 4, 12, 12, 12, 8, 4]   # ours per episode, TRL's at the batch's width, ours per pair
    real = completion_mask.bool()
    for got, want in ((ours[0], padded[0]), (ours[1], padded[1]), (pair[0], padded[0])):
        assert got.shape == want.shape == (3, 8)
        torch.testing.assert_close(got[real], want[real], atol=1e-4, rtol=1e-4)
    assert (ours[0][~real] == 0).all() and (ours[1][~real] == 0).all()


def test_truncated_episodes_are_masked_when_asked(tiny_path, repo, tmp_path, monkeypatch):
    from progagent_lib import load_task
    from progagent_lib.harness.chat_format import ChatFormat
    from progagent_lib.train.gspo import make_rollout_func
    from progagent_lib.generation.sources import load_model
    from progagent_lib.generation import TurnOutput

    monkeypatch.chdir(repo)
    _, tokenizer = load_model(str(tiny_path))
    chat = ChatFormat(tokenizer, model_name=str(tiny_path))
    cut = tokenizer("I will list the", add_special_tokens=False)["input_ids"]                       # no end of turn
    answer = tokenizer("Nothing to do.", add_special_tokens=False)["input_ids"] + [chat.end_of_turn]

    def turns(trainer, specs):   # episode 0's turn stops before its end of turn (a cut); episode 1 answers and ends
        return lambda contexts, max_new_tokens: [TurnOutput(cut, [-1.0] * len(cut)), TurnOutput(answer, [-1.0] * len(answer))]

    task = load_task(repo / "tasks" / "retail" / "restock_orders")
    prompts = [[{"role": "user", "content": "x", "episode": f"{task.id}|v0|0"}]] * 2
    trainer = type("Trainer", (), {"processing_class": tokenizer})()
    for mask_truncated in (True, False):
        config = GSPORunConfig(harness="dtc", num_generations=2, max_turns=2, max_new_tokens=len(answer) + 8,
                               max_context_tokens=None, reward="dense", mask_truncated=mask_truncated)
        dynamics = DynamicsLog(tmp_path / DYNAMICS_FILE, group_size=2, sample_episodes=0)
        out = make_rollout_func(config, [task], dynamics, turn_generator=turns, chat=chat)(prompts, trainer)
        assert [e.end_reason for e in dynamics.pending] == ["turn_cut", "no_tool_call"]
        assert any(out["env_mask"][1])
        if mask_truncated:   # dropped as an errored episode is: no token trained, the group's mean reward
            assert not any(out["env_mask"][0]) and out["verifier_reward"][0] == out["verifier_reward"][1]
        else:
            assert out["env_mask"][0] == [1] * len(cut)
            assert out["verifier_reward"] == [e.score for e in dynamics.pending]


def test_bad_gspo_settings_are_refused_naming_the_field(tmp_path):
    with pytest.raises(ConfigError, match=r"importance_sampling='tis': must be one of none, truncated"):
        GSPORunConfig(importance_sampling="tis")
    for cap in (0.5, float("nan"), float("inf"), "2", True):
        with pytest.raises(ConfigError, match="importance_sampling_cap=.*must be a finite number >= 1"):
            GSPORunConfig(importance_sampling_cap=cap)
    with pytest.raises(ConfigError, match="mask_truncated='yes': must be true or false"):
        GSPORunConfig(mask_truncated="yes")
    assert GSPORunConfig(importance_sampling="none", importance_sampling_cap=1, mask_truncated=True).importance_sampling == "none"
    # TRL's own vLLM correction stays off: the correction is the config's, on every generation path
    assert grpo_args(GSPORunConfig(output_dir=str(tmp_path), use_vllm=True)).vllm_importance_sampling_correction is False


def test_diagnostics_figure_per_run_and_step(tmp_path):
    from progagent_lib.analysis import training_figures as tf
    from progagent_lib.analysis.style import NoFigureData, save_chart

    for harness, moved in {"dtc": 0.0, "ptc": 0.1}.items():
        lines = [{"step": step, "ratio_mean": 1.0 + moved * (step - 1), "ratio_min": 1.0 - moved, "ratio_max": 1.0 + 2 * moved,
                  "entropy": 2.0 - 0.1 * step, "clip_low": 0.0, "clip_high": moved, "clip_region": moved,
                  "is_weight_mean": 1.0, "is_weight_min": 0.9, "is_weight_max": 1.2, "skipped": False,
                  "importance_sampling": "truncated", **({"logp_mismatch_mean": 0.01, "logp_mismatch_max": 0.3}
                                                         if step % 2 else {})} for step in (1, 2, 3, 4)]
        (tmp_path / f"gspo-{harness}").mkdir()
        (tmp_path / f"gspo-{harness}" / DYNAMICS_FILE).write_text("".join(json.dumps(line) + "\n" for line in lines))
    folders = {h: tmp_path / f"gspo-{h}" for h in ("dtc", "ptc")}
    steps = tf.gspo_step_table(tf.read_dynamics(folders), {h: tf.read_trainer_log(f) for h, f in folders.items()})
    spec = tf.gspo_diagnostics(steps).to_dict()
    titles = [chart["title"] for row in spec["vconcat"] for chart in row["hconcat"]]
    assert titles == ["Sequence importance ratio", "Token entropy", "Sampler-trainer mismatch", "Clip fractions",
                      "Importance weight (TIS)"]
    png, _ = save_chart(tf.gspo_diagnostics(steps), "gspo_diagnostics", tmp_path / "figures")
    assert png.stat().st_size > 1000
    # a run logged before these diagnostics existed: only what it has; with none, no figure (no placeholder)
    older = steps.drop("ratio_mean", "ratio_min", "ratio_max", "is_weight_mean", "is_weight_min", "is_weight_max")
    older_titles = [c["title"] for row in tf.gspo_diagnostics(older).to_dict()["vconcat"] for c in row["hconcat"]]
    assert older_titles == ["Token entropy", "Sampler-trainer mismatch", "Clip fractions"]
    with pytest.raises(NoFigureData, match="no logged steps with GSPO diagnostics"):
        tf.gspo_diagnostics(steps.select("harness", "step"))


@pytest.mark.slow
def test_gspo_with_lora_saves_a_plain_merged_checkpoint(tiny_path, tmp_path, repo, monkeypatch):
    from dataclasses import replace

    from progagent_lib.train.gspo import LoraSettings
    from progagent_lib.generation.sources import load_model

    monkeypatch.chdir(repo)
    config = replace(small_config(tiny_path, tmp_path / "lora", max_steps=1), lora=LoraSettings(r=4, alpha=8))
    result = run_gspo(config)
    assert result["global_step"] == 1
    assert not (tmp_path / "lora" / "final" / "adapter_config.json").exists()
    model, _ = load_model(result["final_model"])
    assert model.config.model_type == "qwen3" and not any("lora" in name for name in model.state_dict())
