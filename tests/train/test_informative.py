"""RL that acts, checked before it runs (train.informative): the pre-RL probe of pass rates, the refusal of a run
with nothing to learn from, dynamic sampling's refills, and the learning-rate scheduler as a field."""
import json
from dataclasses import replace

import pytest

from progagent_lib.config import ConfigError
from progagent_lib.harness.trajectory import Trajectory
from progagent_lib.train.gspo import DYNAMICS_FILE, DynamicsLog, GSPORunConfig, grpo_args, make_rollout_func, run_gspo
from progagent_lib.train.informative import (
    PROBE_FILE,
    DynamicSampler,
    NothingToLearn,
    PromptRate,
    choose_informative,
    informative_group_chance,
    most_informative_first,
    rates_from_trajectories,
)
from progagent_lib.train.rollout import EpisodeTokens

from train.test_train_gspo import small_config, tiny_path  # noqa: F401 - the module's tiny model fixture


def episode(seed: int, reward: float, errored: bool = False) -> EpisodeTokens:
    """A played episode as GSPO reads it: its trajectory's verdict (the tokens do not matter here)."""
    trajectory = Trajectory("retail/restock_orders", "v0", seed, "ptc", "test", reward=reward, score=reward)
    if errored:
        trajectory.end_reason, trajectory.error = "policy_error", "the engine died"
    return EpisodeTokens(prompt_ids=[1], trajectory=trajectory)


def test_rates_keep_errored_samples_out_and_informative_means_both_outcomes():
    played = [episode(0, 1.0), episode(0, 0.0), episode(0, 0.0, errored=True), episode(1, 1.0), episode(1, 1.0),
              episode(2, 0.0), episode(2, 0.0)]
    rates = rates_from_trajectories([e.trajectory for e in played])
    assert [(r.seed, r.passed, r.samples) for r in rates] == [(0, 1, 2), (1, 2, 2), (2, 0, 2)]
    assert [r.informative() for r in rates] == [True, False, False]
    assert choose_informative(rates) == [rates[0]]
    # the chance that a group has both outcomes grows with the group: p = 1/6 gives 0.52 at 4, 0.77 at 8
    assert round(informative_group_chance(1 / 6, 4), 2) == 0.52 and round(informative_group_chance(1 / 6, 8), 2) == 0.77


def test_a_profile_with_no_informative_prompt_is_refused_naming_the_rates():
    rates = [PromptRate("retail/restock_orders", "v0", 0, 4, 4), PromptRate("retail/restock_orders", "v0", 1, 0, 4)]
    with pytest.raises(NothingToLearn, match=r"before its first step.*inside \(0, 1\) at temperature 0.7.*"
                                             r"restock_orders v0 seed 0: 4/4; retail/restock_orders v0 seed 1: 0/4"):
        choose_informative(rates, temperature=0.7)


def test_dynamic_sampling_replaces_flat_groups_up_to_its_budget():
    batch = [episode(0, 1.0), episode(0, 1.0), episode(1, 0.0), episode(1, 1.0), episode(2, 0.0), episode(2, 0.0)]
    pool = [PromptRate("retail/restock_orders", "v0", seed, 1, 2) for seed in (5, 6, 7)]
    plays = []

    def play(prompts):   # seed 5 comes out flat again, 6 and 7 informative
        plays.append([p.seed for p in prompts])
        return [episode(p.seed, float(i % 2) if p.seed != 5 else 0.0) for p in prompts for i in range(2)]

    sampler = DynamicSampler(pool, group_size=2, budget=3, seed=1)
    kept, stats = sampler.refill(batch, play)
    assert len(kept) == len(batch) and sum(len(p) for p in plays) <= 3
    assert stats["groups"] == 3 and stats["flat_groups_sampled"] == 2 and stats["refill_groups"] == sum(map(len, plays))
    assert kept[2:4] == batch[2:4]     # an informative group stays where it was
    flat = [g for g in (kept[0:2], kept[2:4], kept[4:6]) if len({e.reward for e in g}) == 1]
    assert stats["informative_groups"] == 3 - len(flat)
    # each replaced group is one prompt's, whole
    assert all(len({e.trajectory.seed for e in kept[i:i + 2]}) == 1 for i in (0, 2, 4))
    # no budget: nothing is played, flat groups stay and are counted
    kept, stats = DynamicSampler(pool, group_size=2, budget=0).refill(batch, play)
    assert kept == batch and stats["refill_groups"] == 0 and stats["informative_group_share"] == pytest.approx(1 / 3)


