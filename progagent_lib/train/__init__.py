"""Training: cold-start SFT on teacher trajectories and multi-turn GSPO through TRL (DESIGN.md section 6).

    progagent train pipeline --config configs/cpu-smoke.yaml     # SFT -> GSPO (dtc, ptc) -> held-out pass rates
    progagent train sft|gspo|eval --config configs/<preset>.yaml

Heavy imports (torch, trl) happen inside the functions, so `import progagent_lib.train` stays cheap. Models and
generators live a floor below, in `progagent_lib.generation`; config validation on the ground floor (`progagent_lib.config`).
"""

from .evaluate import EvalConfig, evaluate, pass_rate_table
from .gspo import DynamicsLog, GSPORunConfig, LoraSettings, make_rollout_func, run_gspo
from .pipeline import PipelineConfig, run_pipeline
from .rollout import EpisodeTokens, RolloutSpec, run_token_episode, run_token_episodes
from .sft import SFTRunConfig, build_sft_dataset, run_sft, select_sft_trajectories

__all__ = [
    "EvalConfig",
    "evaluate",
    "pass_rate_table",
    "DynamicsLog",
    "GSPORunConfig",
    "LoraSettings",
    "make_rollout_func",
    "run_gspo",
    "PipelineConfig",
    "run_pipeline",
    "EpisodeTokens",
    "RolloutSpec",
    "run_token_episode",
    "run_token_episodes",
    "SFTRunConfig",
    "build_sft_dataset",
    "run_sft",
    "select_sft_trajectories",
]
