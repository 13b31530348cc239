"""The held-out splits, the learning rows and the memorization baseline of a training run (issue: learning that
transfers). The splits never hold a trained (task, parameters, seed); the nearest-instruction memorization baseline
passes exactly the instances a stored program solves; intervals match known values; a learning file never mixes
two runs; bad split configs are refused before any compute, naming the task."""
import json
from pathlib import Path

import pytest

from progagent_lib import load_pool
from progagent_lib.harness import run_episode
from progagent_lib.harness.trajectory import Trajectory
from progagent_lib.policy.memorize import NearestMemorizationPolicy
from progagent_lib.stats import wilson_interval, wilson_rate
from progagent_lib.config import load_config
from progagent_lib.train.pipeline import PipelineConfig, Recipe, read_learning, write_learning_rows
from progagent_lib.train.scoring import format_learning_table, learning_rows, summarise
from progagent_lib.train.splits import (Instance, SplitConfig, SplitError, TrainedInstances, check_disjoint,
                                        make_splits, params_key, spread_over_domains)

REPO = Path(__file__).resolve().parents[2]
CONFIGS = ["ci", "cpu-fast", "cpu-smoke", "cpu-study", "cpu-dtc", "cpu-cross"]


@pytest.fixture(scope="module")
def pool():
    return {t.id: t for t in load_pool(REPO / "tasks")}


@pytest.mark.parametrize("name", CONFIGS)
def test_no_shipped_config_puts_a_trained_instance_in_a_held_out_split(pool, name, tmp_path):
    config = load_config(PipelineConfig, REPO / "configs" / f"{name}.yaml")
    recipe = Recipe(config, tmp_path)
    trained = recipe.trained_instances()
    instances = recipe.instances()
    assert {i.split for i in instances} >= {"seeds", "params"}
    for inst in instances:
        seeds = trained.seeds.get(inst.task_id)
        params = params_key(pool[inst.task_id].params_for(inst.seed))
        assert params == inst.params
        if inst.split == "tasks":
            assert seeds is None
            continue
        assert inst.seed not in seeds
        seen = {params_key(pool[inst.task_id].params_for(s)) for s in seeds}
        assert (params in seen) == (inst.split == "seeds"), inst
    assert json.loads((tmp_path / "splits.json").read_text()) == [i.to_dict() for i in instances]


def test_the_study_profile_has_the_size_the_issue_asks(pool, tmp_path):
    """Issue 39: (b) of at least 32 instances, half with a request value no training seed drew; greedy and sampled;
    GSPO beside both controls; several trained domains, and held-out tasks in domains with no trained task."""
    config = load_config(PipelineConfig, REPO / "configs" / "cpu-study.yaml")
    recipe = Recipe(config, tmp_path)
    trained = recipe.trained_instances().task_ids
    instances = recipe.instances()
    held_out = sorted({i.task_id for i in instances if i.split == "tasks"})
    trained_domains = {t.split("/")[0] for t in trained}
    requests = [i for i in instances if i.split == "params"]
    assert len(requests) >= 32 and 2 * sum(bool(i.new_values) for i in requests) >= len(requests)
    assert len(trained_domains) >= 4 and len({t.split("/")[0] for t in held_out} - trained_domains) >= 2
    assert config.sampled >= 1 and {"gspo", "control", "rft"} <= set(config.stages)
    assert config.gspo.num_generations >= 8 and config.gspo.probe_samples and config.sft.teacher_reading


