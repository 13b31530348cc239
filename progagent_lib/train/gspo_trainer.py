"""The GSPO loss, written out, and what each optimizer step of it reads (the dynamics line's diagnostics).

`GSPOTrainer` is TRL's GRPOTrainer — our `rollout_func` plays the episodes, TRL computes group-normalised
advantages, runs the micro-batches and the optimizer — with the loss taken here, in the one form GSPO uses
(sequence-level ratio, two-sided clip, no KL term), so that what it computes can also be reported:

    ratio_i     = exp(mean over episode i's model tokens of (logp_new - logp_old))     one per episode
    loss_i,t    = -min(ratio_i * A_i, clip(ratio_i, 1 - eps_low, 1 + eps_high) * A_i) * is_weight_i,t
    loss        = mean over episodes of (mean over the episode's model tokens of loss_i,t)

`logp_old` is the trainer's log-prob of each token before any update on the batch. When a batch is used more than
once (several minibatches or passes) TRL computes it in a forward pass of its own after generation; when every
episode is trained on once, within one optimizer step, nothing has moved before its loss, so it is the loss's own
forward pass's log-prob, detached (ratio exactly 1), and the sampler comparison and TIS weights are taken there: one
forward pass fewer per episode, and none for a micro-batch without advantage. `is_weight` is truncated
importance sampling (TIS): the sampler (vLLM in bf16, transformers' generate) is not exactly the trainer, so each
model token's loss is weighted by min(p_trainer_old / p_sampler, cap); with no cap (importance_sampling "none") it is 1.

Per optimizer step the trainer reports, through TRL's metrics (so they reach the logged dict):
`gspo/ratio_{mean,min,max}` over the step's episodes, `entropy` (per model token), TRL's `clip_ratio/*`
(share of the step's episodes clipped), `gspo/is_weight_{mean,min,max}` (per model token), and
`gspo/optimizer_step_skipped`; per generation batch, `gspo/logp_mismatch_{mean,max}`, |logp_sampler - logp_trainer|
over model tokens (of the episodes computed: a batch trained on once reports it over the micro-batches that had an
advantage, and a skipped step has none). Episodes without a model token (errored, or masked as truncated) are left out of every statistic.

A micro-batch in which no episode has both an advantage and a model token is not computed (no forward or backward
pass, so no ratio or entropy of it is reported; single-process runs), and a generation batch in which no episode has
one computes no old log-probs either (TRL's pass runs before the rewards are known; it is held back, and run only for
a batch with something to learn; its sampler comparison is then not reported). On 2 CPU cores that pass took
200-330 s per batch of 4-8 long episodes, in runs where most batches had nothing to learn. A step in which no episode has both an
advantage (|A| > NO_ADVANTAGE) and a model token is skipped: its loss
gradient is zero, but AdamW's weight decay and momentum would still move the weights; the gradients are dropped
instead, so the optimizer leaves the weights and its own state as they were (the step still counts, and the
learning-rate schedule advances). Under DeepSpeed the optimizer steps inside backward and the step is not skipped.

Every log-prob pass (the loss's, and the old log-probs') runs each chunk of episodes at its own width: TRL pads a
generation batch to its longest episode, and the columns no episode of the chunk uses are dropped before the forward
pass (`_unpadded_logps_and_entropies`). Both score only the model's tokens: TRL labels every completion token, tool
output included, and the fused LM head projects every labelled position through the whole vocabulary; here a tool's
output, masked out of every loss and statistic, gets no label, so no head work (its log-prob and entropy read 0).
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import torch
from trl import GRPOTrainer

logger = logging.getLogger(__name__)
# An advantage this small is the rounding of a group whose rewards are equal, not a signal: TRL divides by the
# group's std + 1e-4, so equal rewards whose float mean rounds give |A| ~ 1e-4, while any real difference between
# rewards (above ~1e-6) gives some episode of the group an |A| of order 1e-2 or more.
NO_ADVANTAGE = 1e-3


# --- the tensors, as functions (tested on their own) -------------------------------------------------------------
def model_token_mask(batch: dict) -> torch.Tensor:
    """(B, T) 1 at the completion's tokens the model wrote: every loss and statistic, and the log-prob passes'
    labels, read only these (a tool's output, `tool_mask` 0, and padding are left out)."""
    mask = batch["completion_mask"]
    return mask * batch["tool_mask"] if "tool_mask" in batch else mask


def sequence_ratio(logps: torch.Tensor, old_logps: torch.Tensor, model_tokens: torch.Tensor) -> torch.Tensor:
    """GSPO's importance ratio, one per episode, shape (B, 1): exp of the mean of logp - logp_old over its model
    tokens (an episode without one gets 1)."""
    log_ratio = ((logps - old_logps) * model_tokens).sum(-1) / model_tokens.sum(-1).clamp(min=1)
    return torch.exp(log_ratio).unsqueeze(-1)


def logp_mismatch(trainer_logps: torch.Tensor, sampler_logps: torch.Tensor, model_tokens: torch.Tensor) -> torch.Tensor:
    """|logp_sampler - logp_trainer| of every model token the sampler gave a log-prob for (a flat tensor)."""
    gap = (trainer_logps - sampler_logps).abs()
    return gap[model_tokens.bool() & ~torch.isnan(gap)]


def truncated_importance_weights(trainer_logps: torch.Tensor, sampler_logps: torch.Tensor,
                                 model_tokens: torch.Tensor, cap: float) -> torch.Tensor:
    """TIS, per token, shape (B, T): min(p_trainer / p_sampler, cap) on model tokens; 1 elsewhere and where the
    sampler gave no log-prob (NaN)."""
    log_ratio = torch.nan_to_num((trainer_logps - sampler_logps) * model_tokens, nan=0.0)
    return torch.exp(log_ratio).clamp(max=cap)


@dataclass
class _StepTally:
    """What the micro-batches of one optimizer step saw, reduced when the step's gradient is complete."""

    ratios: list[torch.Tensor] = field(default_factory=list)        # per episode with a model token
    clipped_low: list[torch.Tensor] = field(default_factory=list)   # per such episode: 1.0 where the clip acted
    clipped_high: list[torch.Tensor] = field(default_factory=list)
    entropies: list[torch.Tensor] = field(default_factory=list)     # per model token
    is_weights: list[torch.Tensor] = field(default_factory=list)    # per model token
    mismatch: list[torch.Tensor] = field(default_factory=list)      # per model token: |logp_sampler - logp_trainer|
    learning_episodes: int = 0   # episodes with an advantage (|A| > NO_ADVANTAGE) and a model token
    skipped_micro_batches: int = 0   # micro-batches with no such episode: not computed at all


class GSPOTrainer(GRPOTrainer):
    """GRPOTrainer whose loss is GSPO's, with truncated importance sampling against the sampler, and which skips
    an optimizer step that has nothing to learn from."""

    def __init__(self, *args, importance_sampling_cap: float | None = 2.0, **kwargs):
        """`importance_sampling_cap`: the truncation of TIS's per-token weight; None applies no correction."""
        if importance_sampling_cap is not None and not importance_sampling_cap >= 1.0:
            raise ValueError(f"importance_sampling_cap={importance_sampling_cap!r}: must be >= 1, or None for no correction")
        super().__init__(*args, **kwargs)
        self.importance_sampling_cap = importance_sampling_cap
        # The loss below is GSPO's alone: refuse any GRPOConfig setting it would silently ignore.
        unsupported = {
            "loss_type": self.loss_type != "grpo", "importance_sampling_level": self.importance_sampling_level != "sequence",
            "beta": self.beta != 0.0, "top_entropy_quantile": self.top_entropy_quantile < 1.0,
            "off_policy_mask_threshold": self.off_policy_mask_threshold is not None, "delta": self.args.delta is not None,
            "entropy_coef": self._entropy_bonus_enabled, "router_aux_loss_coef": self.aux_loss_enabled,
            # TRL would weight the loss by its own vLLM correction; here TIS (importance_sampling_cap) is the correction
            "vllm_importance_sampling_correction": self.use_vllm and self.vllm_importance_sampling_correction,
        }
        if any(unsupported.values()):
            raise ValueError(f"GSPOTrainer computes GSPO's loss only (loss_type='grpo', importance_sampling_level="
                             f"'sequence', beta=0, no entropy or off-policy masks, no vLLM correction of TRL's); "
                             f"unsupported settings: {[name for name, bad in unsupported.items() if bad]}")
        from accelerate.utils import DistributedType

        # DeepSpeed steps its optimizer inside the last micro-batch's backward, before a skip could drop the gradient.
        self._can_skip_steps = self.accelerator.distributed_type != DistributedType.DEEPSPEED
        if not self._can_skip_steps:
            logger.warning("under DeepSpeed, an optimizer step without advantage is not skipped (weight decay and "
                           "momentum still move the weights); its dynamics line says skipped: false")
        self._tally = _StepTally()
        # TRL's old-log-prob pass, held back until the batch's advantages are known (see _generate_and_score_completions)
        self._holding_old_logps = False
        self._held_old_logps: tuple | None = None

    # --- generation batch: the trainer's log-probs before any update, the sampler comparison, TIS weights --------
    def _generate_and_score_completions(self, inputs):
        # TRL computes a batch's old log-probs (a forward pass over every episode) before its rewards. A batch whose
        # groups all have equal rewards trains nothing (every micro-batch is skipped) and never reads them, so the
        # pass is held back and run only once some episode has an advantage: the same call on the same weights
        # (nothing is updated in between). Single process only, where skipped micro-batches compute nothing.
        self._holding_old_logps = self.model.training and self._can_skip_steps and self.accelerator.num_processes == 1
        try:
            batch = super()._generate_and_score_completions(inputs)
        finally:
            self._holding_old_logps, held, self._held_old_logps = False, self._held_old_logps, None
        mode = "train" if self.model.training else "eval"
        model_tokens = model_token_mask(batch)
        if held is not None:
            learning = (batch["advantages"].abs() > NO_ADVANTAGE) & (model_tokens.sum(-1) > 0)
            if not bool(learning.any()):
                # Nothing to learn from: no old log-probs, no sampler comparison, no TIS weights (none is read)
                batch["old_per_token_logps"] = None
                return batch
            from trl.models.utils import disable_gradient_checkpointing

            args, kwargs = held
            with torch.no_grad(), disable_gradient_checkpointing(self.model, self.args.gradient_checkpointing_kwargs):
                batch["old_per_token_logps"] = self._unpadded_logps_and_entropies(*args, **kwargs,
                                                                                  scored=model_tokens)[0]
        sampler_logps = batch.get("sampling_per_token_logps")
        if sampler_logps is None and self.importance_sampling_cap is not None:
            raise RuntimeError("the rollout returned no sampler log-probs: truncated importance sampling needs them "
                               "(or set importance_sampling: none)")
        if batch.get("old_per_token_logps") is None:
            # TRL leaves them out when every episode of the batch is trained on once, within one optimizer step
            # (minibatches = num_iterations = 1): nothing moves before each episode's loss, so the trainer's log-probs
            # before the update are those of the loss's own forward pass. The sampler comparison and the TIS weights
            # are taken there (_compute_loss): no separate forward pass over the batch, and none at all over the
            # episodes of a micro-batch without advantage.
            return batch
        if sampler_logps is None:
            return batch
        self._report_spread(mode, logp_mismatch(batch["old_per_token_logps"], sampler_logps, model_tokens),
                            mean="gspo/logp_mismatch_mean", max="gspo/logp_mismatch_max")
        if self.importance_sampling_cap is not None:
            batch["is_weight"] = truncated_importance_weights(batch["old_per_token_logps"], sampler_logps, model_tokens,
                                                              self.importance_sampling_cap)
        return batch

    def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep, *args, **kwargs):
        if self._holding_old_logps and not torch.is_grad_enabled():   # TRL's old-log-prob pass: held back
            if self._held_old_logps is not None:
                raise RuntimeError("GSPOTrainer: a second no-gradient log-prob pass in one generation batch (a reference "
                                   "model?); GSPO computes none")
            self._held_old_logps = ((model, input_ids, attention_mask, logits_to_keep, *args), kwargs)
            return input_ids.new_zeros((input_ids.size(0), logits_to_keep), dtype=torch.float32), None, None
        return self._unpadded_logps_and_entropies(model, input_ids, attention_mask, logits_to_keep, *args, **kwargs)

    def _unpadded_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep, batch_size=None,
                                      compute_entropy=False, compute_aux_loss=False, scored=None, **multimodal):
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
                model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy, compute_aux_loss,
                **multimodal)
        width, prompt_width = input_ids.size(1), input_ids.size(1) - logits_to_keep
        batch_size = batch_size or input_ids.size(0)
        logps, entropies, aux_losses = [], [], []
        for start in range(0, input_ids.size(0), batch_size):
            mask = attention_mask[start:start + batch_size]
            used = mask.any(0).nonzero()
            first = min(int(used[0]) if used.numel() else 0, prompt_width)          # never into the completion
            last = max(int(used[-1]) + 1 if used.numel() else width, prompt_width + 1)  # at least one completion column
            chunk_logps, chunk_entropies, aux = self._scored_logps_and_entropies(
                model, input_ids[start:start + batch_size, first:last], mask[:, first:last], last - prompt_width,
                None if scored is None else scored[start:start + batch_size, :last - prompt_width],
                compute_entropy, compute_aux_loss)
            logps.append(torch.nn.functional.pad(chunk_logps, (0, width - last)))
            if compute_entropy:
                entropies.append(torch.nn.functional.pad(chunk_entropies, (0, width - last)))
            if compute_aux_loss:
                aux_losses.append(aux)
        return (torch.cat(logps), torch.cat(entropies) if compute_entropy else None,
                torch.stack(aux_losses).mean() if compute_aux_loss else None)

    def _scored_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep, scored, compute_entropy,
                                    compute_aux_loss):
        """One chunk through the model with TRL's fused LM head (as TRL's text-only pass), a label only where the
        completion is `scored` (None: every completion token)."""
        labels = input_ids.masked_fill(attention_mask == 0, -100)
        labels[:, :-logits_to_keep] = -100
        if scored is not None:
            labels[:, -logits_to_keep:].masked_fill_(scored == 0, -100)
        extra = {"output_router_logits": True} if compute_aux_loss else {}
        with self.accelerator.autocast():
            outputs = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels, fused_lm_head=True,
                            **extra)
        return (outputs.log_probs[:, -logits_to_keep:],
                outputs.entropy[:, -logits_to_keep:] if compute_entropy else None,
                outputs.aux_loss if compute_aux_loss else None)

    # --- the loss ----------------------------------------------------------------------------------------------
    def _compute_loss(self, model, inputs):
        prompt_ids, completion_ids = inputs["prompt_ids"], inputs["completion_ids"]
        completion_mask = inputs["completion_mask"]
        model_tokens = model_token_mask(inputs)
        learning = (inputs["advantages"].abs() > NO_ADVANTAGE) & (model_tokens.sum(-1) > 0)
        if self.model.training and not bool(learning.any()) and self._can_skip_steps and self.accelerator.num_processes == 1:
            # Nothing to learn from this micro-batch: no forward or backward pass over its episodes (on 2 CPU cores a
            # 4k-token episode's is about a minute). The zero loss touches one weight so that backward runs; the
            # step's gradients are then dropped (no advantage anywhere) or this part adds nothing to them.
            self._tally.skipped_micro_batches += 1
            anchor = next(p for p in model.parameters() if p.requires_grad)
            return anchor.reshape(-1)[0] * 0.0
        logps, entropies, _ = self._unpadded_logps_and_entropies(
            model, torch.cat([prompt_ids, completion_ids], dim=1),
            torch.cat([inputs["prompt_mask"], completion_mask], dim=1), completion_ids.size(1), compute_entropy=True,
            scored=model_tokens)
        old_logps = inputs.get("old_per_token_logps")
        if old_logps is None:   # the batch is trained on once: the policy has not moved since sampling (see above)
            old_logps = logps.detach()
            sampler_logps = inputs.get("sampling_per_token_logps")
            if sampler_logps is not None:
                if self.model.training:
                    self._tally.mismatch.append(logp_mismatch(old_logps, sampler_logps, model_tokens))
                if self.importance_sampling_cap is not None:
                    inputs = {**inputs, "is_weight": truncated_importance_weights(
                        old_logps, sampler_logps, model_tokens, self.importance_sampling_cap)}

        ratio = sequence_ratio(logps, old_logps, model_tokens)                       # (B, 1)
        advantages = inputs["advantages"].unsqueeze(-1)                             # (B, 1)
        clipped_ratio = torch.clamp(ratio, 1 - self.epsilon_low, 1 + self.epsilon_high)
        per_token_loss = -torch.min(ratio * advantages, clipped_ratio * advantages)  # (B, 1): one value per episode
        if "is_weight" in inputs:
            per_token_loss = per_token_loss * inputs["is_weight"]                   # (B, T)
        loss = ((per_token_loss * model_tokens).sum(-1) / model_tokens.sum(-1).clamp(min=1)).mean()

        if self.model.training:
            self._add_to_tally(ratio.detach(), advantages, entropies, model_tokens, inputs.get("is_weight"))
            loss = loss / self.current_gradient_accumulation_steps
        return loss

    def _add_to_tally(self, ratio, advantages, entropies, model_tokens, is_weight) -> None:
        tally, trained = self._tally, model_tokens.sum(-1) > 0   # episodes with at least one model token
        ratio, advantages = ratio.squeeze(-1)[trained], advantages.squeeze(-1)[trained]
        tally.ratios.append(ratio)
        tally.clipped_low.append(((ratio < 1 - self.epsilon_low) & (advantages < 0)).float())
        tally.clipped_high.append(((ratio > 1 + self.epsilon_high) & (advantages > 0)).float())
        tally.entropies.append(entropies.detach()[model_tokens.bool()])
        if is_weight is not None:
            tally.is_weights.append(is_weight[model_tokens.bool()])
        tally.learning_episodes += int((advantages.abs() > NO_ADVANTAGE).sum())

    # --- the end of an optimizer step: report it, and skip it when nothing is to be learnt ---------------------
    def training_step(self, model, inputs, num_items_in_batch):
        loss = super().training_step(model, inputs, num_items_in_batch)
        if self.accelerator.sync_gradients:  # the step's last micro-batch: its gradient is complete, not yet applied
            self._close_step(model)
        return loss

    def _close_step(self, model) -> None:
        tally, self._tally = self._tally, _StepTally()
        device = self.accelerator.device

        def cat(parts: list[torch.Tensor]) -> torch.Tensor:
            return torch.cat(parts) if parts else torch.zeros(0, device=device)

        low, high = cat(tally.clipped_low), cat(tally.clipped_high)
        self._report_spread("train", cat(tally.ratios), mean="gspo/ratio_mean", min="gspo/ratio_min", max="gspo/ratio_max")
        self._report_spread("train", cat(tally.entropies), mean="entropy")
        # TRL's names for the clip fractions (here: shares of the step's episodes, the ratio being one per episode)
        self._report_spread("train", low, mean="clip_ratio/low_mean")
        self._report_spread("train", high, mean="clip_ratio/high_mean")
        self._report_spread("train", low + high, mean="clip_ratio/region_mean")
        if self.importance_sampling_cap is not None:
            self._report_spread("train", cat(tally.is_weights), mean="gspo/is_weight_mean", min="gspo/is_weight_min",
                                max="gspo/is_weight_max")
        # the sampler comparison when it was taken in the loss's forward pass (a batch trained on once)
        self._report_spread("train", cat(tally.mismatch), mean="gspo/logp_mismatch_mean", max="gspo/logp_mismatch_max")
        learning = self.accelerator.reduce(torch.tensor(tally.learning_episodes, device=device), reduction="sum")
        skip = int(learning) == 0 and self._can_skip_steps
        if skip:
            model.zero_grad(set_to_none=True)   # an optimizer leaves a parameter without a gradient untouched
        self._metrics["train"]["gspo/optimizer_step_skipped"].append(float(skip))

    def _report_spread(self, mode: str, values: torch.Tensor, **names: str) -> None:
        """Append the mean, min and/or max of `values` over every process to TRL's metrics under the given names
        (e.g. mean="gspo/ratio_mean"); nothing when no process has a value."""
        values = values.detach().double().to(self.accelerator.device)
        empty = values.numel() == 0
        local = torch.stack([values.sum(), values.new_tensor(float(values.numel())),
                             values.new_tensor(math.inf) if empty else values.min(),
                             values.new_tensor(-math.inf) if empty else values.max()])
        every = self.accelerator.gather(local.unsqueeze(0)).view(-1, 4)
        count = float(every[:, 1].sum())
        if count == 0:
            return
        spread = {"mean": float(every[:, 0].sum()) / count, "min": float(every[:, 2].min()), "max": float(every[:, 3].max())}
        for stat, name in names.items():
            self._metrics[mode][name].append(spread[stat])
