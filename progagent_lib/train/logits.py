"""How the LM head runs while training: `logit_chunk_tokens` (SFT and GSPO configs) and, on a CPU, the head itself.

Neither trainer builds the (tokens x vocabulary) logits of an episode. TRL 1.16 patches the model with a fused LM head
(`trl.trainer.utils.add_fused_lm_head`, called by SFTTrainer and GRPOTrainer when they are built): SFT's loss
(`SFTTrainer.compute_loss`) and GSPO's log-probs (`GSPOTrainer._scored_logps_and_entropies`, for the loss and a
batch's old log-probs, the model's tokens labelled) run the backbone, then project its last hidden
states through the LM head one tile of positions at a time, keep a few numbers per position (the target's log-prob,
the entropy) and recompute the tile in the backward pass instead of storing it: past one tile, the head's memory
grows only by a few numbers per position. `logit_chunk_tokens` sets the positions per tile; None keeps TRL's 4,096.

On a GPU TRL's Triton kernel folds each tile in place. On a CPU TRL folds it with torch operations in a form made for
the GPU kernel, and in one measurement (SmolLM2's head, 2,048 positions, bf16 autocast, 1,024-position tiles, forward
and backward; `bench/train_memory.py` measures whole steps) it took 6.2 s where transformers' full logits took 1.5 s:
- it scores every position, those without a label (a prompt, a tool's output) included, so that the tile shapes
  stay fixed for compilers (a concern of other devices);
- it folds each 32,768-wide vocabulary slice with an online log-sum-exp: a dozen passes over the tile;
- its backward upcasts the bf16 tile and weights to fp32 for two fp32 matrix products per tile (CPU torch has no
  bf16 x bf16 -> fp32 product), about 5x the time of a bf16 product on this CPU.

So within `lm_head_tile`, a head on the CPU runs `TiledLogProbs` instead, with the same inputs and outputs: only the
labelled positions (TRL's own path on Triton devices), each tile over the whole vocabulary with `torch.log_softmax`
in fp32, its gradient products in the autocast dtype (bf16: each tile's product rounded to bf16 once, as an
autocast linear layer's backward does, and summed over tiles in fp32). Other devices keep TRL's kernel.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

import torch

TRL_TILE_MODULE = "trl.kernels.chunked_logprob"
TRL_TILE_NAME = "TOKEN_CHUNK_SIZE"
TRL_HEAD_MODULE = "trl.trainer.utils"  # add_fused_lm_head's module: the kernel and the compact switch
TRL_HEAD_NAMES = ("_ChunkedLogProbFunction", "_use_triton")
OUTPUTS = ("entropy", "log_sum_sq_probs", "mean_logits", "is_top1")  # TRL's optional per-token outputs


def trl_tile_tokens() -> int:
    """The positions per tile of the fused LM head now (TRL's 4,096 unless `lm_head_tile` is in effect)."""
    return getattr(_tile_module(), TRL_TILE_NAME)


@contextmanager
def lm_head_tile(tokens: int | None) -> Iterator[None]:
    """Within the block, the fused LM head projects `tokens` positions per tile (None: TRL's own tile) and, on a CPU,
    runs `TiledLogProbs` over the labelled positions only (see the module's text).

    The tile size is a module constant of TRL's kernel, read at each forward and backward call: the whole training
    run (forward passes and their backward passes) must sit inside the block. Everything is restored on leaving.
    """
    if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1):
        raise ValueError(f"logit_chunk_tokens={tokens!r}: must be an integer >= 1 (positions per LM-head tile) or None")
    module, head = _tile_module(), _head_module()
    saved = {name: getattr(head, name) for name in TRL_HEAD_NAMES}
    previous = getattr(module, TRL_TILE_NAME)
    trl_kernel, trl_use_triton = saved["_ChunkedLogProbFunction"], saved["_use_triton"]

    class LMHead:  # what add_fused_lm_head calls: ours on a CPU, TRL's elsewhere
        @staticmethod
        def apply(hidden, *args):
            return (TiledLogProbs if hidden.device.type == "cpu" else trl_kernel).apply(hidden, *args)

    if tokens is not None:
        setattr(module, TRL_TILE_NAME, tokens)
    head._ChunkedLogProbFunction = LMHead
    head._use_triton = lambda device: device.type == "cpu" or trl_use_triton(device)  # compact: labelled positions
    try:
        yield
    finally:
        setattr(module, TRL_TILE_NAME, previous)
        for name, value in saved.items():
            setattr(head, name, value)


def _tile_module():
    return _trl_module(
        TRL_TILE_MODULE,
        [TRL_TILE_NAME],
        lambda value: isinstance(value, int),
        "TRL 1.16's positions per tile of its fused LM head",
        "logit_chunk_tokens cannot be applied; set it to null",
    )


def _head_module():
    return _trl_module(
        TRL_HEAD_MODULE, TRL_HEAD_NAMES, callable, "TRL 1.16's fused LM head", "the CPU LM head cannot be installed"
    )


