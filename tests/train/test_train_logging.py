"""What a training run shows: its logs in a tracker (`report_to`, TensorBoard offline here) and a progress bar.

One real SFT run through TRL with the arguments `sft_args` builds: a tiny random Qwen3 model made from a config and a
word-level tokenizer (no training of a tokenizer, no episode), four tokenised rows, three optimizer steps.
"""
import contextlib
import importlib.util
import io

import pytest

from progagent_lib.config import ConfigError
from progagent_lib.train.gspo import GSPORunConfig, grpo_args
from progagent_lib.train.monitoring import TRACKER_PACKAGES, training_progress
from progagent_lib.train.sft import SFTRunConfig, sft_args

STEPS = 3


def tiny_model_and_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    vocab = {"<pad>": 0, "<eos>": 1, **{f"w{i}": i + 2 for i in range(30)}}
    words = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    words.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=words, pad_token="<pad>", eos_token="<eos>")
    config = Qwen3Config(vocab_size=len(vocab), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=8, max_position_embeddings=64)
    return Qwen3ForCausalLM(config), tokenizer


@pytest.fixture(scope="module")
def sft_run(tmp_path_factory):
    """(output folder, what the run wrote on stderr) of a tiny SFT run with report_to=tensorboard."""
    from datasets import Dataset
    from trl import SFTTrainer

    output_dir = tmp_path_factory.mktemp("sft")
    model, tokenizer = tiny_model_and_tokenizer()
    rows = [{"input_ids": [2 + (i + k) % 30 for k in range(12)], "assistant_masks": [0] * 4 + [1] * 8}
            for i in range(4)]
    config = SFTRunConfig(output_dir=str(output_dir), max_steps=STEPS, learning_rate=1e-2, report_to="tensorboard")
    trainer = SFTTrainer(model=model, args=sft_args(config), train_dataset=Dataset.from_list(rows),
                         processing_class=tokenizer, callbacks=[training_progress("SFT")])
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):   # the bar is drawn on sys.stderr, as in a terminal
        trainer.train()
    return output_dir, stderr.getvalue()


def test_tensorboard_event_files_hold_the_loss_of_every_step(sft_run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    output_dir, _ = sft_run
    event_files = list(output_dir.rglob("events.out.tfevents.*"))
    assert event_files, f"no TensorBoard event file under {output_dir}"
    assert all(output_dir in f.parents for f in event_files)   # logging_dir under the run's own folder
    events = EventAccumulator(str(event_files[0].parent))
    events.Reload()
    assert "train/loss" in events.Tags()["scalars"], events.Tags()["scalars"]
    losses = events.Scalars("train/loss")
    assert [e.step for e in losses] == list(range(1, STEPS + 1))
    assert all(e.value > 0 for e in losses)


def test_the_progress_bar_counts_the_optimizer_steps_and_shows_the_loss(sft_run):
    _, stderr = sft_run
    last = stderr.replace("\r", "\n").strip().splitlines()[-1]
    assert last.startswith("SFT: 100%") and f"{STEPS}/{STEPS}" in last and "loss=" in last, stderr[-500:]


def test_report_to_reaches_the_gspo_trainer_and_defaults_to_none(tmp_path):
    assert grpo_args(GSPORunConfig(output_dir=str(tmp_path), report_to="tensorboard")).report_to == ["tensorboard"]
    assert grpo_args(GSPORunConfig(output_dir=str(tmp_path))).report_to == []   # transformers' word for "none"
    assert sft_args(SFTRunConfig(output_dir=str(tmp_path))).report_to == []


@pytest.mark.parametrize("kind", [SFTRunConfig, GSPORunConfig])
def test_an_unknown_tracker_is_refused_with_the_choices(kind):
    with pytest.raises(ConfigError, match=r"report_to='tensorbord': must be one of none, tensorboard, trackio, wandb"):
        kind(report_to="tensorbord")


@pytest.mark.parametrize("tracker", sorted(TRACKER_PACKAGES))
def test_a_tracker_that_is_not_installed_is_named_with_what_to_install(tracker):
    packages = TRACKER_PACKAGES[tracker]
    if any(importlib.util.find_spec(p) for p in packages):
        assert SFTRunConfig(report_to=tracker).report_to == tracker
    else:
        with pytest.raises(ConfigError, match=rf"report_to='{tracker}': needs the {packages[0]} package, which is not "
                                              rf"installed: `pip install {packages[0]}`"):
            SFTRunConfig(report_to=tracker)
