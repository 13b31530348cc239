"""Training logs kept out of the notebook and read back as figures, whatever fields the trainers log."""
import json

import polars as pl
import pytest

from progagent_lib.analysis import training_figures as tf
from progagent_lib.analysis.style import NoFigureData, save_chart

# What the HF trainer's PrinterCallback prints with disable_tqdm=True: one dict per step, floats as strings.
PRINTED = """\
{'loss': '7.622', 'grad_norm': '0.8586', 'learning_rate': '0.001', 'mean_token_accuracy': '0.01418', 'epoch': '0.5'}
some other line a library printed
{'loss': '7.1', 'grad_norm': 'nan', 'learning_rate': '0.0005', 'epoch': '1', 'new_field': 'text'}
{'train_runtime': '5.455', 'train_loss': '7.36', 'epoch': '1'}
"""


def test_printed_logs_go_to_the_file_and_read_back_as_steps(tmp_path, capsys):
    path = tmp_path / "sft" / tf.TRAINER_LOG
    with tf.logs_to_file(path):
        print(PRINTED, end="")
    assert capsys.readouterr().out == ""  # nothing reached the notebook's output
    log = tf.read_trainer_log(path.parent)
    assert log["step"].to_list() == [1, 2]  # the closing summary is not a step
    assert log["loss"].to_list() == [7.622, 7.1]
    assert log["grad_norm"].to_list() == [0.8586, None]  # nan is a missing value, not an error
    assert "new_field" not in log.columns  # non-numeric fields are dropped


def test_the_fuller_log_wins_and_steps_come_from_the_trainer_state(tmp_path):
    (tmp_path / tf.TRAINER_LOG).write_text("{'loss': '1.0'}\n")
    checkpoint = tmp_path / "checkpoint-3"
    checkpoint.mkdir()
    history = [{"loss": 3.0, "reward": 0.0, "step": 1}, {"loss": 2.0, "step": 2}, {"loss": 1.5, "reward": 1.0, "step": 3}]
    (checkpoint / "trainer_state.json").write_text(json.dumps({"log_history": history, "global_step": 3}))
    log = tf.read_trainer_log(tmp_path)
    assert log["step"].to_list() == [1, 2, 3] and log["reward"].to_list() == [0.0, None, 1.0]


def test_dynamics_and_trainer_logs_join_per_harness_and_step(tmp_path):
    for harness, rewards in {"dtc": [0.0, 0.5], "ptc": [0.5, 1.0]}.items():
        folder = tmp_path / f"gspo-{harness}"
        folder.mkdir()
        lines = [{"step": i + 1, "mean_reward": r, "tool_output_tokens_per_episode": 100.0 * (i + 1),
                  **({"a_future_field": 1.0} if harness == "ptc" else {})} for i, r in enumerate(rewards)]
        (folder / "dynamics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
        (folder / tf.TRAINER_LOG).write_text("{'loss': '0.5', 'reward': '0.25'}\n{'loss': '0.25', 'reward': '0.75'}\n")
    folders = {h: tmp_path / f"gspo-{h}" for h in ("dtc", "ptc", "hybrid")}  # hybrid never ran: no rows
    steps = tf.gspo_step_table(tf.read_dynamics(folders), {h: tf.read_trainer_log(f) for h, f in folders.items()})
    assert steps.sort("harness", "step").select("harness", "step", "mean_reward", "loss", "trainer_reward").rows() == [
        ("dtc", 1, 0.0, 0.5, 0.25), ("dtc", 2, 0.5, 0.25, 0.75), ("ptc", 1, 0.5, 0.5, 0.25), ("ptc", 2, 1.0, 0.25, 0.75)]
    assert steps.filter(pl.col("harness") == "dtc")["a_future_field"].null_count() == 2

    spec = tf.gspo_training(steps).to_dict()
    titles = [chart["title"] for row in spec["vconcat"] for chart in row["hconcat"]]
    assert titles == ["GSPO loss", "Pass rate of rollouts", "Reward optimised", "Tool output entering context"]
    png, svg = save_chart(tf.gspo_training(steps), "gspo", tmp_path / "figures")
    assert png.stat().st_size > 1000 and svg.read_text().startswith("<svg")


def test_no_logs_draw_no_figure(tmp_path):
    """A run that logged no step gets no figure (once a note saying so was saved and committed as a result)."""
    empty = tf.read_trainer_log(tmp_path / "never-trained")
    assert empty.height == 0
    with pytest.raises(NoFigureData, match="no logged steps with loss"):
        tf.sft_training(empty)