def _trl_module(path: str, names, valid, what: str, consequence: str):
    """TRL's module `path`, checked to have `names` as this code expects (`valid`); else which are missing."""
    import importlib

    module = importlib.import_module(path)
    missing = [name for name in names if not valid(getattr(module, name, None))]
    if missing:
        import trl

        raise RuntimeError(
            f"TRL {trl.__version__} has no {', '.join(f'{path}.{name}' for name in missing)} ({what}): {consequence}"
        )
    return module


# --- the CPU head ---------------------------------------------------------------------------------------------------
# Every tile-sized array is allocated once per call and reused: on this CPU a fresh 200 MB array costs more in page
# faults (~70 ms) than the pass that fills it (~5-20 ms).
class _Tiles:
    """A call's tile buffers: the projection in the compute dtype, the fp32 logits, and one fp32 work array."""

    def __init__(self, rows: int, vocab: int, dtype):
        self.product = torch.empty((rows, vocab), dtype=dtype) if dtype != torch.float32 else None
        self.logits = torch.empty((rows, vocab), dtype=torch.float32)
        self.work = torch.empty((rows, vocab), dtype=torch.float32)

    def logits_of(self, hidden, weight, bias, spec: dict):
        """The tile's transformed logits in fp32 (scale, soft cap, temperature as TRL's kernel), and the cap's tanh."""
        n = hidden.shape[0]
        z = self.logits[:n]
        if self.product is None:
            torch.mm(hidden, weight.t(), out=z)
        else:
            torch.mm(hidden, weight.t(), out=self.product[:n])
            z.copy_(self.product[:n])
        if bias is not None:
            z += bias
        if spec["logit_scale"] != 1.0:
            z.mul_(spec["logit_scale"])
        tanh = None
        if spec["softcap"] is not None:
            tanh = torch.tanh(z / spec["softcap"])
            torch.mul(tanh, spec["softcap"], out=z)
        if spec["inv_t"] != 1.0:
            z.mul_(spec["inv_t"])
        return z, tanh

    def in_compute_dtype(self, values):
        if self.product is None:
            return values
        return self.product[: values.shape[0]].copy_(values)


def _forward_tile(z, work, targets, outputs: tuple[str, ...]) -> dict:
    """The per-position statistics of one tile of logits `z` (fp32; `z` and `work` are overwritten)."""
    stats = {}
    if "mean_logits" in outputs:
        stats["mean_logits"] = z.mean(-1)
    if "is_top1" in outputs:  # argmax is the first maximum: a tie with an earlier token is not a top-1 prediction
        stats["is_top1"] = z.argmax(-1) == targets
    logp = torch._log_softmax(z, -1, False, out=work)
    stats["log_z"] = z[:, 0] - logp[:, 0]
    stats["log_probs"] = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    if "log_sum_sq_probs" in outputs:
        stats["log_sum_sq_probs"] = torch.logsumexp(logp * 2, -1)
    if "entropy" in outputs:
        stats["entropy"] = -torch.exp(logp, out=z).mul_(logp).sum(-1)
    return stats


def _backward_tile(z, work, tanh, targets, log_z, entropy, grad_logprobs, grad_entropy, spec: dict):
    """d(loss)/d(raw logits) of one tile, in `work`, from its logits `z` (fp32; `z` is overwritten)."""
    grad = torch._softmax(z, -1, False, out=work)  # p
    if grad_entropy is not None:  # d(entropy)/dz_j = -p_j (log p_j + entropy)
        entropy_part = z.sub_((log_z - entropy).unsqueeze(-1)).mul_(grad).mul_(grad_entropy.unsqueeze(-1))
    if grad_logprobs is not None:  # d(log p_target)/dz_j = 1[j = target] - p_j
        grad.mul_(-grad_logprobs.unsqueeze(-1))
        grad.scatter_add_(-1, targets.unsqueeze(-1), grad_logprobs.unsqueeze(-1))
    else:
        grad.zero_()
    if grad_entropy is not None:
        grad.sub_(entropy_part)
    if spec["inv_t"] != 1.0:
        grad.mul_(spec["inv_t"])
    if tanh is not None:
        grad.mul_(1 - tanh * tanh)
    if spec["logit_scale"] != 1.0:
        grad.mul_(spec["logit_scale"])
    return grad


