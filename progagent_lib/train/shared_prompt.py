"""A group's prompt through the model once per optimizer step, instead of once per episode.

Every episode of a GSPO group starts with the same prompt (the system prompt, the tool schemas, the request): on the
cpu-smoke and cpu-study profiles about 1.5k of an episode's 3.1k tokens. TRL's loss runs each episode whole, so an
optimizer step over a group of 8 computes the prompt 8 times, forward and backward. Here the prompt, less its last
token, runs through the backbone once per optimizer step (with its graph); each episode's forward starts from its keys
and values, and its backward leaves their gradient on them. When the step's last micro-batch has run its backward,
the summed gradient goes back through the prompt's graph once. The weights' gradients are those of the whole-episode
passes (a sum over episodes is linear), up to floating-point order; `tests/train/test_shared_prompt.py` compares them.

Where it applies: training with gradients on (all the weights, or LoRA adapters), one process (under DDP the prompt's backward would come after the
gradients were all-reduced), micro-batches of one episode, no activation checkpointing (which recomputes the forward
without a cache), a text-only model whose backbone takes a `cache` (transformers 5). Elsewhere each episode runs whole, as
TRL runs it. An episode's prompt is found by its tokens: a step whose episodes come from two prompts keeps two.
"""

from __future__ import annotations

from typing import Any

import torch

SHORTEST_SHARED_PROMPT = 32  # tokens: below this a second graph costs more than it saves


class _Prompt:
    """One prompt's keys and values: `graph` as the backbone computed them, `leaves` the detached copies episodes use."""

    def __init__(self, pairs: list[tuple[torch.Tensor, torch.Tensor]]):
        self.graph = [tensor for pair in pairs for tensor in pair]
        self.leaves = [tensor.detach().requires_grad_() for tensor in self.graph]

    def cache(self) -> Any:
        from transformers import DynamicCache

        # each layer's update concatenates: the leaves stay as they are
        return DynamicCache(ddp_cache_data=zip(self.leaves[0::2], self.leaves[1::2]))

    def backward(self) -> None:
        flowing = [(node, leaf.grad) for node, leaf in zip(self.graph, self.leaves) if leaf.grad is not None]
        if flowing:
            torch.autograd.backward([node for node, _ in flowing], [grad for _, grad in flowing])


def _backbone(model: Any) -> Any | None:
    """The transformer under the LM head: transformers' `base_model`; under LoRA (peft), that of the adapted model,
    whose layers carry the adapters. None: no backbone to run apart."""
    inner = model.get_base_model() if callable(getattr(model, "get_base_model", None)) else model
    backbone = getattr(inner, "base_model", None)
    return None if backbone is None or backbone is inner else backbone


class SharedPrompts:
    """The prompts of the current optimizer step. `forward` plays one episode from its prompt's cache (None: it does
    not apply; run the episode whole); `backward` sends the step's prompt gradients through, at the step's end."""

    def __init__(self) -> None:
        self._prompts: dict[tuple[int, ...], _Prompt] = {}
        self.prompt_tokens_saved = 0  # prompt tokens not recomputed (forward and backward), over the run

    def forward(
        self,
        model: Any,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        labels: torch.Tensor,
        logits_to_keep: int,
        autocast: Any,
    ) -> Any | None:
        """The fused-head outputs of one episode (`input_ids` (1, L), its completion the last `logits_to_keep`
        positions), computed from its prompt's shared keys and values; their log-probs and entropies cover exactly
        the completion's positions, as the whole-episode pass's last `logits_to_keep` do."""
        prefix = input_ids.size(1) - logits_to_keep - 1  # the prompt less its last token, which predicts the first
        if input_ids.size(0) != 1 or prefix < SHORTEST_SHARED_PROMPT or not bool(attention_mask[:, :prefix].all()):
            return None
        backbone = _backbone(model)
        if backbone is None:
            return None
        key = tuple(input_ids[0, :prefix].tolist())
        prompt = self._prompts.get(key)
        if prompt is None:
            with autocast():
                out = backbone(input_ids=input_ids[:, :prefix], use_cache=True)
            pairs = [(layer.keys, layer.values) for layer in out.cache.layers]
            prompt = self._prompts[key] = _Prompt(pairs)
        else:
            self.prompt_tokens_saved += prefix
        with autocast():
            return model(
                input_ids=input_ids[:, prefix:],
                attention_mask=attention_mask,
                cache=prompt.cache(),
                labels=labels[:, prefix:],
                fused_lm_head=True,
            )

    def backward(self) -> None:
        """The step's prompt gradients through each prompt's graph, then the prompts dropped (the weights move)."""
        prompts, self._prompts = self._prompts, {}
        for prompt in prompts.values():
            prompt.backward()