def test_sampled_stages_choose_which_evaluations_are_sampled_too(tmp_path):
    """`sampled` samples per instance beside the greedy episode for every evaluated stage, or for `sampled_stages`
    only; the memorization baseline's fixed program never."""
    from progagent_lib.train.splits import Instance

    every = Recipe(PipelineConfig(sampled=2), tmp_path / "every")
    some = Recipe(PipelineConfig(sampled=2, sampled_stages=["sft", "gspo"]), tmp_path / "some")
    none = Recipe(PipelineConfig(sampled=0, sampled_stages=["sft"]), tmp_path / "none")
    for recipe in (every, some, none):
        recipe._instances = [Instance("retail/restock_orders", "v0", 1000, "seeds")]
    decodings = {name: {stage: [d for d, _ in recipe._evaluations(stage, "ptc", ["ptc"])]
                        for stage in ("base", "sft", "gspo", "control", "rft")}
                 for name, recipe in (("every", every), ("some", some), ("none", none))}
    assert decodings["every"] == {stage: ["greedy", "sampled"] for stage in ("base", "sft", "gspo", "control", "rft")}
    assert decodings["some"] == {"base": ["greedy"], "sft": ["greedy", "sampled"], "gspo": ["greedy", "sampled"],
                                 "control": ["greedy"], "rft": ["greedy"]}
    assert all(d == ["greedy"] for d in decodings["none"].values())
    sampled = dict(some._evaluations("gspo", "ptc", ["ptc"]))["sampled"]
    assert (sampled.samples, sampled.temperature) == (2, some.config.gspo.temperature)
    assert not every.sampled("memorize")


def test_check_disjoint_refuses_every_kind_of_leak(pool):
    task = "retail/restock_orders"
    trained = TrainedInstances().add([task], range(8))
    same = next(s for s in range(1000, 1400) if pool[task].params_for(s) in [pool[task].params_for(t) for t in range(8)])
    other = next(s for s in range(1000, 1400) if pool[task].params_for(s) not in [pool[task].params_for(t) for t in range(8)])
    leaks = {
        "the seed is a training seed": Instance(task, "v0", 3, "seeds"),
        "its parameters are a trained instance's": Instance(task, "v0", same, "params"),
        "belongs in split \\(b\\)": Instance(task, "v0", other, "seeds"),
        "the task is trained on": Instance(task, "v0", 2000, "tasks"),
        "belongs in split \\(c\\)": Instance("hr_payroll/leave_year_end", "v0", 1000, "seeds"),
    }
    for message, instance in leaks.items():
        with pytest.raises(SplitError, match=message):
            check_disjoint([instance], pool, trained)


def test_bad_split_configs_are_refused_naming_the_task(pool):
    trained = TrainedInstances().add(["retail/restock_orders"], range(8))
    with pytest.raises(SplitError, match=r"held-out task\(s\) \['retail/restock_orders'\] are also trained on"):
        make_splits(pool, trained, SplitConfig(held_out_tasks=["retail/restock_orders"]))
    with pytest.raises(SplitError, match="unknown task id"):
        make_splits(pool, trained, SplitConfig(held_out_tasks=["retail/no_such_task"]))
    with pytest.raises(SplitError, match=r"on retail/restock_orders, only .* \(wanted 50\)"):
        make_splits(pool, trained, SplitConfig(seeds_per_task=50, search=20))
    with pytest.raises(SplitError, match="has no instance"):
        make_splits(pool, TrainedInstances(), SplitConfig())
    for field, value in (("seeds_per_task", -1), ("scale", "v9"), ("search", 0), ("max_trained_tasks", 0)):
        with pytest.raises(SplitError, match=f"splits.{field}"):
            SplitConfig(**{field: value})


def test_spread_over_domains_takes_one_domain_after_another():
    ids = ["a/1", "a/2", "a/3", "b/1", "b/2", "c/1"]
    assert spread_over_domains(ids, 3) == ["a/1", "b/1", "c/1"]
    assert spread_over_domains(ids, 4) == ["a/1", "a/2", "b/1", "c/1"]
    assert spread_over_domains(ids, None) == sorted(ids)


def test_pipeline_config_refuses_unknown_stages_and_a_control_without_gspo():
    with pytest.raises(ValueError, match=r"unknown stage\(s\) \['rl'\]"):
        PipelineConfig(stages=["sft", "rl"])
    with pytest.raises(ValueError, match="control .* needs the gspo stage"):
        PipelineConfig(stages=["sft", "control"])
    with pytest.raises(ValueError, match="sampled=-1"):
        PipelineConfig(sampled=-1)