def test_a_refill_draws_prompts_the_batch_has_not_while_the_shuffle_has_them():
    pool = [PromptRate("retail/restock_orders", "v0", seed, 1, 2) for seed in (5, 6, 7)]
    for seed in range(20):   # whatever the shuffle: 5 and 6 are in the batch, so 7 comes first
        sampler = DynamicSampler(pool, group_size=2, budget=1, seed=seed)
        batch = [episode(5, 1.0), episode(5, 0.0), episode(6, 0.0), episode(6, 0.0)]
        played = []
        sampler.refill(batch, lambda prompts: played.extend(p.seed for p in prompts) or
                       [episode(p.seed, float(i)) for p in prompts for i in range(2)])
        assert played == [7]
    # two at once are two different prompts; with every prompt in the batch, the shuffle's order decides
    sampler = DynamicSampler(pool, group_size=2, budget=2, seed=0)
    assert len({p.seed for p in sampler.next_prompts(2, avoid={("retail/restock_orders", "v0", 5)})}) == 2
    assert len(DynamicSampler(pool, 2, 2).next_prompts(3, avoid={(p.task_id, p.scale, p.seed) for p in pool})) == 3


def test_informative_order_takes_rates_nearest_half_first_in_batches_and_refills(tmp_path):
    task = "retail/restock_orders"
    rates = [PromptRate(task, "v0", seed, passed, 4) for seed, passed in ((4, 3), (5, 1), (6, 2), (7, 1), (8, 2))]
    # 2/4 before 1/4 before 3/4 (as near 1/2, the lower rate has more room to rise); ties keep the probe's order
    assert [r.seed for r in most_informative_first(rates)] == [6, 8, 5, 7, 4]
    # the refills draw in that order past the batch's prompts (6, passed over, comes next), then from the start again
    sampler = DynamicSampler(most_informative_first(rates), group_size=2, budget=2, shuffle=False)
    assert [p.seed for p in sampler.next_prompts(2, avoid={(task, "v0", 6)})] == [8, 5]
    assert [p.seed for p in sampler.next_prompts(4)] == [6, 7, 4, 8]
    # TRL's batches take the dataset's rows in order (no shuffle) under it; the default stays TRL's seeded shuffle
    assert grpo_args(GSPORunConfig(output_dir=str(tmp_path))).shuffle_dataset is True
    ordered = GSPORunConfig(output_dir=str(tmp_path), probe_samples=4, prompt_order="informative")
    assert grpo_args(ordered).shuffle_dataset is False
    with pytest.raises(ConfigError, match=r"prompt_order='informative': is informative: the order is the probe's"):
        GSPORunConfig(prompt_order="informative")
    with pytest.raises(ConfigError, match=r"prompt_order='best': must be one of shuffled, informative"):
        GSPORunConfig(prompt_order="best")


def test_an_informative_run_trains_its_groups_in_that_order(tiny_path, repo, tmp_path, monkeypatch):  # noqa: F811
    """A real run (the tiny model, which fails everything: every step is skipped, but each batch line names its
    group's prompt): with rates 3/4, 1/4, 2/4 for seeds 0, 1, 2, the batches take seed 2, then seed 1."""
    from progagent_lib.train import informative

    monkeypatch.chdir(repo)
    task = "retail/restock_orders"
    monkeypatch.setattr(informative, "probe_pass_rates", lambda config, tasks, prompts=None: [
        PromptRate(task, "v0", 0, 3, 4), PromptRate(task, "v0", 1, 1, 4), PromptRate(task, "v0", 2, 2, 4)])
    config = replace(small_config(tiny_path, tmp_path / "run", max_steps=2), train_seeds=[0, 1, 2], probe_samples=4,
                     prompt_order="informative")
    run_gspo(config)
    lines = [json.loads(line) for line in (tmp_path / "run" / DYNAMICS_FILE).open()]
    assert [[g[2] for g in line["group_prompts"]] for line in lines if "group_prompts" in line] == [[2], [1]]
    record = json.loads((tmp_path / "run" / PROBE_FILE).read_text())   # the record keeps the probe's order
    assert [p["seed"] for p in record["prompts"]] == [0, 1, 2] and record["chosen"] == 3


