"""Every run config and profile refuses values it cannot run with, naming the field and what it may be.

Construction only (no model, no training): the checks live in each config's __post_init__, task ids in its
validate_tasks(), profiles in load_profile.
"""
from __future__ import annotations

import dataclasses
import re

import pytest
import yaml

from progagent_lib.analysis.profiles import (BenchmarkSettings, ComparisonSettings, DifficultySettings, ProfileError,
                                             ProfileSettings, load_profile)
from progagent_lib.config import LR_SCHEDULERS, ConfigError, load_config
from progagent_lib.train.evaluate import EvalConfig
from progagent_lib.train.gspo import GSPORunConfig, LoraSettings
from progagent_lib.generation.tiny_model import TinyModelConfig
from progagent_lib.train.pipeline import PipelineConfig
from progagent_lib.train.sft import SFTRunConfig
from progagent_lib.train.splits import SplitConfig, SplitError

HARNESSES = "dtc, ptc, hybrid"
SCALES = "v0, v1, v2, v3"

# (what is built, the field the error must name, the allowed values it must state)
BAD_CONSTRUCTIONS = [
    (lambda: GSPORunConfig(reward="bianry"), "GSPORunConfig.reward='bianry'", "one of binary, dense"),
    (lambda: GSPORunConfig(harness="ptcc"), "GSPORunConfig.harness='ptcc'", f"one of {HARNESSES}"),
    (lambda: GSPORunConfig(scales=["v9"]), "GSPORunConfig.scales=['v9']", f"values from {SCALES}"),
    (lambda: GSPORunConfig(error_mode="isError"), "GSPORunConfig.error_mode='isError'", "one of is_error, off, detect"),
    (lambda: GSPORunConfig(learning_rate=0), "GSPORunConfig.learning_rate=0", "number > 0"),
    (lambda: GSPORunConfig(epsilon=-0.1), "GSPORunConfig.epsilon=-0.1", "number >= 0"),
    (lambda: GSPORunConfig(temperature=0.0), "GSPORunConfig.temperature=0.0", "number > 0"),
    (lambda: GSPORunConfig(num_generations=1), "GSPORunConfig.num_generations=1", "integer >= 2"),
    (lambda: GSPORunConfig(num_generations=4, micro_batch_size=3), "GSPORunConfig.micro_batch_size=3",
     "must divide the generation batch of 4 episodes"),
    (lambda: GSPORunConfig(minibatches=2, num_iterations=2, max_steps=6), "GSPORunConfig.max_steps=6",
     "multiple of minibatches x num_iterations = 4"),
    (lambda: GSPORunConfig(max_new_tokens=4096, max_context_tokens=2048), "GSPORunConfig.max_new_tokens=4096",
     "<= max_context_tokens=2048"),
    (lambda: GSPORunConfig(max_turns=0), "GSPORunConfig.max_turns=0", "integer >= 1 or null"),
    (lambda: GSPORunConfig(use_vllm=True, engine_url="http://127.0.0.1:8001/v1"), "GSPORunConfig.engine_url=",
     "keep one: engine_url .* or use_vllm"),
    (lambda: GSPORunConfig(vllm_server_base_url="http://localhost:8000"), "GSPORunConfig.vllm_server_base_url=",
     "only with use_vllm=True"),
    (lambda: GSPORunConfig(engine_model="smollm2"), "GSPORunConfig.engine_model='smollm2'", "needs engine_url"),
    (lambda: GSPORunConfig(engine_url="localhost:8001"), "GSPORunConfig.engine_url='localhost:8001'",
     "http:// or https:// URL"),
    (lambda: GSPORunConfig(importance_sampling="tis"), "GSPORunConfig.importance_sampling='tis'",
     "one of none, truncated"),
    (lambda: GSPORunConfig(train_seeds=[]), "GSPORunConfig.train_seeds=[]", r"integers >= 0 \(at least one\)"),
    (lambda: GSPORunConfig(logit_chunk_tokens=0), "GSPORunConfig.logit_chunk_tokens=0", "integer >= 1 or null"),
    (lambda: SFTRunConfig(logit_chunk_tokens=-1), "SFTRunConfig.logit_chunk_tokens=-1", "integer >= 1 or null"),
    (lambda: LoraSettings(r=0), "LoraSettings.r=0", "integer >= 1"),
    (lambda: LoraSettings(dropout=1.0), "LoraSettings.dropout=1.0", ">= 0 and < 1"),
    (lambda: SFTRunConfig(min_score=1.5), "SFTRunConfig.min_score=1.5", ">= 0 and <= 1"),
    (lambda: SFTRunConfig(harnesses=["dtc", "ptc", "dtc"]), "SFTRunConfig.harnesses=", f"distinct values from {HARNESSES}"),
    (lambda: SFTRunConfig(lr_scheduler_type="cosin"), "SFTRunConfig.lr_scheduler_type='cosin'",
     "transformers' schedulers: linear, cosine"),
    (lambda: SFTRunConfig(max_steps=0), "SFTRunConfig.max_steps=0", "integer >= 1 or -1"),
    (lambda: SFTRunConfig(learning_rate="1e-5"), "SFTRunConfig.learning_rate='1e-5'", "number > 0.*write it with a dot"),
    (lambda: SFTRunConfig(tiny=[96]), "SFTRunConfig.tiny=[96]", "mapping of TinyModelConfig fields"),
    (lambda: TinyModelConfig(num_attention_heads=4, num_key_value_heads=3), "TinyModelConfig.num_key_value_heads=3",
     "must divide num_attention_heads=4"),
    (lambda: EvalConfig(temperature=-0.5), "EvalConfig.temperature=-0.5", "number >= 0"),
    (lambda: EvalConfig(harnesses=[]), "EvalConfig.harnesses=[]", rf"values from {HARNESSES} \(at least one\)"),
    (lambda: EvalConfig(instances=[["retail/restock_orders", "v7", 1000]]), "EvalConfig.instances",
     f"scale one of {SCALES}"),
    (lambda: EvalConfig(engine_url="http://127.0.0.1:8001/v1", vllm_server_base_url="http://localhost:8000"),
     "EvalConfig.vllm_server_base_url=", "keep one"),
    (lambda: EvalConfig(samples=0), "EvalConfig.samples=0", "integer >= 1"),
    (lambda: PipelineConfig(stages=["sft", "rl"]), "PipelineConfig.stages=", "stages are \\['base', 'memorize'"),
    (lambda: PipelineConfig(rl_harnesses=["ptc", "tpc"]), "PipelineConfig.rl_harnesses=", f"values from {HARNESSES}"),
    (lambda: PipelineConfig(eval_harnesses=["dtcc"]), "PipelineConfig.eval_harnesses=", f"values from {HARNESSES}"),
    (lambda: PipelineConfig(sft_max_steps={"dtc": 4}), "PipelineConfig.sft_max_steps=", "not a trained harness"),
    (lambda: PipelineConfig(sampled_stages=["sft", "memorize"]), "PipelineConfig.sampled_stages=",
     r"\['memorize'\] not allowed; must be a list of distinct values from base, sft, gspo, control, rft"),
    (lambda: PipelineConfig(sft_max_steps={"ptc": 0}), "PipelineConfig.sft_max_steps=", "not a step count >= 1"),
    (lambda: PipelineConfig(engine_url="http://127.0.0.1:8001/v1", gspo=GSPORunConfig(use_vllm=True)),
     "PipelineConfig.engine_url=", "gspo.use_vllm=True name two generators"),
    (lambda: SplitConfig(scale="v4"), "splits.scale='v4'", f"one of {SCALES}"),
    (lambda: ComparisonSettings(workers=0), "ComparisonSettings.workers=0", "integer >= 1"),
    (lambda: BenchmarkSettings(workers=0), "BenchmarkSettings.workers=0", "integer >= 1"),
    (lambda: DifficultySettings(low=0.5, high=0.2), "DifficultySettings.high=0.2", "must be >= low=0.5"),
    (lambda: ProfileSettings(cross_harness_stages=["rl"]), "ProfileSettings.cross_harness_stages=",
     "values from base, sft, gspo, control"),
    (lambda: ProfileSettings(train_config="configs/nope.yaml"), "ProfileSettings.train_config='configs/nope.yaml'",
     "no such file"),
]


