"""Training: cold-start SFT on teacher trajectories and multi-turn GSPO through TRL (DESIGN.md section 6)."""
from .models import TinyModelConfig, build_tiny_model, load_model, pool_corpus, save_model, train_tokenizer

__all__ = ["TinyModelConfig", "build_tiny_model", "load_model", "pool_corpus", "save_model", "train_tokenizer"]
