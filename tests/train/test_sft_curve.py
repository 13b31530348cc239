"""The SFT curve's pieces that need no training: which checkpoints it evaluates and its table. The whole command
(`progagent train sft-curve`) trains and samples a model; it runs outside the suite (docs/results.md gives its run)."""

from progagent_lib.train.sft_curve import checkpoints, format_curve


def test_checkpoints_are_the_kept_steps_then_the_final_model(tmp_path):
    for step in (8, 4, 12):
        (tmp_path / f"checkpoint-{step}").mkdir()
        (tmp_path / f"checkpoint-{step}" / "config.json").write_text("{}")
    (tmp_path / "checkpoint-16").mkdir()  # a checkpoint without weights (an interrupted save) is not a point
    (tmp_path / "checkpoint-x").mkdir()
    assert checkpoints(tmp_path, 12) == [(4, tmp_path / "checkpoint-4"), (8, tmp_path / "checkpoint-8"),
                                         (12, tmp_path / "final")]


def test_the_table_reads_each_point_with_its_interval():
    table = format_curve([{"step": 4, "loss": 0.5, "mean_token_accuracy": 0.9, "instances": 20, "samples": 2,
                           "passed": 10, "episodes": 40, "pass_rate": 0.25, "pass_low": 0.11, "pass_high": 0.47},
                          {"step": 8, "instances": 20, "samples": 2, "passed": 0, "episodes": 40, "pass_rate": 0.0,
                           "pass_low": 0.0, "pass_high": 0.16}])
    assert "| 4 | 0.5000 | 0.900 | 20 x 2 | 10/40 | 0.25 (0.11-0.47) |" in table
    assert "| 8 | - | - | 20 x 2 | 0/40 | 0.00 (0.00-0.16) |" in table


def test_step_metrics_read_the_sft_log(tmp_path):
    from progagent_lib.train.sft_curve import step_metrics

    (tmp_path / "log_history.jsonl").write_text(
        '{"loss": 2.0, "mean_token_accuracy": 0.6, "step": 1}\n{"loss": 0.5, "step": 2}\n'
        '{"train_runtime": 9.0, "step": 2}\n')
    assert step_metrics(tmp_path) == {1: {"loss": 2.0, "mean_token_accuracy": 0.6}, 2: {"loss": 0.5}}
    assert step_metrics(tmp_path / "missing") == {}