@pytest.mark.parametrize("build, field, allowed", BAD_CONSTRUCTIONS,
                         ids=[re.sub(r"[^\w.]+", "", f)[:40] for _, f, _ in BAD_CONSTRUCTIONS])
def test_a_bad_config_is_refused_naming_the_field_and_the_allowed_values(build, field, allowed):
    with pytest.raises(ConfigError) as caught:
        build()
    message = str(caught.value)
    assert field in message, message
    assert re.search(allowed, message), message


def test_the_issue_example_is_refused():
    """`GSPORunConfig(reward="bianry", harness="ptcc", scales=["v9"])` used to construct and train on R~."""
    with pytest.raises(ConfigError, match=r"GSPORunConfig\.(reward|harness|scales)=.*must be"):
        GSPORunConfig(reward="bianry", harness="ptcc", scales=["v9"])
    for field, value in (("reward", "bianry"), ("harness", "ptcc"), ("scales", ["v9"])):
        with pytest.raises(ConfigError, match=rf"GSPORunConfig\.{field}="):
            GSPORunConfig(**{field: value})


def test_one_error_class_everywhere():
    assert issubclass(ConfigError, ValueError)
    assert issubclass(SplitError, ConfigError) and issubclass(ProfileError, ConfigError)


# YAML files through load_config: (file text, config class, what the message must hold)
BAD_YAML = [
    ("reward: bianry\n", GSPORunConfig, r"GSPORunConfig\.reward='bianry': must be one of binary, dense"),
    ("learning_rate: 1e-5\n", SFTRunConfig, r"SFTRunConfig\.learning_rate='1e-5'.*write it with a dot"),
    ("learning_rte: 1.0e-5\n", SFTRunConfig, r"unknown field\(s\) \['learning_rte'\]; valid fields are"),
    ("gspo: {harness: ptcc}\n", PipelineConfig, r"\.gspo: GSPORunConfig\.harness='ptcc': must be one of dtc, ptc, hybrid"),
    ("eval: {error_mode: detected}\n", PipelineConfig,
     r"\.eval: EvalConfig\.error_mode='detected': must be one of is_error, off, detect"),
    ("sft: {tiny: {num_key_value_heads: 3}}\n", PipelineConfig, r"\.sft\.tiny: TinyModelConfig\.num_key_value_heads=3"),
    ("splits: {scale: v5}\n", PipelineConfig, r"\.splits: splits\.scale='v5': must be one of v0, v1, v2, v3"),
    ("stages: [base, control]\n", PipelineConfig, r"PipelineConfig\.stages=\['base', 'control'\]: .*needs the gspo stage"),
    ("lora: {r: 8, dropout: 2}\n", SFTRunConfig, r"\.lora: LoraSettings\.dropout=2: must be a number >= 0 and < 1"),
    ("gspo: {num_generations: 4, minibatches: 3}\n", PipelineConfig,
     r"GSPORunConfig\.micro_batch_size=1: times minibatches=3 must divide the generation batch of 4"),
]


