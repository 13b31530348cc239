"""How much of the LM head's output exists at once while training: `logit_chunk_tokens` (SFT and GSPO configs).

Neither trainer builds the (tokens x vocabulary) logits of an episode. TRL 1.16 patches the model with a fused LM head
(`trl.trainer.utils.add_fused_lm_head`, called by SFTTrainer and GRPOTrainer when they are built): SFT's loss
(`SFTTrainer.compute_loss`) and GSPO's log-probs (`GRPOTrainer._get_per_token_logps_and_entropies`, which
`GSPOTrainer._compute_loss` calls, and TRL for a batch's old log-probs) run the backbone, then project its last hidden states through
the LM head one tile at a time (`trl.kernels.chunked_logprob`: TOKEN_CHUNK_SIZE positions x 32,768 vocabulary
entries), fold each tile into a running log-sum-exp (the target's log-prob, the entropy), and recompute the tile in
the backward pass instead of storing it: past one tile, the head's memory grows only by a few numbers per position.

On a GPU a Triton kernel folds a tile in place. On a CPU the fold is torch operations, each holding a tile-sized
temporary (several at once, forward and backward): at TRL's 4,096 positions a tile is 0.5 GB in fp32. In one
measurement of the head alone (forward and backward of TRL's kernel, SmolLM2's width and vocabulary of 49,152, 2,048
positions, fp32) it took 2.7 GB over its inputs with TRL's tile and 0.9 GB with 512-position tiles.
`logit_chunk_tokens` sets the positions per tile for a run; None keeps TRL's.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

TRL_TILE_MODULE = "trl.kernels.chunked_logprob"
TRL_TILE_NAME = "TOKEN_CHUNK_SIZE"


def trl_tile_tokens() -> int:
    """The positions per tile of TRL's fused LM head now (4,096 unless `lm_head_tile` is in effect)."""
    return getattr(_tile_module(), TRL_TILE_NAME)


@contextmanager
def lm_head_tile(tokens: int | None) -> Iterator[None]:
    """Within the block, TRL's fused LM head projects `tokens` positions per tile (None: TRL's own tile, unchanged).

    The tile size is a module constant of TRL's kernel, read at each forward and backward call: the whole training
    run (forward passes and their backward passes) must sit inside the block. It is restored on leaving.
    """
    if tokens is None:
        yield
        return
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
        raise ValueError(f"logit_chunk_tokens={tokens!r}: must be an integer >= 1 (positions per LM-head tile) or None")
    module = _tile_module()
    previous = getattr(module, TRL_TILE_NAME)
    setattr(module, TRL_TILE_NAME, tokens)
    try:
        yield
    finally:
        setattr(module, TRL_TILE_NAME, previous)


def _tile_module():
    import importlib

    module = importlib.import_module(TRL_TILE_MODULE)
    if not isinstance(getattr(module, TRL_TILE_NAME, None), int):
        import trl

        raise RuntimeError(f"TRL {trl.__version__} has no {TRL_TILE_MODULE}.{TRL_TILE_NAME} (TRL 1.16's positions per "
                           "tile of its fused LM head): logit_chunk_tokens cannot be applied; set it to null")
    return module


__all__ = ["lm_head_tile", "trl_tile_tokens"]