def test_the_controls_train_at_gspos_step_size_and_compute(tmp_path):
    """The SFT control and RFT continue SFT for GSPO's optimizer steps at GSPO's learning rate and scheduler (or
    control_learning_rate), not SFT's, through GSPO's LoRA adapters: they differ from GSPO in objective and data, not
    in how far a step moves or which weights it moves."""
    config = load_config(PipelineConfig, REPO / "configs" / "cpu-smoke.yaml", {"output_dir": str(tmp_path)})
    assert config.sft.learning_rate != config.gspo.learning_rate   # what the default changes
    recipe = Recipe(config, tmp_path)
    for stage in ("control", "rft"):
        sft = recipe.control_sft_config(stage, "ptc")
        assert (sft.learning_rate, sft.lr_scheduler_type) == (config.gspo.learning_rate, config.gspo.lr_scheduler_type)
        assert sft.max_steps == config.gspo.max_steps and sft.output_dir == str(tmp_path / f"{stage}-ptc")
        assert sft.lora == config.gspo.lora is not None   # through the same adapters as GSPO's
    chosen = load_config(PipelineConfig, REPO / "configs" / "cpu-smoke.yaml",
                         {"output_dir": str(tmp_path), "control_learning_rate": 3e-5})
    assert Recipe(chosen, tmp_path).control_sft_config("control", "ptc").learning_rate == 3e-5
    with pytest.raises(ValueError, match="control_learning_rate=0.*must be a number > 0 or null"):
        PipelineConfig(control_learning_rate=0)


def test_the_memorization_baseline_passes_exactly_the_instances_a_stored_program_solves(pool, tmp_path):
    """Trained on restock_orders seeds 0-3 (PTC teacher turns), replayed by nearest instruction: it passes the held-out
    seeds whose request a trained seed had (a), and neither another request (b) nor another task (c)."""
    task = pool["retail/restock_orders"]
    trained = TrainedInstances().add([task.id], range(4))
    instances = make_splits(pool, trained, SplitConfig(seeds_per_task=1, params_per_task=2,
                                                       held_out_tasks=["hr_payroll/leave_year_end"]))
    policy = NearestMemorizationPolicy("ptc", [(task, "v0", s) for s in range(4)])
    got = {(i.split, i.seed): run_episode(pool[i.task_id], i.scale, i.seed, "ptc", policy).reward for i in instances}
    assert got == {(i.split, i.seed): float(i.split == "seeds") for i in instances}, got
    # the stored program is the one of the trained instance with the same request
    same = next(i for i in instances if i.split == "seeds")
    chosen, _, seed = policy.nearest(task.instruction(same.seed))
    assert chosen.id == task.id and task.params_for(seed) == task.params_for(same.seed)


def test_held_out_values_are_values_no_training_seed_drew(pool):
    """values_per_task: (b) instances whose request has a value (here an excluded category) no trained seed drew;
    params_per_task then counts new requests of seen values only. Seeds 0-11 of restock_orders never exclude
    household or frozen."""
    task = pool["retail/restock_orders"]
    trained = TrainedInstances().add([task.id], range(12))
    instances = make_splits(pool, trained, SplitConfig(seeds_per_task=1, params_per_task=3, values_per_task=3))
    seen = {task.params_for(s)["excluded_category"] for s in range(12)}
    assert seen.isdisjoint({"household", "frozen"})
    new = [i for i in instances if i.new_values]
    assert len(new) == 3 and all(i.split == "params" for i in new)
    assert {task.params_for(i.seed)["excluded_category"] for i in new} <= {"household", "frozen"}
    assert all(i.new_values == f"excluded_category={task.params_for(i.seed)['excluded_category']}" for i in new)
    old = [i for i in instances if i.split == "params" and not i.new_values]
    assert len(old) == 3 and all(task.params_for(i.seed)["excluded_category"] in seen for i in old)
    with pytest.raises(SplitError, match="values_per_task"):
        make_splits(pool, trained, SplitConfig(values_per_task=1, search=2))