@pytest.mark.parametrize("text, kind, message", BAD_YAML, ids=[t.split(":")[0] for t, _, _ in BAD_YAML])
def test_a_bad_yaml_config_is_refused_naming_the_file_and_field(tmp_path, text, kind, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as caught:
        load_config(kind, path)
    assert str(path) in str(caught.value)


def _profiles(tmp_path, **settings):
    base = {"description": "test", "tasks": ["tasks/retail/restock_orders"], "train_config": "configs/ci.yaml"}
    path = tmp_path / "profiles.yaml"
    path.write_text(yaml.safe_dump({"base": base, "bad": {"extends": "base", **settings}}))
    return path


BAD_PROFILES = [
    ({"harnesses": ["ptc", "ptcc"]}, r"ProfileSettings\.harnesses=.*from dtc, ptc, hybrid"),
    ({"scales": ["v0", "v9"]}, r"ProfileSettings\.scales=.*from v0, v1, v2, v3"),
    ({"ablation_harness": "pct"}, r"ProfileSettings\.ablation_harness='pct': must be one of dtc, ptc, hybrid"),
    ({"tasks": ["tasks/retail/no_such_task"]}, r"ProfileSettings\.tasks=.*do not exist"),
    ({"difficulty": {"k": 0}}, r"\.difficulty: DifficultySettings\.k=0: must be an integer >= 1"),
    ({"ablation_max_steps": 0}, r"ProfileSettings\.ablation_max_steps=0: must be an integer >= 1 or null"),
    ({"ablations": "yes"}, r"ProfileSettings\.ablations='yes': must be true or false"),
    ({"eval_seed": [100]}, r"unknown field\(s\) \['eval_seed'\]; valid fields are \[.*'eval_seeds'"),
]


@pytest.mark.parametrize("settings, message", BAD_PROFILES, ids=[next(iter(s)) for s, _ in BAD_PROFILES])
def test_a_bad_profile_is_refused_on_load(tmp_path, settings, message):
    path = _profiles(tmp_path, **settings)
    with pytest.raises(ProfileError, match=message) as caught:
        load_profile("bad", run_dir=tmp_path / "run", path=path)
    assert "profile 'bad'" in str(caught.value)
    assert load_profile("base", run_dir=tmp_path / "run", path=path)["train_config"] == "configs/ci.yaml"


def test_a_profile_extending_an_unknown_profile_is_refused(tmp_path):
    path = tmp_path / "profiles.yaml"
    path.write_text(yaml.safe_dump({"child": {"extends": "parent", "description": "x"}}))
    with pytest.raises(ProfileError, match=r"extends: 'parent' names no profile"):
        load_profile("child", run_dir=tmp_path / "run", path=path)


def test_task_ids_are_checked_against_the_pool_by_validate_tasks(repo, tmp_path):
    config = GSPORunConfig(tasks_root=str(repo / "tasks"), task_ids=["retail/restock_orders", "retail/no_such"])
    with pytest.raises(ConfigError, match=r"GSPORunConfig\.task_ids: task id\(s\) \['retail/no_such'\] not found.*"
                                          r"known ids: .*retail/restock_orders"):
        config.validate_tasks()
    SFTRunConfig(tasks_root=str(repo / "tasks"), task_ids=["retail/restock_orders"]).validate_tasks()
    with pytest.raises(ConfigError, match=r"EvalConfig\.instances: task id\(s\) \['x/y'\]"):
        EvalConfig(tasks_root=str(repo / "tasks"), instances=[["x/y", "v0", 1000]]).validate_tasks()
    recipe = PipelineConfig(splits=SplitConfig(held_out_tasks=["hr_payroll/no_such"]))
    recipe = dataclasses.replace(recipe, sft=dataclasses.replace(recipe.sft, tasks_root=str(repo / "tasks")))
    with pytest.raises(ConfigError, match=r"SplitConfig\.held_out_tasks: task id\(s\) \['hr_payroll/no_such'\]"):
        recipe.validate_tasks()
    # a pool folder that is not there: nothing to check against (construction elsewhere is unaffected)
    GSPORunConfig(tasks_root=str(tmp_path / "none"), task_ids=["a/b"]).validate_tasks()


def test_every_field_has_help():
    kinds = [SFTRunConfig, GSPORunConfig, LoraSettings, EvalConfig, PipelineConfig, SplitConfig, TinyModelConfig,
             ProfileSettings, ComparisonSettings, DifficultySettings]
    missing = [f"{kind.__name__}.{f.name}" for kind in kinds for f in dataclasses.fields(kind)
               if not f.metadata.get("help", "").strip()]
    assert not missing


def test_defaults_and_the_scheduler_list_are_valid():
    for kind in (SFTRunConfig, GSPORunConfig, LoraSettings, EvalConfig, PipelineConfig, SplitConfig, TinyModelConfig,
                 ComparisonSettings, DifficultySettings, ProfileSettings):
        kind()
    from transformers.trainer_utils import SchedulerType   # the fast path's list is transformers' own names

    assert set(LR_SCHEDULERS) <= {s.value for s in SchedulerType}
    assert SFTRunConfig(lr_scheduler_type="greedy").lr_scheduler_type == "greedy"   # looked up in transformers


def test_every_shipped_profile_loads(tmp_path):
    from progagent_lib.analysis.profiles import DEFAULT_PROFILES

    for name in yaml.safe_load(DEFAULT_PROFILES.read_text()):
        profile = load_profile(name, run_dir=tmp_path / name, path=DEFAULT_PROFILES)
        load_config(PipelineConfig, profile.resolve(profile["train_config"]))


def test_bf16_on_a_cpu_without_bf16_instructions_is_refused_before_any_compute(tmp_path):
    from progagent_lib.train.precision import check_bf16, cpu_bf16_flags

    plain = tmp_path / "cpuinfo"
    plain.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f\n")
    with_bf16 = tmp_path / "cpuinfo-bf16"
    with_bf16.write_text("processor\t: 0\nflags\t\t: fpu avx512f avx512_bf16 amx_bf16\n")
    assert cpu_bf16_flags(plain) == [] and cpu_bf16_flags(with_bf16) == ["avx512_bf16", "amx_bf16"]
    with pytest.raises(ConfigError, match=r"SFTRunConfig.bf16=True: this CPU has no bf16 instructions"):
        check_bf16(True, "SFTRunConfig.bf16", cuda=False, cpuinfo=plain)
    assert check_bf16(True, "x", cuda=False, cpuinfo=with_bf16) is True
    assert check_bf16(True, "x", cuda=True, cpuinfo=plain) is True
    assert check_bf16(False, "x", cuda=False, cpuinfo=plain) is False