def test_the_rollout_function_refills_flat_groups_and_logs_the_counts(tiny_path, repo, tmp_path, monkeypatch):  # noqa: F811
    from progagent_lib import load_task
    from progagent_lib.generation import TurnOutput
    from progagent_lib.generation.sources import load_model
    from progagent_lib.harness.chat_format import ChatFormat

    monkeypatch.chdir(repo)
    _, tokenizer = load_model(str(tiny_path))
    chat = ChatFormat(tokenizer, model_name=str(tiny_path))
    answer = tokenizer("Nothing to do.", add_special_tokens=False)["input_ids"] + [chat.end_of_turn]
    played = []

    def turns(trainer, specs):   # every episode answers at once and fails: every group is flat
        played.append(len(specs))
        return lambda contexts, max_new_tokens: [TurnOutput(answer, [-1.0] * len(answer)) for _ in contexts]

    task = load_task(repo / "tasks" / "retail" / "restock_orders")
    prompts = [[{"role": "user", "content": "x", "episode": f"{task.id}|v0|0"}]] * 2
    trainer = type("Trainer", (), {"processing_class": tokenizer, "state": type("S", (), {"global_step": 0})()})()
    config = GSPORunConfig(harness="dtc", num_generations=2, max_turns=2, max_new_tokens=len(answer) + 8,
                           max_context_tokens=None, dynamic_sampling=True, refill_groups=2)
    dynamics = DynamicsLog(tmp_path / DYNAMICS_FILE, group_size=2, sample_episodes=0)
    pool = [PromptRate(task.id, "v0", 3, 1, 2)]
    out = make_rollout_func(config, [task], dynamics, turn_generator=turns, chat=chat, pool=pool)(prompts, trainer)
    assert len(out["verifier_reward"]) == 2
    assert dynamics.sampling == {"groups": 1, "flat_groups_sampled": 1, "refill_groups": 2, "informative_groups": 0,
                                 "informative_group_share": 0.0}
    # the refills were played as episodes of the pool's prompt (seed 3), and they are what the batch trains on
    assert [e.trajectory.seed for e in dynamics.pending] == [3, 3]
    assert dynamics.summarise()["refill_groups"] == 2


def test_a_run_whose_policy_never_passes_is_refused_before_rl_with_its_rates_written(tiny_path, repo, tmp_path,  # noqa: F811
                                                                                   monkeypatch):
    monkeypatch.chdir(repo)
    out = tmp_path / "refused"
    config = replace(small_config(tiny_path, out, max_steps=1), probe_samples=2, temperature=1.0)
    with pytest.raises(NothingToLearn, match=r"retail/restock_orders v0 seed 0: 0/2; retail/restock_orders v0 seed 1"):
        run_gspo(config)
    record = json.loads((out / PROBE_FILE).read_text())
    assert record["candidates"] == 2 and record["chosen"] == 0
    assert [(p["seed"], p["samples"], p["chosen"]) for p in record["prompts"]] == [(0, 2, False), (1, 2, False)]
    assert (out / "probe" / "trajectories.jsonl").exists() and not list(out.glob("checkpoint-*"))


def test_rl_settings_are_fields_checked_in_one_line(tmp_path):
    assert grpo_args(GSPORunConfig(output_dir=str(tmp_path))).lr_scheduler_type == "constant"
    assert grpo_args(GSPORunConfig(output_dir=str(tmp_path), lr_scheduler_type="cosine")).lr_scheduler_type == "cosine"
    assert grpo_args(GSPORunConfig(output_dir=str(tmp_path))).adam_epsilon == 1e-8
    assert grpo_args(GSPORunConfig(output_dir=str(tmp_path), adam_epsilon=1e-4)).adam_epsilon == 1e-4
    with pytest.raises(ConfigError, match=r"adam_epsilon=0"):
        GSPORunConfig(adam_epsilon=0)
    with pytest.raises(ConfigError, match=r"lr_scheduler_type='step': must be one of constant, linear, cosine"):
        GSPORunConfig(lr_scheduler_type="step")
    with pytest.raises(ConfigError, match=r"probe_samples=1: is 1: one sample cannot show"):
        GSPORunConfig(probe_samples=1)
    with pytest.raises(ConfigError, match=r"dynamic_sampling: each of 2 ranks plays 3 episodes"):
        from progagent_lib.train.gspo import check_processes
        check_processes(GSPORunConfig(num_generations=2, prompts_per_step=3, micro_batch_size=1, minibatches=1,
                                      dynamic_sampling=True), 2)