def test_intervals_against_known_values():
    assert wilson_interval(4, 4) == pytest.approx((0.5101, 1.0), abs=1e-4)
    assert wilson_interval(0, 8) == pytest.approx((0.0, 0.3244), abs=1e-4)
    assert wilson_interval(0, 12)[0] == 0.0 and wilson_interval(12, 12)[1] == 1.0   # exact, not 2.8e-17
    assert wilson_rate(0.5, 10) == pytest.approx(wilson_interval(5, 10))
    assert wilson_rate(0.375, 8) == pytest.approx((0.1368, 0.6943), abs=1e-4)
    with pytest.raises(ValueError):
        wilson_rate(1.5, 3)


def _trajectory(task_id, seed, reward, sample=0, harness="ptc"):
    return Trajectory(task_id=task_id, scale="v0", seed=seed, harness=harness, policy="p", sample=sample,
                      reward=reward, score=reward, end_reason="claim_done" if reward else "max_turns")


def test_rows_pool_samples_per_instance_and_carry_the_per_task_spread():
    split_of = {("a/x", "v0", 1): "seeds", ("a/x", "v0", 2): "seeds", ("b/y", "v0", 1): "tasks", ("c/z", "v0", 1): "tasks"}
    trajectories = [_trajectory("a/x", 1, 1.0, 0), _trajectory("a/x", 1, 0.0, 1), _trajectory("a/x", 2, 1.0, 0),
                    _trajectory("a/x", 2, 1.0, 1), _trajectory("b/y", 1, 0.0), _trajectory("c/z", 1, 1.0)]
    rows = {r["split"]: r for r in learning_rows(trajectories, split_of, stage="sft", decoding="sampled")}
    seeds, tasks = rows["seeds"], rows["tasks"]
    assert seeds["instances"] == 2 and seeds["episodes"] == 4 and seeds["pass_rate"] == 0.75
    assert (seeds["pass_low"], seeds["pass_high"]) == pytest.approx(wilson_rate(0.75, 2))   # n = instances
    assert (seeds["score_low"], seeds["score_high"]) == pytest.approx(wilson_rate(0.75, 2))   # not a point
    assert tasks["per_task"] == {"b/y": 0.0, "c/z": 1.0} and tasks["task_pass_min"] == 0.0 and tasks["tasks_with_a_pass"] == 1
    assert seeds["stage"] == "sft" and seeds["claim_done_rate"] == 0.75
    with pytest.raises(KeyError, match="belongs to no evaluation split"):
        learning_rows([_trajectory("d/w", 9, 1.0)], split_of)
    # (b)'s instances with a request value no training seed drew are also summarised on their own
    new_values_of = {("a/x", "v0", 2): "excluded_category=frozen"}
    rows = {r["split"]: r for r in learning_rows(trajectories, split_of, new_values_of, stage="sft", decoding="sampled")}
    assert rows["seeds"]["new_values_instances"] == 1 and rows["seeds"]["new_values_pass_rate"] == 1.0
    assert "new_values_instances" not in rows["tasks"]
    assert "seeds: new values only" in format_learning_table(rows.values())
    errored = _trajectory("a/x", 1, 0.0)
    errored.end_reason = "policy_error"
    assert summarise([errored, _trajectory("a/x", 1, 1.0)])["errored"] == 1


