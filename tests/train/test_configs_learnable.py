"""Every shipped config can be learned from: the teacher's own turns, replayed through the training rollout under
the config's limits (GSPO and evaluation) and its SFT max_length, reach R = 1 for each harness the config trains.

Token counts are the pretrained small model's (SmolLM2 with TRL's Qwen3 template), the tokenizer of the CPU
profiles; for gpu-paper the real checkpoint (Qwen3-8B) cannot be downloaded here, so the small model's tokenizer
stands in for it (both are byte-level BPE tokenizers of similar vocabularies; Qwen3's is larger, so its counts are
lower). A config the teacher cannot finish is refused before any compute, naming the limit and the length it needs.
"""
from pathlib import Path

import pytest

from progagent_lib.harness.chat_format import ChatFormat
from progagent_lib.config import load_config
from progagent_lib.train.feasibility import NotLearnableError, check_learnable, teacher_needs
from progagent_lib.train.common import limits_of, select_tasks
from progagent_lib.train.pipeline import PipelineConfig

REPO = Path(__file__).resolve().parents[2]
PIPELINE_CONFIGS = ["cpu-smoke", "cpu-study", "cpu-dtc", "cpu-cross", "cpu-fast", "ci", "gpu-paper"]


@pytest.fixture(scope="module")
def chat():
    from transformers import AutoTokenizer

    from progagent_lib.generation.sources import resolve_model_source

    return ChatFormat(AutoTokenizer.from_pretrained(resolve_model_source("smollm2")), model_name="smollm2")


@pytest.mark.slow
@pytest.mark.parametrize("harness", ["dtc", "ptc", "hybrid"])
@pytest.mark.parametrize("name", PIPELINE_CONFIGS)
def test_the_teacher_finishes_under_every_shipped_config(chat, name, harness, tmp_path):
    """Every training task under the GSPO and evaluation limits and SFT's max_length, every held-out task under the
    evaluation limits (gpu-paper: its first four tasks here; its run checks the whole pool before any compute)."""
    from progagent_lib.train.pipeline import Recipe

    config = load_config(PipelineConfig, REPO / "configs" / f"{name}.yaml")
    if harness not in config.rl_harnesses + config.eval_harnesses:
        pytest.skip(f"{name} neither trains nor evaluates {harness}")
    if config.model == "tiny":  # a from-scratch model: its own tokenizer, trained on the pool
        from progagent_lib.generation.tiny_model import build_tiny_model

        chat = ChatFormat(build_tiny_model(REPO / "tasks", config.sft.tiny)[1], model_name="tiny")
    recipe = Recipe(config, tmp_path)
    training = recipe.training_tasks()[: 4 if name == "gpu-paper" else None]
    trained = {t.id for t in recipe.training_tasks()}
    held_out_ids = sorted({i.task_id for i in recipe.instances()} - trained)
    held_out = select_tasks(REPO / "tasks", held_out_ids) if held_out_ids else []   # [] would select every task
    assert training, name
    for harness in [harness]:
        for task in training + held_out:
            # a harness only evaluated under is held to the evaluation limits
            budgets = (limits_of(config.gspo), limits_of(config.eval)) \
                if task.id in trained and harness in config.rl_harnesses else (limits_of(config.eval),)
            for limits in budgets:
                needs, replay = teacher_needs(task, harness, chat, scale=config.gspo.scales[0], limits=limits)
                assert replay.reward == 1.0 and replay.end_reason == "claim_done", (name, harness, task.id, replay.end_reason)
            if task.id in trained and harness in config.rl_harnesses:
                assert config.sft.max_length is None or needs.sft_tokens <= config.sft.max_length, (name, harness, task.id)


def test_a_config_the_teacher_cannot_finish_is_refused_naming_the_limit(chat):
    from progagent_lib.harness import Limits

    task = select_tasks(REPO / "tasks", ["retail/restock_orders"])
    tight = Limits(max_turns=2, max_new_tokens=192, max_context_tokens=1536, max_tool_calls=100)
    with pytest.raises(NotLearnableError) as refused:
        check_learnable(task, ["ptc"], chat, tight, max_length=1024, model_positions=8192)
    message = str(refused.value)
    for limit in ("max_turns=2", "max_new_tokens=192", "max_context_tokens=1536", "sft.max_length=1024"):
        assert limit in message
    assert "needs 4 turns" in message


def test_a_context_budget_beyond_the_models_positions_is_refused(chat):
    from progagent_lib.harness import Limits

    with pytest.raises(NotLearnableError, match="max_context_tokens=65536 exceeds the model's 8192 positions"):
        check_learnable([], ["ptc"], chat, Limits(max_context_tokens=65536), max_length=None, model_positions=8192)


def test_train_pipeline_refuses_before_any_compute(tmp_path, monkeypatch, capsys):
    from progagent_lib.cli import main

    monkeypatch.chdir(REPO)
    config = tmp_path / "tight.yaml"
    config.write_text(
        f"output_dir: {tmp_path / 'run'}\nmodel: smollm2\nrl_harnesses: [ptc]\n"
        "sft: {task_ids: [retail/restock_orders], max_length: 8192}\n"
        "gspo: {task_ids: [retail/restock_orders], scales: [v0], max_turns: 4, max_new_tokens: 192, max_context_tokens: 8192}\n"
        "eval: {task_ids: [retail/restock_orders], max_new_tokens: 2048}\n")
    with pytest.raises(SystemExit, match=r"(?s)refused.*max_new_tokens=192: the ptc teacher on retail/restock_orders"):
        main(["train", "pipeline", "--config", str(config)])
    assert not (tmp_path / "run" / "sft-ptc").exists() and (tmp_path / "run" / "teacher_needs.json").exists()