def test_rft_keeps_only_the_episodes_that_passed(restock_task):
    from progagent_lib.harness.episode import Limits, run_episode
    from progagent_lib.harness.spec import CLAIM_DONE
    from progagent_lib.harness.turn import ToolCall, Turn
    from progagent_lib.policy.oracle import OracleTeacher
    from progagent_lib.train.pipeline import rft_data

    class ClaimsAtOnce:
        """A policy that hands in an answer without doing anything (R = 0)."""

        def act(self, messages, tools):
            return Turn(tool_calls=[ToolCall(CLAIM_DONE, {"action": "Done."}, "call_1")])

    task, limits = restock_task, Limits(max_tool_calls=None, max_turns=8, max_context_tokens=None)
    passed = run_episode(task, "v0", 0, "ptc", OracleTeacher("ptc"), limits)
    failed = run_episode(task, "v0", 1, "ptc", ClaimsAtOnce(), limits)
    errored = run_episode(task, "v0", 2, "ptc", OracleTeacher("ptc"), limits)
    errored.end_reason, errored.error = "policy_error", "the engine died"
    assert (passed.reward, failed.reward) == (1.0, 0.0)
    assert rft_data([failed, passed, errored]) == [passed]


def test_after_rl_the_trained_prompts_are_sampled_again_and_compared_in_pairs(tiny_path, repo, tmp_path,  # noqa: F811
                                                                              monkeypatch):
    import shutil

    from progagent_lib.train.informative import POST_PROBE_FILE, write_rates
    from progagent_lib.train.pipeline import PipelineConfig, Recipe

    monkeypatch.chdir(repo)
    config = PipelineConfig(model=str(tiny_path), gspo=replace(small_config(tiny_path, tmp_path, 1), probe_samples=2))
    recipe = Recipe(config, tmp_path / "run")
    folder = tmp_path / "run" / "gspo-dtc"
    shutil.copytree(tiny_path, folder / "final")           # the model GSPO left (here: the tiny one, unchanged)
    before = [PromptRate("retail/restock_orders", "v0", 0, 1, 2), PromptRate("retail/restock_orders", "v0", 1, 2, 2)]
    write_rates(folder / PROBE_FILE, before, before, 2)
    shutil.copytree(tiny_path, tmp_path / "run" / "sft-dtc" / "final")  # and the SFT model it started from
    record = recipe.probe_after("dtc")
    # fresh samples of the chosen prompts by both models (numbered after the probe's own 2), not the probe's rates
    assert [(p["seed"], p["chosen_at"], p["before"], p["after"], p["samples"]) for p in record["prompts"]] == [
        (0, 0.5, 0.0, 0.0, 2),
        (1, 1.0, 0.0, 0.0, 2),
    ]
    for when in ("before", "after"):
        played = [json.loads(line) for line in (folder / when / "probe" / "trajectories.jsonl").open()]
        assert sorted((t["seed"], t["sample"]) for t in played) == [(0, 2), (0, 3), (1, 2), (1, 3)]
    assert record["unit"] == "sample" and record["first_sample"] == 2
    assert record["paired"]["difference"] == pytest.approx(0.0) and record["paired"]["units"] == 4
    assert json.loads((folder / POST_PROBE_FILE).read_text()) == record
    assert "after minus before: +0.000" in record["summary"]
    # RFT counts the SFT policy's samples before RL towards its budget, and takes no more than GSPO played
    from progagent_lib.train.common import DYNAMICS_FILE

    (folder / DYNAMICS_FILE).write_text(json.dumps({"step": 1, "pass": 1, "episodes": 3}) + "\n")
    assert [(t.seed, t.sample) for t in recipe._rft_samples("dtc")] == [(0, 2), (1, 2), (0, 3)]
    # and what it samples beyond them is numbered after them: the same numbers would draw the same random numbers
    (folder / DYNAMICS_FILE).write_text(json.dumps({"step": 1, "pass": 1, "episodes": 10}) + "\n")
    drawn = recipe._rft_samples("dtc")
    assert sorted((t.seed, t.sample) for t in drawn) == sorted([(s, n) for s in (0, 1) for n in (2, 3, 4, 5, 6)])
    # a run whose GSPO did not probe has nothing to compare
    assert recipe.probe_after("ptc") is None
    # With GSPO's log: the prompts of the groups it trained on (seed 1's; seed 0's group was flat), each played
    # paired_probe_samples times by both models
    config = replace(config, gspo=replace(config.gspo, paired_probe_samples=3))
    recipe = Recipe(config, tmp_path / "run2")
    folder = tmp_path / "run2" / "gspo-dtc"
    shutil.copytree(tiny_path, folder / "final")
    shutil.copytree(tiny_path, tmp_path / "run2" / "sft-dtc" / "final")
    write_rates(folder / PROBE_FILE, before, before, 2)
    groups = [["retail/restock_orders", "v0", 0, 0, 2, False], ["retail/restock_orders", "v0", 1, 1, 2, True]]
    (folder / DYNAMICS_FILE).write_text(json.dumps({"step": 1, "pass": 1, "group_prompts": groups}) + "\n")
    record = recipe.probe_after("dtc")
    assert [(p["seed"], p["samples"]) for p in record["prompts"]] == [(1, 3)]
    assert record["paired"]["units"] == 3 and "the 1 prompts GSPO trained on, 3 fresh samples" in record["summary"]