class TiledLogProbs(torch.autograd.Function):
    """TRL's `ChunkedLogProbFunction` for a CPU: the same arguments (`hidden` [N, H], `weight` [V, H], `bias`,
    `targets` [N], temperature, its vocabulary slice (unused: a tile spans the whole vocabulary), soft cap, logit
    scale, the optional outputs asked for) and the same outputs (log-probs, entropy, log-sum of squared
    probabilities, mean logit, is-top-1; None where not asked). Tiles of `trl_tile_tokens()` positions; the
    backward recomputes each tile's logits."""

    @staticmethod
    def forward(
        ctx: Any,
        hidden: torch.Tensor,
        weight: torch.Tensor,
        bias: torch.Tensor | None,
        targets: torch.Tensor,
        temperature: float,
        chunk_size: int | None,
        final_logit_softcapping: float | None = None,
        logit_scale: float = 1.0,
        outputs: tuple[str, ...] = OUTPUTS,
    ) -> tuple[torch.Tensor | None, ...]:
        ctx.set_materialize_grads(False)
        dtype = torch.get_autocast_dtype("cpu") if torch.is_autocast_enabled("cpu") else hidden.dtype
        spec = {"logit_scale": logit_scale, "softcap": final_logit_softcapping, "inv_t": 1.0 / temperature}
        n, tile = hidden.shape[0], trl_tile_tokens()
        w = weight.to(dtype)
        b = None if bias is None else bias.float()  # added to the fp32 logits
        parts: dict[str, list] = {}
        if n:
            tiles = _Tiles(min(n, tile), weight.shape[0], dtype)
            with torch.autocast("cpu", enabled=False):
                for start in range(0, n, tile):
                    z, _ = tiles.logits_of(hidden[start : start + tile].to(dtype), w, b, spec)
                    for name, value in _forward_tile(
                        z, tiles.work[: z.shape[0]], targets[start : start + tile], outputs
                    ).items():
                        parts.setdefault(name, []).append(value)

        def joined(name, like=torch.float32):
            return torch.cat(parts[name]) if name in parts else hidden.new_zeros((n,), dtype=like)

        log_z, log_probs = joined("log_z"), joined("log_probs")
        entropy = joined("entropy") if "entropy" in outputs else None
        extra = {
            name: joined(name, torch.bool if name == "is_top1" else torch.float32) if name in outputs else None
            for name in ("log_sum_sq_probs", "mean_logits", "is_top1")
        }
        ctx.save_for_backward(hidden, weight, bias, targets, log_z, log_z if entropy is None else entropy)
        ctx.spec, ctx.dtype, ctx.tile, ctx.has_entropy = spec, dtype, tile, entropy is not None
        ctx.mark_non_differentiable(*(x for x in extra.values() if x is not None))
        return log_probs, entropy, extra["log_sum_sq_probs"], extra["mean_logits"], extra["is_top1"]

    @staticmethod
    def backward(ctx, grad_logprobs, grad_entropy, *_):
        hidden, weight, bias, targets, log_z, entropy = ctx.saved_tensors
        need_hidden, need_weight, need_bias = ctx.needs_input_grad[:3]
        if not ctx.has_entropy:
            grad_entropy = None
        n = hidden.shape[0]
        grad_hidden = torch.zeros(hidden.shape, dtype=torch.float32) if need_hidden else None
        grad_weight = torch.zeros(weight.shape, dtype=torch.float32) if need_weight else None
        grad_bias = torch.zeros(bias.shape, dtype=torch.float32) if need_bias else None
        if n and (grad_logprobs is not None or grad_entropy is not None):
            dtype, tile = ctx.dtype, ctx.tile
            w = weight.to(dtype)
            b = None if bias is None else bias.float()
            tiles = _Tiles(min(n, tile), weight.shape[0], dtype)
            weight_part = (
                torch.empty(weight.shape, dtype=dtype) if grad_weight is not None and dtype != torch.float32 else None
            )
            with torch.autocast("cpu", enabled=False):
                for start in range(0, n, tile):
                    rows = slice(start, start + tile)
                    h = hidden[rows].to(dtype)
                    z, tanh = tiles.logits_of(h, w, b, ctx.spec)
                    grad = _backward_tile(
                        z,
                        tiles.work[: z.shape[0]],
                        tanh,
                        targets[rows],
                        log_z[rows],
                        entropy[rows],
                        None if grad_logprobs is None else grad_logprobs[rows].float(),
                        None if grad_entropy is None else grad_entropy[rows].float(),
                        ctx.spec,
                    )
                    if grad_bias is not None:
                        grad_bias += grad.sum(0)
                    grad = tiles.in_compute_dtype(grad)  # each product below rounded to the compute dtype once
                    if grad_hidden is not None:
                        grad_hidden[rows] = torch.mm(grad, w)
                    if grad_weight is not None:
                        if weight_part is None:
                            grad_weight.addmm_(grad.t(), h)
                        else:
                            grad_weight += torch.mm(grad.t(), h, out=weight_part)
        return (
            None if grad_hidden is None else grad_hidden.to(hidden.dtype),
            None if grad_weight is None else grad_weight.to(weight.dtype),
            None if grad_bias is None else grad_bias.to(bias.dtype),
            None,
            None,
            None,
            None,
            None,
            None,
        )


__all__ = ["TiledLogProbs", "lm_head_tile", "trl_tile_tokens"]