def test_a_learning_file_never_mixes_two_runs(tmp_path, capsys):
    path = tmp_path / "learning.jsonl"
    row = {"stage": "sft", "recipe": "ptc", "harness": "ptc", "split": "seeds", "decoding": "greedy", "run": "r1",
           "commit": "c1", "pass_rate": 0.5}
    write_learning_rows(path, [row])
    write_learning_rows(path, [{**row, "split": "tasks"}])
    assert len(read_learning(path)) == 2
    write_learning_rows(path, [{**row, "pass_rate": 1.0}])          # the same row again replaces it
    assert sorted(r["pass_rate"] for r in read_learning(path)) == [0.5, 1.0]
    write_learning_rows(path, [{**row, "run": "r2"}])               # another run: the old file goes aside
    assert [r["run"] for r in read_learning(path)] == ["r2"]
    assert len(read_learning(tmp_path / "learning.r1.c1.jsonl")) == 2
    assert "moved to learning.r1.c1.jsonl" in capsys.readouterr().out


def test_a_model_with_the_sft_weights_reuses_the_sft_rows(tmp_path):
    """Every GSPO step skipped leaves the SFT weights bit-identical: its evaluation would replay the same episodes, so
    the rows are SFT's, marked; one changed weight and it is evaluated."""
    import torch
    from safetensors.torch import save_file

    from progagent_lib.train.pipeline import same_weights

    config = load_config(PipelineConfig, REPO / "configs" / "ci.yaml")
    recipe = Recipe(config, tmp_path)
    weights = {"w": torch.arange(6, dtype=torch.float32)}
    for stage in ("sft", "gspo"):
        Path(recipe.model_for(stage, "ptc")).mkdir(parents=True)
        save_file(weights, str(Path(recipe.model_for(stage, "ptc")) / "model.safetensors"))
    sft_row = {"stage": "sft", "recipe": "ptc", "harness": "ptc", "split": "seeds", "decoding": "greedy",
               **recipe.identity, "pass_rate": 0.5}
    write_learning_rows(tmp_path / "learning.jsonl", [sft_row])
    rows = recipe.evaluate("gspo", "ptc")
    assert [(r["stage"], r["same_weights_as"], r["pass_rate"]) for r in rows] == [("gspo", "sft", 0.5)]
    assert {r["stage"] for r in read_learning(tmp_path)} == {"sft", "gspo"}
    save_file({"w": weights["w"] + 1e-7}, str(Path(recipe.model_for("gspo", "ptc")) / "model.safetensors"))
    assert not same_weights(recipe.model_for("gspo", "ptc"), recipe.model_for("sft", "ptc"))
    assert recipe._same_model_rows("gspo", "ptc", ["ptc"], recipe.model_for("gspo", "ptc")) is None


def test_eval_harnesses_evaluate_each_recipe_under_every_harness_named(tmp_path):
    """A recipe trained under one harness is evaluated under every harness of eval_harnesses: its rows carry the
    recipe and the harness played (here the memorization baseline, which needs no model)."""
    from dataclasses import replace

    config = load_config(PipelineConfig, REPO / "configs" / "ci.yaml")
    recipe = Recipe(replace(config, rl_harnesses=["ptc"], eval_harnesses=["ptc", "hybrid"]), tmp_path)
    rows = recipe.evaluate("memorize", "ptc")
    assert {(r["recipe"], r["harness"]) for r in rows} == {("ptc", "ptc"), ("ptc", "hybrid")}
    assert {(r["recipe"], r["harness"]) for r in read_learning(tmp_path)} == {("ptc", "ptc"), ("ptc", "hybrid")}
    assert recipe.played_harnesses() == ["ptc", "hybrid"]


