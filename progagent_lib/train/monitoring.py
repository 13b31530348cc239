"""What a training run shows while it runs: a progress bar over its optimizer steps, and the trackers its logs go to.

The bar is ours, not transformers' (`disable_tqdm=True` in `sft_args` and `grpo_args`): transformers draws an HTML
table in a notebook and writes every log dict through its bar, where `TrainingProgress` is one tqdm.auto bar (a widget
in a notebook, a line on stderr in a terminal) with the last loss and reward beside it. With transformers' bar off, its
PrinterCallback prints one log dict per step on stdout, which the notebooks capture to a file
(`analysis.training_figures.logs_to_file`). `TQDM_DISABLE=1` turns every bar off.

Trackers (`report_to` of SFTRunConfig and GSPORunConfig) are transformers' own integrations. TensorBoard writes event
files under `<output_dir>/runs/` (`tensorboard --logdir <output_dir>`, offline); trackio logs locally unless told of a
Space; wandb needs an account, or `WANDB_MODE=offline`.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from ..config import config_error

REPORT_TO = ("none", "tensorboard", "trackio", "wandb")
# The package each tracker needs (any one of them), and what to install when it is missing.
TRACKER_PACKAGES = {"tensorboard": ("tensorboard", "tensorboardX"), "trackio": ("trackio",), "wandb": ("wandb",)}
# Shown beside the bar when the step's log has them: SFT logs loss; GSPO logs loss and its mean reward.
SHOWN_LOGS = ("loss", "reward")


def check_tracker_installed(config: Any, name: str = "report_to") -> None:
    """The tracker `config.<name>` names can be imported here; else a one-line ConfigError saying what to install.
    Checked when the config is built, so that a run with a missing tracker stops before any compute."""
    tracker = getattr(config, name)
    packages = TRACKER_PACKAGES.get(tracker, ())
    if packages and not any(importlib.util.find_spec(p) for p in packages):
        raise config_error(
            config,
            name,
            f"needs the {packages[0]} package, which is not installed: "
            f"`pip install {packages[0]}`, or set {name}: none",
        )


def training_progress(desc: str) -> Any:
    """A TrainerCallback drawing one progress bar over the run's optimizer steps, named `desc`."""
    from transformers import TrainerCallback

    class TrainingProgress(TrainerCallback):
        """On the main process only; a resumed run's bar starts at the step it resumed from."""

        bar = None

        def on_train_begin(self, args, state, control, **kwargs):
            from tqdm.auto import tqdm

            if state.is_world_process_zero:
                self.bar = tqdm(total=state.max_steps, initial=state.global_step, desc=desc, unit="step")

        def on_step_end(self, args, state, control, **kwargs):
            if self.bar is not None:
                self.bar.update(state.global_step - self.bar.n)

        def on_log(self, args, state, control, logs=None, **kwargs):
            shown = {k: f"{logs[k]:.4g}" for k in SHOWN_LOGS if isinstance((logs or {}).get(k), (int, float))}
            if self.bar is not None and shown:
                self.bar.set_postfix(shown)

        def on_train_end(self, args, state, control, **kwargs):
            if self.bar is not None:
                self.bar.close()
                self.bar = None

    return TrainingProgress()
