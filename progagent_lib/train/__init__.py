"""Training: cold-start SFT on teacher trajectories and multi-turn GSPO through TRL (DESIGN.md section 6).

    progagent train pipeline --config configs/cpu-smoke.yaml     # SFT -> GSPO (dtc, ptc) -> held-out pass rates
    progagent train sft|gspo|eval --config configs/<preset>.yaml

Heavy imports (torch, trl) happen inside the functions, so `import progagent_lib.train` stays cheap.
"""
from .config import ConfigError, load_config
from .evaluate import EvalConfig, evaluate, pass_rate_table
from .gspo import DynamicsLog, GSPORunConfig, LoraSettings, make_rollout_func, run_gspo
from .models import TinyModelConfig, build_tiny_model, load_model, pool_corpus, save_model, train_tokenizer
from .pipeline import PipelineConfig, run_pipeline
from .rollout import EpisodeTokens, HFTurnGenerator, ReplayTurns, RolloutSpec, run_token_episode, run_token_episodes
from .sft import SFTRunConfig, build_sft_dataset, run_sft, select_sft_trajectories

__all__ = [
    "ConfigError", "load_config", "EvalConfig", "evaluate", "pass_rate_table", "DynamicsLog", "GSPORunConfig",
    "LoraSettings", "make_rollout_func", "run_gspo", "TinyModelConfig", "build_tiny_model", "load_model", "pool_corpus",
    "save_model", "train_tokenizer", "PipelineConfig", "run_pipeline", "EpisodeTokens", "HFTurnGenerator", "ReplayTurns",
    "RolloutSpec", "run_token_episode", "run_token_episodes", "SFTRunConfig", "build_sft_dataset", "run_sft",
    "select_sft_trajectories",
]