def test_the_gspo_models_evaluation_plays_beside_its_probe_samples_and_is_handed_back(tiny_path, repo, tmp_path,  # noqa: F811
                                                                                     monkeypatch):
    """On an engine, the paired probe's samples after RL and the GSPO model's held-out evaluation are one
    evaluate_together call, and evaluate("gspo") hands that evaluation's rows back without playing it again, unless
    the GSPO model was written again since. A stand-in plays evaluate_together here, one evaluation after the other
    in this process (no engine here: tests/engine/test_engine.py plays them at once on the engine)."""
    import shutil

    from safetensors.torch import load_file, save_file

    import importlib

    from progagent_lib.train import pipeline

    evaluation = importlib.import_module("progagent_lib.train.evaluate")   # the package exports evaluate()
    from progagent_lib.train.informative import write_rates
    from progagent_lib.train.pipeline import PipelineConfig, Recipe, read_learning
    from progagent_lib.train.splits import Instance

    monkeypatch.chdir(repo)
    played = []

    def here(config):   # the engine's settings dropped: played by the tiny model in this process
        played.append(config.stage)
        return evaluation.evaluate(replace(config, engine_url=None, engine_model=None))

    together = []
    monkeypatch.setattr(pipeline, "evaluate", here)
    monkeypatch.setattr(pipeline, "evaluate_together", lambda configs: together.append(
        [c.stage for c in configs]) or [here(c) for c in configs])
    config = PipelineConfig(model=str(tiny_path), rl_harnesses=["dtc"], engine_url="http://127.0.0.1:9", sampled=0,
                            gspo=replace(small_config(tiny_path, tmp_path, 1), probe_samples=2),
                            eval=replace(PipelineConfig().eval, max_turns=2, max_new_tokens=16, max_context_tokens=4096))
    recipe = Recipe(config, tmp_path / "run")
    recipe._instances = [Instance("retail/restock_orders", "v0", 1000, "seeds")]
    folder = tmp_path / "run" / "gspo-dtc"
    shutil.copytree(tiny_path, folder / "final")
    shutil.copytree(tiny_path, tmp_path / "run" / "sft-dtc" / "final")
    weights_file = next((folder / "final").glob("*.safetensors"))   # GSPO's weights: one tensor moved from SFT's
    tensors = load_file(str(weights_file))
    name = next(iter(tensors))
    tensors[name] = tensors[name] + 1.0
    save_file(tensors, str(weights_file), metadata={"format": "pt"})
    rates = [PromptRate("retail/restock_orders", "v0", 0, 1, 2)]
    write_rates(folder / PROBE_FILE, rates, rates, 2)
    record = recipe.probe_after("dtc")
    assert record["paired"]["units"] == 2
    assert together == [["pre-rl-probe", "gspo-dtc"]] and played == ["pre-rl-probe", "pre-rl-probe", "gspo-dtc"]
    rows = recipe.evaluate("gspo", "dtc")
    assert played == ["pre-rl-probe", "pre-rl-probe", "gspo-dtc"]   # handed back, not played again
    assert [(r["stage"], r["split"]) for r in rows] == [("gspo", "seeds")]
    assert [r["stage"] for r in read_learning(tmp_path / "run" / "learning.jsonl")] == ["gspo"]
    assert "eval_gspo-dtc" not in recipe.seconds   # its time is the probe's
    # GSPO's model written again after the probe: its evaluation is played anew
    recipe.probe_after("dtc")
    save_file(tensors, str(weights_file), metadata={"format": "pt", "again": "1"})
    recipe.evaluate("gspo", "dtc")
    assert played[-1] == "gspo-dtc" and played.count("gspo-dtc") == 3


def test_a_batch_line_names_each_groups_prompt_and_the_trained_ones_are_the_informative():
    from progagent_lib.train.gspo import trained_prompts, zero_variance

    line = zero_variance([episode(3, 1.0), episode(3, 0.0), episode(5, 0.0), episode(5, 0.0)], group_size=2)
    task = "retail/restock_orders"
    assert line["group_prompts"] == [[task, "v0", 3, 1, 2, True], [task, "v0", 5, 0, 2, False]]
    assert trained_prompts([line, {"step": 2}, line]) == [(task, "v0", 3)]