def test_the_base_model_and_the_memorization_baseline_are_evaluated_once_for_all_recipes(tmp_path):
    """Neither the base model nor the memorization baseline depends on the recipe: with three recipes evaluated under
    the same harnesses, the second and third reuse the first's rows (marked), and a harness the first did not play
    is evaluated."""
    from dataclasses import replace

    config = load_config(PipelineConfig, REPO / "configs" / "ci.yaml")
    config = replace(config, model="smollm2", rl_harnesses=["ptc", "hybrid"], eval_harnesses=["ptc", "hybrid"])
    recipe = Recipe(config, tmp_path)
    first = recipe.evaluate("memorize", "ptc")
    second = recipe.evaluate("memorize", "hybrid")
    assert [(r["recipe"], r["same_weights_as"]) for r in second] == [("hybrid", "memorize-ptc")] * len(first)
    assert [r["pass_rate"] for r in second] == [r["pass_rate"] for r in first]
    assert {r["recipe"] for r in read_learning(tmp_path) if r["stage"] == "memorize"} == {"ptc", "hybrid"}
    base = [{**r, "stage": "base", "model": "smollm2"} for r in first]
    write_learning_rows(tmp_path / "learning.jsonl", base)
    copied = recipe._same_model_rows("base", "hybrid", ["ptc", "hybrid"], "smollm2")
    assert [(r["stage"], r["recipe"], r["same_weights_as"]) for r in copied] == [("base", "hybrid", "base-ptc")] * len(base)
    assert recipe._same_model_rows("base", "hybrid", ["ptc", "hybrid", "dtc"], "smollm2") is None   # dtc not played
    assert recipe._same_model_rows("sft", "hybrid", ["ptc", "hybrid"], "x") is None                # trained: never
    tiny = Recipe(replace(config, model="tiny"), tmp_path)          # a tiny base is built per recipe
    assert tiny._same_model_rows("base", "hybrid", ["ptc", "hybrid"], "tiny") is None


def test_the_cross_harness_table_pools_splits_and_lists_shared_models_once(tmp_path, capsys):
    """`progagent train table`: every model under every harness, the splits pooled (passes and instances summed, the
    interval Wilson's at the pooled count), the base model and the memorization baseline listed once although each
    recipe carries their rows; a run without learning rows is a clear error."""
    import argparse

    from progagent_lib.train.cli import table_command
    from progagent_lib.train.scoring import cross_harness_rows, format_cross_harness_table

    def row(stage, recipe, harness, split, rate, **extra):
        return {"stage": stage, "recipe": recipe, "harness": harness, "split": split, "decoding": "greedy",
                "instances": 1, "pass_rate": rate, "mean_score": rate, "tool_calls": 3.0, "turns": 2.0,
                "tool_output_tokens": 10.0, "claim_done_rate": 1.0, **extra}

    rows = []
    for recipe in ("dtc", "ptc", "hybrid"):
        for harness in ("dtc", "ptc", "hybrid"):
            same = {} if recipe == "dtc" else {"same_weights_as": "base-dtc"}
            rows += [row("base", recipe, harness, s, 0.0, **same) for s in ("seeds", "params")]
            rows += [row("sft", recipe, harness, "seeds", float(recipe == harness)), row("sft", recipe, harness, "params", 0.0)]
    table = cross_harness_rows(rows)
    assert [(r["stage"], r["recipe"]) for r in table[:3]] == [("base", "-")] * 3
    assert len(table) == 3 + 9
    sft_ptc = next(r for r in table if (r["stage"], r["recipe"], r["harness"]) == ("sft", "ptc", "ptc"))
    assert (sft_ptc["passed"], sft_ptc["instances"], sft_ptc["splits"]) == (1, 2, ["params", "seeds"])
    assert (sft_ptc["pass_low"], sft_ptc["pass_high"]) == pytest.approx(wilson_interval(1, 2))
    markdown = format_cross_harness_table(rows)
    assert "| PTC recipe, SFT | 0/2" in markdown and markdown.count("| base model |") == 1
    write_learning_rows(tmp_path / "learning.jsonl", [{**r, "run": "r", "commit": "c"} for r in rows])
    assert table_command(argparse.Namespace(run=str(tmp_path), decoding="greedy",
                                            figure=str(tmp_path / "fig" / "cross"))) == 0
    assert {p.name for p in (tmp_path / "fig").iterdir()} == {"cross.png", "cross.svg", "cross.vl.json", "cross.csv"}
    assert "| DTC recipe, SFT | 1/2" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="has no learning.jsonl"):
        table_command(argparse.Namespace(run=str(tmp_path / "none"), decoding="greedy", figure=None))
