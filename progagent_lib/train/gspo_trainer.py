"""The GSPO loss and its variants, written out, and what each optimizer step of it reads (the dynamics line's
diagnostics).

`GSPOTrainer` is TRL's GRPOTrainer — our `rollout_func` plays the episodes, TRL computes group-normalised
advantages, runs the micro-batches and the optimizer — with the loss taken here, so that what it computes can also
be reported. Which loss is the config's (GRPOConfig's fields, filled from GSPORunConfig), in TRL's names and as TRL
computes it; the defaults are GSPO's (sequence ratio, loss_type "grpo", beta 0):

    log_ratio_i,t  = logp_i,t - old_logp_i,t                       per model token t of episode i
    coef_1         = exp(mean over i's model tokens of log_ratio)  importance_sampling_level "sequence": one per episode
                   = exp(log_ratio_i,t)                            "token": one per model token (GRPO's)
    coef_2         = clip(coef_1, 1 - epsilon, 1 + epsilon_high)
    loss_i,t       = -min(coef_1 * A_i, coef_2 * A_i) * is_weight_i,t  +  beta * kl_i,t
    kl_i,t         = exp(ref_logp - logp) - (ref_logp - logp) - 1  (k3, >= 0; beta 0: no term and no reference model),
                     times coef_1 with use_bias_correction_kl (TRL's default: the unbiased reverse-KL gradient)
    loss           = the sum of loss_i,t over model tokens, normalised by loss_type (LOSS_TYPES): "grpo" each episode
                     by its tokens, then the mean over episodes; "bnpo" by the micro-batch's tokens; "dr_grpo" by
                     episodes x max_completion_length; "dapo" by the generation batch's tokens; "luspo" each
                     episode's sum, then the mean over episodes

tests/train/test_gspo_variants.py checks each variant against TRL's own `_compute_loss`. The reference's log-probs
(beta > 0) are TRL's: a frozen copy of the starting model (under LoRA: the model with its adapters off), scored in a
no-gradient pass after each generation.

`old_logp` is the trainer's log-prob of each token before any update on the batch. When a batch is used more than
once (several minibatches or passes) TRL computes it in a forward pass of its own after generation; when every
episode is trained on once, within one optimizer step, nothing has moved before its loss, so it is the loss's own
forward pass's log-prob, detached (ratio exactly 1), and the sampler comparison and TIS weights are taken there: one
forward pass fewer per episode, and none for a micro-batch without advantage. `is_weight` is truncated
importance sampling (TIS): the sampler (vLLM in bf16, transformers' generate) is not exactly the trainer, so each
model token's loss is weighted by min(p_trainer_old / p_sampler, cap); with no cap (importance_sampling "none") it is 1.

Per optimizer step the trainer reports, through TRL's metrics (so they reach the logged dict):
`gspo/ratio_{mean,min,max}` (coef_1 over the step's episodes, or model tokens at token level), `entropy` (per model
token), TRL's `clip_ratio/*` (the share of those episodes or tokens clipped), `kl` (per model token, beta > 0),
`gspo/is_weight_{mean,min,max}` (per model token), and `gspo/optimizer_step_skipped`; per generation batch,
`gspo/logp_mismatch_{mean,max}`, |logp_sampler - logp_trainer| over model tokens (of the episodes computed: a batch
trained on once reports it over the micro-batches that had an advantage, and a skipped step has none). Episodes
without a model token (errored, or masked as truncated) are left out of every statistic.

Without a KL term (beta 0) an episode without advantage adds nothing to the gradient, and three things follow.
A micro-batch in which no episode has both an advantage and a model token is not computed (no forward or backward
pass, so no ratio or entropy of it is reported; single-process runs), and a generation batch in which no episode has
one computes no old log-probs either (TRL's pass runs before the rewards are known; it is held back, and run only for
a batch with something to learn, and then over its episodes with an advantage only: the others' loss is 0, and
beside one that learns compute_loss takes their old log-probs from its own pass; its sampler comparison and TIS
weights cover those episodes, and none when nothing is learnt). On 2 CPU cores that pass took
200-330 s per batch of 4-8 long episodes, in runs where most batches had nothing to learn. A step in which no episode
has both an advantage (|A| > NO_ADVANTAGE) and a model token is skipped: its loss gradient is zero, but AdamW's weight
decay and momentum would still move the weights; the gradients are dropped instead, so the optimizer leaves the
weights and its own state as they were (the step still counts, and the learning-rate schedule advances). Under
DeepSpeed the optimizer steps inside backward and the step is not skipped. With beta > 0 the KL term pulls toward the
reference on every episode, so every micro-batch is computed and every step taken.

Every log-prob pass (the loss's, the old log-probs', the reference's) runs each chunk of episodes at its own width:
TRL pads a generation batch to its longest episode, and the columns no episode of the chunk uses are dropped before
the forward pass (`_unpadded_logps_and_entropies`). The loss's and the old log-probs' score only the model's tokens:
TRL labels every completion token, tool output included, and the fused LM head projects every labelled position
through the whole vocabulary; here a tool's output, masked out of every loss and statistic, gets no label, so no head
work (its log-prob and entropy read 0).

A generation batch is split into its optimizer steps by whole groups. TRL shuffles a batch's episodes before it
splits them into micro-batches, so a step of fewer episodes than the batch holds part of a group; the group's
advantages then do not sum to zero within the step, and what its passing and failing episodes share (the same reading
turns, most of the same program) is pushed up or down with the imbalance. Here the groups are shuffled, each kept
whole (`grouped_permutation`): a step of k x num_generations episodes holds k whole groups. On cpu-smoke at ce3b6b1,
2-episode minibatches of one group of 8 took steps of two failures and collapsed the policy (docs/results.md).

TRL methods overridden: `compute_loss` (transformers' public hook; GRPOTrainer's only calls its `_compute_loss`), the
public `training_step`, and three private ones where TRL has no hook, each saying why: `_prepare_inputs`,
`_generate_and_score_completions` and `_get_per_token_logps_and_entropies`.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import torch
from trl import GRPOConfig, GRPOTrainer

from .shared_prompt import SharedPrompts

logger = logging.getLogger(__name__)
# An advantage this small is the rounding of a group whose rewards are equal, not a signal: TRL divides by the
# group's std + 1e-4, so equal rewards whose float mean rounds give |A| ~ 1e-4, while any real difference between
# rewards (above ~1e-6) gives some episode of the group an |A| of order 1e-2 or more.
NO_ADVANTAGE = 1e-3
# TRL's loss types with a clipped ratio, which differ only in how the token losses are normalised (see the module's
# text); TRL's cispo, sapo and vespo replace the clip and are not computed here. The config's choices are the same.
LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo", "luspo")
IMPORTANCE_SAMPLING_LEVELS = ("sequence", "token")


# --- the tensors, as functions (tested on their own) -------------------------------------------------------------
def grouped_permutation(size: int, group_size: int) -> torch.Tensor:
    """A random order of a generation batch's `size` episodes that keeps each group's `group_size` consecutive
    episodes together: the groups in random order, each one's episodes shuffled within it. A batch that is not whole
    groups (a rank's share of groups that span ranks) is shuffled as one."""
    if group_size < 1 or size % group_size:
        return torch.randperm(size)
    order = torch.randperm(size // group_size)
    return torch.cat([int(g) * group_size + torch.randperm(group_size) for g in order])


def permute_batch(batch: dict, order: torch.Tensor) -> dict:
    """Every per-episode value of a generation batch in `order`, as TRL's shuffle_sequence_dict permutes them: tensors
    along dim 0, other sequences item by item; None and 0-dim tensors as they are."""

    def permute(value):
        if value is None or (isinstance(value, torch.Tensor) and value.ndim == 0):
            return value
        if isinstance(value, torch.Tensor):
            return value[order]
        return [value[int(i)] for i in order]

    return {key: permute(value) for key, value in batch.items()}


def model_token_mask(batch: dict) -> torch.Tensor:
    """(B, T) 1 at the completion's tokens the model wrote: every loss and statistic, and the log-prob passes'
    labels, read only these (a tool's output, `tool_mask` 0 — the rollout's `env_mask` — and padding are not)."""
    mask = batch["completion_mask"]
    return mask * batch["tool_mask"] if "tool_mask" in batch else mask


def log_importance_weights(log_ratio: torch.Tensor, model_tokens: torch.Tensor, level: str) -> torch.Tensor:
    """The log of the importance ratio: at "token" level log_ratio itself, (B, T); at "sequence" level (GSPO's) one
    per episode, (B, 1): the mean of log_ratio over its model tokens (an episode without one gets 0)."""
    if level == "token":
        return log_ratio
    return ((log_ratio * model_tokens).sum(-1) / model_tokens.sum(-1).clamp(min=1)).unsqueeze(-1)


def ratio_units(coef_1: torch.Tensor, model_tokens: torch.Tensor) -> torch.Tensor:
    """Where the importance ratio `coef_1` stands for something, a bool mask of its shape: the episodes with a model
    token (sequence level, (B, 1)) or the model tokens (token level, (B, T))."""
    if coef_1.size(-1) == 1:
        return model_tokens.sum(-1, keepdim=True) > 0
    return model_tokens.bool()


def reference_kl(ref_per_token_logps: torch.Tensor, per_token_logps: torch.Tensor) -> torch.Tensor:
    """Per token, the k3 estimate of KL(policy || reference), exp(d) - d - 1 with d = ref_logp - logp (>= 0, TRL's)."""
    ref_minus_policy = ref_per_token_logps - per_token_logps
    return torch.exp(ref_minus_policy) - ref_minus_policy - 1


def logp_mismatch(trainer_logps: torch.Tensor, sampler_logps: torch.Tensor, model_tokens: torch.Tensor) -> torch.Tensor:
    """|logp_sampler - logp_trainer| of every model token the sampler gave a log-prob for (a flat tensor)."""
    gap = (trainer_logps - sampler_logps).abs()
    return gap[model_tokens.bool() & ~torch.isnan(gap)]


def truncated_importance_weights(
    trainer_logps: torch.Tensor, sampler_logps: torch.Tensor, model_tokens: torch.Tensor, cap: float
) -> torch.Tensor:
    """TIS, per token, shape (B, T): min(p_trainer / p_sampler, cap) on model tokens; 1 elsewhere and where the
    sampler gave no log-prob (NaN)."""
    log_ratio = torch.nan_to_num((trainer_logps - sampler_logps) * model_tokens, nan=0.0)
    return torch.exp(log_ratio).clamp(max=cap)


@dataclass
class _StepTally:
    """What the micro-batches of one optimizer step saw, reduced when the step's gradient is complete."""

    ratios: list[torch.Tensor] = field(default_factory=list)  # coef_1, per ratio unit (see ratio_units)
    clipped_low: list[torch.Tensor] = field(default_factory=list)  # per such unit: 1.0 where the clip acted
    clipped_high: list[torch.Tensor] = field(default_factory=list)
    entropies: list[torch.Tensor] = field(default_factory=list)  # per model token
    kl: list[torch.Tensor] = field(default_factory=list)  # per model token (beta > 0)
    is_weights: list[torch.Tensor] = field(default_factory=list)  # per model token
    mismatch: list[torch.Tensor] = field(default_factory=list)  # per model token: |logp_sampler - logp_trainer|
    learning_episodes: int = 0  # episodes with an advantage (|A| > NO_ADVANTAGE) and a model token
    skipped_micro_batches: int = 0  # micro-batches with no such episode: not computed at all


class GSPOTrainer(GRPOTrainer):
    """GRPOTrainer whose loss (GSPO's by default, TRL's variants by config) is written out here, with truncated
    importance sampling against the sampler, and which skips an optimizer step that has nothing to learn from."""

    # transformers' Trainer types these for any trainer (model may be None, args any TrainingArguments); a
    # GRPOTrainer always holds a model and a GRPOConfig
    model: torch.nn.Module
    args: GRPOConfig

    def __init__(
        self,
        *args,
        importance_sampling_cap: float | None = 2.0,
        shared_prompt: bool = True,
        negative_advantage_weight: float = 1.0,
        positive_advantage_weight: float = 1.0,
        **kwargs,
    ):
        """`importance_sampling_cap`: the truncation of TIS's per-token weight; None applies no correction.
        `shared_prompt`: a group's prompt through the model once per optimizer step where that applies
        (`train.shared_prompt`: one process, micro-batches of one episode, no activation checkpointing).
        `negative_advantage_weight`: negative advantages are multiplied by it (1: GSPO; 0: none pushed down);
        `positive_advantage_weight` likewise the positive ones (0: none pushed up). Not both 0."""
        if importance_sampling_cap is not None and not importance_sampling_cap >= 1.0:
            raise ValueError(
                f"importance_sampling_cap={importance_sampling_cap!r}: must be >= 1, or None for no correction"
            )
        for name, weight in (("negative", negative_advantage_weight), ("positive", positive_advantage_weight)):
            if not 0.0 <= weight <= 1.0:
                raise ValueError(f"{name}_advantage_weight={weight!r}: must be in [0, 1]")
        if negative_advantage_weight == positive_advantage_weight == 0.0:
            raise ValueError(
                "negative_advantage_weight and positive_advantage_weight are both 0: nothing would be learnt"
            )
        super().__init__(*args, **kwargs)
        self.importance_sampling_cap = importance_sampling_cap
        self.negative_advantage_weight = negative_advantage_weight
        self.positive_advantage_weight = positive_advantage_weight
        self._refuse_what_the_loss_ignores()
        from accelerate.utils import DistributedType

        # Without a KL term, a step with no advantage has nothing to learn and is skipped; DeepSpeed steps its
        # optimizer inside the last micro-batch's backward, before a skip could drop the gradient.
        deepspeed = self.accelerator.distributed_type == DistributedType.DEEPSPEED
        self._skip_without_advantage = self.beta == 0.0 and not deepspeed
        if deepspeed and self.beta == 0.0:
            logger.warning(
                "under DeepSpeed, an optimizer step without advantage is not skipped (weight decay and "
                "momentum still move the weights); its dynamics line says skipped: false"
            )
        self._tally = _StepTally()
        # TRL's old-log-prob pass, held back until the batch's advantages are known (_generate_and_score_completions)
        self._holding_old_logps = False
        self._held_old_logps: tuple | None = None
        self.shared_prompts = SharedPrompts() if shared_prompt and self._can_share_prompts() else None
        # the held-back old-log-prob pass's prompts (no gradient): each computed once for the batch, then dropped
        self._reading_prompts: SharedPrompts | None = None

    def _can_share_prompts(self) -> bool:
        from accelerate.utils import DistributedType

        return (
            self.accelerator.num_processes == 1
            and self.accelerator.distributed_type != DistributedType.DEEPSPEED
            and self.args.per_device_train_batch_size == 1
            and not self.args.activation_checkpointing
        )

    def _refuse_what_the_loss_ignores(self) -> None:
        """One line naming every GRPOConfig setting the loss below does not compute, and the value to set instead."""
        unsupported = {
            f"loss_type={self.loss_type!r} (use one of {', '.join(LOSS_TYPES)})": self.loss_type not in LOSS_TYPES,
            f"importance_sampling_level={self.importance_sampling_level!r} (use sequence or token)": self.importance_sampling_level
            not in IMPORTANCE_SAMPLING_LEVELS,
            "top_entropy_quantile (leave it 1.0)": self.top_entropy_quantile < 1.0,
            "off_policy_mask_threshold (leave it None)": self.off_policy_mask_threshold is not None,
            "delta (leave it None)": self.args.delta is not None,
            "entropy_coef (leave it 0)": self._entropy_bonus_enabled,
            "router_aux_loss_coef (a MoE model's aux loss; leave it 0)": self.aux_loss_enabled,
            # TRL would weight the loss by its own vLLM correction; here TIS (importance_sampling_cap) is the correction
            "vllm_importance_sampling_correction (set it False; TIS is importance_sampling_cap)": self.use_vllm
            and self.vllm_importance_sampling_correction,
        }
        refused = [setting for setting, bad in unsupported.items() if bad]
        if refused:
            raise ValueError(f"GSPOTrainer does not compute TRL's {'; '.join(refused)}")

    # --- generation batch: split into optimizer steps by whole groups -------------------------------------------
    def _prepare_inputs(self, generation_batch):
        # Private in TRL, overridden because its shuffle of the batch before the split is inside it, with no hook:
        # the same buffering (one generation every steps_per_generation x num_iterations micro-batches), with the
        # episodes ordered by whole groups (grouped_permutation) instead. Text only: no pixel values to split.
        if not self.model.training:
            return super()._prepare_inputs(generation_batch)
        from trl.trainer.utils import split_tensor_dict

        if self._step % (self.args.steps_per_generation * self.num_iterations) == 0 or self._buffered_inputs is None:
            batch = self._generate_and_score_completions(generation_batch)
            size = len(next(value for value in batch.values() if value is not None))
            batch = permute_batch(batch, grouped_permutation(size, self.num_generations))
            self._buffered_inputs = split_tensor_dict(batch, self.args.steps_per_generation)
        return self._buffered_inputs[self._step % self.args.steps_per_generation]

    # --- generation batch: the trainer's log-probs before any update, the sampler comparison, TIS weights --------
    def _generate_and_score_completions(self, inputs):
        # Private in TRL, overridden because no hook sees a generation batch between its log-prob passes and the
        # loss: the held-back old log-probs are computed here once the advantages are known, and the sampler
        # comparison and TIS weights need the whole batch before it is split into micro-batches.
        # TRL computes a batch's old log-probs (a forward pass over every episode) before its rewards. A batch whose
        # groups all have equal rewards trains nothing (every micro-batch is skipped) and never reads them, so the
        # pass is held back and run only once some episode has an advantage: the same call on the same weights
        # (nothing is updated in between). Single process only, where skipped micro-batches compute nothing.
        self._holding_old_logps = (
            self.model.training and self._skip_without_advantage and self.accelerator.num_processes == 1
        )
        try:
            batch = super()._generate_and_score_completions(inputs)
        finally:
            self._holding_old_logps, held, self._held_old_logps = False, self._held_old_logps, None
        if (self.negative_advantage_weight, self.positive_advantage_weight) != (1.0, 1.0):
            # before anything reads them: an episode weighted to 0 has no advantage (its micro-batch may be skipped)
            advantages = batch["advantages"]
            batch["advantages"] = torch.where(
                advantages < 0,
                advantages * self.negative_advantage_weight,
                advantages * self.positive_advantage_weight,
            )
        mode = "train" if self.model.training else "eval"
        model_tokens = model_token_mask(batch)
        if held is not None:
            learning = (batch["advantages"].abs() > NO_ADVANTAGE) & (model_tokens.sum(-1) > 0)
            if not bool(learning.any()) or self._first_pass_is_old():
                # Nothing to learn from: no old log-probs, no sampler comparison, no TIS weights (none is read).
                # Or each pass over the batch is one optimizer step: the first pass's own log-probs are the old ones,
                # taken in its loss (compute_loss) and kept for the later passes, instead of a pass of their own.
                batch["old_per_token_logps"] = None
                return batch
            from trl.models.utils import disable_gradient_checkpointing

            (model, input_ids, attention_mask, logits_to_keep, *rest), kwargs = held
            # Only the episodes with an advantage: no loss reads the others' (a micro-batch of them is skipped; beside
            # one that learns, their loss is 0, and compute_loss takes their old log-probs from its own pass).
            multimodal = any(value is not None for key, value in kwargs.items() if key != "batch_size")
            rows = (
                torch.arange(learning.size(0), device=learning.device) if multimodal else learning.nonzero().squeeze(-1)
            )
            learning = learning if not multimodal else torch.ones_like(learning)  # images: every episode, as TRL
            old = torch.zeros(learning.size(0), logits_to_keep, dtype=torch.float32, device=input_ids.device)
            # where the loss shares a group's prompt, this pass does too: computed once per prompt, without a graph
            self._reading_prompts = SharedPrompts() if self.shared_prompts is not None else None
            try:
                with (
                    torch.no_grad(),
                    disable_gradient_checkpointing(self.model, self.args.gradient_checkpointing_kwargs),
                ):
                    taken = self._unpadded_logps_and_entropies(
                        model,
                        input_ids[rows],
                        attention_mask[rows],
                        logits_to_keep,
                        *rest,
                        **kwargs,
                        scored=model_tokens[rows],
                    )[0]
            finally:
                self._reading_prompts = None
            old[rows] = taken.to(old.dtype)
            batch["old_per_token_logps"], batch["old_logps_taken"] = old, learning
            model_tokens = model_tokens * learning.unsqueeze(-1)  # the sampler comparison and TIS: those episodes
        sampler_logps = batch.get("sampling_per_token_logps")
        if sampler_logps is None and self.importance_sampling_cap is not None:
            raise RuntimeError(
                "the rollout returned no sampler log-probs: truncated importance sampling needs them "
                "(or set importance_sampling: none)"
            )
        if batch.get("old_per_token_logps") is None:
            # TRL leaves them out when every episode of the batch is trained on once, within one optimizer step
            # (minibatches = num_iterations = 1): nothing moves before each episode's loss, so the trainer's log-probs
            # before the update are those of the loss's own forward pass. The sampler comparison and the TIS weights
            # are taken there (compute_loss): no separate forward pass over the batch, and none at all over the
            # episodes of a micro-batch without advantage.
            return batch
        if sampler_logps is None:
            return batch
        self._report_spread(
            mode,
            logp_mismatch(batch["old_per_token_logps"], sampler_logps, model_tokens),
            mean="gspo/logp_mismatch_mean",
            max="gspo/logp_mismatch_max",
        )
        if self.importance_sampling_cap is not None:
            batch["is_weight"] = truncated_importance_weights(
                batch["old_per_token_logps"], sampler_logps, model_tokens, self.importance_sampling_cap
            )
        return batch

    def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep, *args, **kwargs):
        # Private in TRL, overridden because every log-prob pass of TRL's (the old log-probs', the reference's) goes
        # through it and no hook reaches them: each runs unpadded here, and the old log-probs' pass can be held back.
        if self._holding_old_logps and not torch.is_grad_enabled():
            # Holding is on only without a KL term (beta 0), where TRL's one no-gradient pass of a generation batch is
            # the policy's old log-probs: held until the advantages are known (once: any later pass runs now)
            self._holding_old_logps = False
            self._held_old_logps = ((model, input_ids, attention_mask, logits_to_keep, *args), kwargs)
            return input_ids.new_zeros((input_ids.size(0), logits_to_keep), dtype=torch.float32), None, None
        return self._unpadded_logps_and_entropies(model, input_ids, attention_mask, logits_to_keep, *args, **kwargs)

    def _unpadded_logps_and_entropies(
        self,
        model,
        input_ids,
        attention_mask,
        logits_to_keep,
        batch_size=None,
        compute_entropy=False,
        compute_aux_loss=False,
        scored=None,
        **multimodal,
    ):
        """TRL's log-prob pass, one chunk of `batch_size` episodes at a time, each chunk cut to its own tokens, and
        only the model's own tokens scored.

        TRL pads every episode of a generation batch to the batch's longest (prompts on the left, completions on the
        right) and runs each chunk at that width: with micro-batches of one episode, a 4k-token episode beside one
        that ran to its turn budget is computed at the long one's length. Here the columns in which no episode of the
        chunk has a token are dropped before the forward pass, and the completion's log-probs and entropies are
        padded back with zeros (those positions are masked out of every loss and statistic). Trailing columns are
        exact to drop (attention is causal); leading ones shift every position of the chunk by the same amount, which
        rotary attention does not see.

        `scored` (B, logits_to_keep) marks the completion positions whose log-prob and entropy are wanted: the model's
        tokens (`completion_mask * tool_mask`). Only those get a label, so the fused LM head projects and folds only
        them (on a CPU, `TiledLogProbs`; TRL's compact path elsewhere); a tool's output, which every loss and statistic
        masks out, costs no head work (59% of a DTC teacher episode of cpu-cross). The other positions get 0. None:
        every completion token, as TRL labels them. Multimodal inputs go to TRL's pass unchanged (every token
        scored)."""
        if any(value is not None for value in multimodal.values()):
            return super()._get_per_token_logps_and_entropies(
                model,
                input_ids,
                attention_mask,
                logits_to_keep,
                batch_size,
                compute_entropy,
                compute_aux_loss,
                **multimodal,
            )
        width, prompt_width = input_ids.size(1), input_ids.size(1) - logits_to_keep
        batch_size = batch_size or input_ids.size(0)
        logps, entropies, aux_losses = [], [], []
        for start in range(0, input_ids.size(0), batch_size):
            mask = attention_mask[start : start + batch_size]
            used = mask.any(0).nonzero()
            first = min(int(used[0]) if used.numel() else 0, prompt_width)  # never into the completion
            last = max(int(used[-1]) + 1 if used.numel() else width, prompt_width + 1)  # at least one completion column
            chunk_logps, chunk_entropies, aux = self._scored_logps_and_entropies(
                model,
                input_ids[start : start + batch_size, first:last],
                mask[:, first:last],
                last - prompt_width,
                None if scored is None else scored[start : start + batch_size, : last - prompt_width],
                compute_entropy,
                compute_aux_loss,
            )
            logps.append(torch.nn.functional.pad(chunk_logps, (0, width - last)))
            if compute_entropy:
                entropies.append(torch.nn.functional.pad(chunk_entropies, (0, width - last)))
            if compute_aux_loss:
                aux_losses.append(aux)
        return (
            torch.cat(logps),
            torch.cat(entropies) if compute_entropy else None,
            torch.stack(aux_losses).mean() if compute_aux_loss else None,
        )

    def _scored_logps_and_entropies(
        self, model, input_ids, attention_mask, logits_to_keep, scored, compute_entropy, compute_aux_loss
    ):
        """One chunk through the model with TRL's fused LM head (as TRL's text-only pass), a label only where the
        completion is `scored` (None: every completion token)."""
        labels = input_ids.masked_fill(attention_mask == 0, -100)
        labels[:, :-logits_to_keep] = -100
        if scored is not None:
            labels[:, -logits_to_keep:].masked_fill_(scored == 0, -100)
        extra = {"output_router_logits": True} if compute_aux_loss else {}
        outputs = None
        prompts = self.shared_prompts if torch.is_grad_enabled() else self._reading_prompts
        if prompts is not None and self.model.training and not extra:
            # the loss's pass: from its prompt's keys and values, computed once this optimizer step; or the old
            # log-probs' pass, from its prompt's computed once for the batch (None: whole)
            outputs = prompts.forward(
                model, input_ids, attention_mask, labels, logits_to_keep, self.accelerator.autocast
            )
        if outputs is None:
            with self.accelerator.autocast():
                outputs = model(
                    input_ids=input_ids, attention_mask=attention_mask, labels=labels, fused_lm_head=True, **extra
                )
        return (
            outputs.log_probs[:, -logits_to_keep:],
            outputs.entropy[:, -logits_to_keep:] if compute_entropy else None,
            outputs.aux_loss if compute_aux_loss else None,
        )

    # --- the loss ----------------------------------------------------------------------------------------------
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        # transformers' public hook (GRPOTrainer's own only hands over to its private _compute_loss, not called here)
        if return_outputs:
            raise ValueError("GSPOTrainer.compute_loss returns the loss only: call it with return_outputs=False")
        completion_ids = inputs["completion_ids"]
        model_tokens = model_token_mask(inputs)  # (B, T) completion_mask x env_mask: 1 where the model wrote
        advantages = inputs["advantages"].unsqueeze(-1)  # (B, 1)
        if self._nothing_to_learn(advantages, model_tokens):
            return self._skipped_micro_batch_loss(model)
        per_token_logps, entropies, _ = self._unpadded_logps_and_entropies(
            model,
            torch.cat([inputs["prompt_ids"], completion_ids], dim=1),
            torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], dim=1),
            completion_ids.size(1),
            compute_entropy=True,
            scored=model_tokens,
        )
        old_per_token_logps, is_weight = self._old_logps_and_is_weight(inputs, per_token_logps, model_tokens)

        log_ratio = (per_token_logps - old_per_token_logps) * model_tokens  # 0 off the model's tokens
        coef_1 = torch.exp(log_importance_weights(log_ratio, model_tokens, self.importance_sampling_level))
        coef_2 = torch.clamp(coef_1, 1 - self.epsilon_low, 1 + self.epsilon_high)  # (B, 1) or (B, T), as coef_1
        per_token_loss = -torch.min(coef_1 * advantages, coef_2 * advantages)
        if is_weight is not None:
            per_token_loss = per_token_loss * is_weight  # (B, T)
        per_token_kl = None
        if self.beta != 0.0:
            per_token_kl = reference_kl(inputs["ref_per_token_logps"], per_token_logps)  # (B, T)
            weighted_kl = per_token_kl * coef_1 if self.args.use_bias_correction_kl else per_token_kl
            per_token_loss = per_token_loss + self.beta * weighted_kl
        loss = self._normalised_loss(per_token_loss, model_tokens, inputs)

        if self.model.training:
            self._add_to_tally(coef_1.detach(), advantages, entropies, model_tokens, is_weight, per_token_kl)
        return loss

    def _nothing_to_learn(self, advantages: torch.Tensor, model_tokens: torch.Tensor) -> bool:
        """No episode of the micro-batch has both an advantage and a model token, and there is no KL term: its loss
        has no gradient, so its forward and backward passes are not run (on 2 CPU cores a 4k-token episode's is about
        a minute). Training, single process only."""
        if not (self.model.training and self._skip_without_advantage and self.accelerator.num_processes == 1):
            return False
        learning = (advantages.squeeze(-1).abs() > NO_ADVANTAGE) & (model_tokens.sum(-1) > 0)
        return not bool(learning.any())

    def _skipped_micro_batch_loss(self, model) -> torch.Tensor:
        """A zero loss touching one weight, so that backward runs; the step's gradients are then dropped (no
        advantage anywhere) or this part adds nothing to them."""
        self._tally.skipped_micro_batches += 1
        anchor = next(p for p in model.parameters() if p.requires_grad)
        return anchor.reshape(-1)[0] * 0.0

    def _old_logps_and_is_weight(
        self, inputs: dict, per_token_logps: torch.Tensor, model_tokens: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The trainer's log-probs before any update on the batch, and the TIS weights (None: no correction)."""
        old_per_token_logps = inputs.get("old_per_token_logps")
        if old_per_token_logps is not None:
            taken = inputs.get("old_logps_taken")
            if taken is not None and not bool(taken.all()):  # an episode without advantage: this pass's (ratio 1)
                old_per_token_logps = torch.where(taken.unsqueeze(-1), old_per_token_logps, per_token_logps.detach())
            return old_per_token_logps, inputs.get("is_weight")
        # None before the loss: the policy has not moved since sampling (a batch trained on once, or the first pass
        # over it when each pass is one optimizer step; see _generate_and_score_completions), so this pass's
        # log-probs are the old ones, and the sampler is compared with them here
        old_per_token_logps, is_weight = per_token_logps.detach(), None
        sampler_logps = inputs.get("sampling_per_token_logps")
        if sampler_logps is not None:
            if self.model.training:
                self._tally.mismatch.append(logp_mismatch(old_per_token_logps, sampler_logps, model_tokens))
            if self.importance_sampling_cap is not None:
                is_weight = truncated_importance_weights(
                    old_per_token_logps, sampler_logps, model_tokens, self.importance_sampling_cap
                )
        if self.model.training and self.num_iterations > 1:
            # the later passes over this micro-batch (_prepare_inputs hands back the same dict) read them
            inputs["old_per_token_logps"], inputs["is_weight"] = old_per_token_logps, is_weight
        return old_per_token_logps, is_weight

    def _first_pass_is_old(self) -> bool:
        """Every pass over a generation batch is one optimizer step (minibatches = 1): nothing moves before the
        first pass's last loss, so its log-probs are the old ones and no separate forward pass is needed."""
        return self.num_iterations > 1 and self.args.steps_per_generation == self.args.gradient_accumulation_steps

    def _normalised_loss(self, per_token_loss: torch.Tensor, model_tokens: torch.Tensor, inputs: dict) -> torch.Tensor:
        """The micro-batch's loss: its token losses summed over model tokens and normalised as `loss_type` says
        (TRL's normalisations), divided by the gradient accumulation steps while training."""
        token_losses = per_token_loss * model_tokens  # (B, T)
        accumulation = self.current_gradient_accumulation_steps if self.model.training else 1.0
        if self.loss_type == "grpo":  # each episode's mean over its tokens, then the mean over episodes
            loss = (token_losses.sum(-1) / model_tokens.sum(-1).clamp(min=1.0)).mean()
        elif self.loss_type == "bnpo":  # the mean over the micro-batch's tokens
            loss = token_losses.sum() / model_tokens.sum().clamp(min=1.0)
        elif self.loss_type == "dr_grpo":  # over a constant: episodes x max_completion_length
            assert self.max_completion_length is not None, "dr_grpo divides by max_completion_length: set it"
            loss = token_losses.sum() / (token_losses.size(0) * self.max_completion_length)
        elif self.loss_type == "luspo":  # each episode's sum (its length weighs), then the mean over episodes
            loss = token_losses.sum(-1).mean()
        elif self.loss_type == "dapo":
            # over the generation batch's model tokens, each accumulation window taking its share of them
            tokens = inputs["num_items_in_batch"].clamp(min=1.0) / self.accelerator.num_processes
            if self.model.training:
                tokens = tokens * self.current_gradient_accumulation_steps / self.args.steps_per_generation
            return token_losses.sum() / tokens
        else:
            raise ValueError(f"loss_type={self.loss_type!r}: use one of {', '.join(LOSS_TYPES)}")
        return loss / accumulation

    def _add_to_tally(self, coef_1, advantages, entropies, model_tokens, is_weight, per_token_kl) -> None:
        tally, units = self._tally, ratio_units(coef_1, model_tokens)
        ratio, unit_advantages = coef_1[units], advantages.expand_as(coef_1)[units]
        tally.ratios.append(ratio)
        tally.clipped_low.append(((ratio < 1 - self.epsilon_low) & (unit_advantages < 0)).float())
        tally.clipped_high.append(((ratio > 1 + self.epsilon_high) & (unit_advantages > 0)).float())
        model_token = model_tokens.bool()
        tally.entropies.append(entropies.detach()[model_token])
        if is_weight is not None:
            tally.is_weights.append(is_weight[model_token])
        if per_token_kl is not None:
            tally.kl.append(per_token_kl.detach()[model_token])
        trained = model_tokens.sum(-1) > 0  # episodes with at least one model token
        tally.learning_episodes += int(((advantages.squeeze(-1).abs() > NO_ADVANTAGE) & trained).sum())

    # --- the end of an optimizer step: report it, and skip it when nothing is to be learnt ---------------------
    def training_step(self, model, inputs, num_items_in_batch):
        loss = super().training_step(model, inputs, num_items_in_batch)
        if self.accelerator.sync_gradients:  # the step's last micro-batch: its gradient is complete, not yet applied
            if self.shared_prompts is not None:  # but for the prompts' part: through each prompt's graph, once
                self.shared_prompts.backward()
            self._close_step(model)
        return loss

    def _close_step(self, model) -> None:
        tally, self._tally = self._tally, _StepTally()
        device = self.accelerator.device

        def cat(parts: list[torch.Tensor]) -> torch.Tensor:
            return torch.cat(parts) if parts else torch.zeros(0, device=device)

        low, high = cat(tally.clipped_low), cat(tally.clipped_high)
        self._report_spread(
            "train", cat(tally.ratios), mean="gspo/ratio_mean", min="gspo/ratio_min", max="gspo/ratio_max"
        )
        self._report_spread("train", cat(tally.entropies), mean="entropy")
        self._report_spread("train", cat(tally.kl), mean="kl")  # TRL's name; beta > 0 only
        # TRL's names for the clip fractions: shares of the step's ratio units (episodes; model tokens at token level)
        self._report_spread("train", low, mean="clip_ratio/low_mean")
        self._report_spread("train", high, mean="clip_ratio/high_mean")
        self._report_spread("train", low + high, mean="clip_ratio/region_mean")
        if self.importance_sampling_cap is not None:
            self._report_spread(
                "train",
                cat(tally.is_weights),
                mean="gspo/is_weight_mean",
                min="gspo/is_weight_min",
                max="gspo/is_weight_max",
            )
        # the sampler comparison when it was taken in the loss's forward pass (a batch trained on once)
        self._report_spread("train", cat(tally.mismatch), mean="gspo/logp_mismatch_mean", max="gspo/logp_mismatch_max")
        learning = self.accelerator.reduce(torch.tensor(tally.learning_episodes, device=device), reduction="sum")
        skip = int(learning) == 0 and self._skip_without_advantage
        if skip:
            model.zero_grad(set_to_none=True)  # an optimizer leaves a parameter without a gradient untouched
        self._metrics["train"]["gspo/optimizer_step_skipped"].append(float(skip))

    def _report_spread(self, mode: str, values: torch.Tensor, **names: str) -> None:
        """Append the mean, min and/or max of `values` over every process to TRL's metrics under the given names
        (e.g. mean="gspo/ratio_mean"); nothing when no process has a value."""
        values = values.detach().double().to(self.accelerator.device)
        empty = values.numel() == 0
        local = torch.stack(
            [
                values.sum(),
                values.new_tensor(float(values.numel())),
                values.new_tensor(math.inf) if empty else values.min(),
                values.new_tensor(-math.inf) if empty else values.max(),
            ]
        )
        every = self.accelerator.gather(local.unsqueeze(0)).view(-1, 4)
        count = float(every[:, 1].sum())
        if count == 0:
            return
        spread = {
            "mean": float(every[:, 0].sum()) / count,
            "min": float(every[:, 2].min()),
            "max": float(every[:, 3].max()),
        }
        for stat, name in names.items():
            self._metrics[mode][name].append(spread[stat])
