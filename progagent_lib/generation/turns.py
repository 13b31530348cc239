"""The generator interface and its implementations: every model the workbench runs is a `TurnGenerator`.

A generator continues token contexts by one assistant turn each, token ids in, token ids and their log-probs out:

- `HFTurnGenerator`: a transformers model in this process (one batched decode loop);
- `EngineTurnGenerator` (`engine_client.py`): the vLLM engine `progagent engine serve` runs, or any vLLM server;
- `VLLMServerTurnGenerator`: a `trl vllm-serve` server (the GPU recipe), through TRL's client;
- `ReplayTurns`: fixed turns (a teacher's), for checks that need no model.

`make_generator` (`factory.py`) picks one from a config. Whatever generated a turn, `decode_turn` reads it the one way:
the end-of-turn token closes it, special tokens in the text are kept (so `<tool_call>` markup parses), and the text is
parsed for tool calls. Training (`train.rollout`) and the chat policy (`policy.chat`) both read turns through it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import PolicyError
from ..harness.chat_format import ChatFormat
from ..harness.parsing import parse_tool_calls
from ..harness.turn import Turn

if TYPE_CHECKING:
    import torch


@dataclass
class TurnOutput:
    token_ids: list[int]
    logprobs: list[float]


class TurnGenerator(Protocol):
    """Continues each token context by one assistant turn (stopping at and including the end-of-turn token).

    May raise PolicyError: the batch's live episodes then end as infrastructure errors."""

    def __call__(self, contexts: list[list[int]], max_new_tokens: int) -> list[TurnOutput]: ...


def decode_turn(
    chat: ChatFormat,
    token_ids: list[int],
    tools: list[dict] | None,
    *,
    prefix: str = "",
    prompt_tokens: int | None = None,
) -> Turn:
    """One generated turn as the episode takes it. A turn that ends with the chat format's end-of-turn token is
    decoded without it and parsed for tool calls; one that ran out of tokens first comes back with `cut=True`
    and only its text (the episode records it and ends as `turn_cut`). `prefix` is text the turn was forced to
    start with (a prefill such as "<think>\\n"), which is part of what is parsed."""
    ended = bool(token_ids) and token_ids[-1] == chat.end_of_turn
    text = prefix + chat.tokenizer.decode(token_ids[:-1] if ended else token_ids, skip_special_tokens=False)
    if not ended:
        return Turn(text=text, cut=True, prompt_tokens=prompt_tokens, completion_tokens=len(token_ids))
    parsed = parse_tool_calls(text, tools)
    return Turn(
        text=parsed.content,
        tool_calls=parsed.tool_calls,
        parse_errors=parsed.errors,
        reasoning=parsed.reasoning,
        prompt_tokens=prompt_tokens,
        completion_tokens=len(token_ids),
    )


# --- implementations ---------------------------------------------------------------------------------
class HFTurnGenerator:
    """transformers on CPU: one batched decode loop continues every context by one turn.

    It keeps only the sampled tokens' log-probabilities (a full-vocabulary logits history is tokens x vocab
    x 4 bytes per episode, which is what ran a 2k-token GSPO rollout out of memory). Contexts are left-padded
    so each row's new tokens line up; a row stops at its end-of-turn token."""

    def __init__(
        self,
        model: Any,
        chat: ChatFormat,
        *,
        temperature: float = 1.0,
        do_sample: bool = True,
        top_p: float = 1.0,
        seed: int | None = None,
    ):
        if not 0 < top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {top_p}")
        self.model, self.chat = model, chat
        self.temperature, self.do_sample, self.top_p = temperature, do_sample and temperature > 0, top_p
        self.seed = seed  # seed: the sampler's own torch.Generator (None: torch's global one)
        self._rng: torch.Generator | None = None  # made at the first draw
        tokenizer = chat.tokenizer
        self.pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else chat.end_of_turn

    def __call__(self, contexts: list[list[int]], max_new_tokens: int) -> list[TurnOutput]:
        import torch

        device = self.model.device
        width = max(len(c) for c in contexts)
        input_ids = torch.tensor([[self.pad] * (width - len(c)) + c for c in contexts], device=device)
        attention = torch.tensor([[0] * (width - len(c)) + [1] * len(c) for c in contexts], device=device)
        rows = len(contexts)
        new_ids: list[list[int]] = [[] for _ in range(rows)]
        new_logprobs: list[list[float]] = [[] for _ in range(rows)]
        live = torch.ones(rows, dtype=torch.bool, device=device)
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                positions = (attention.cumsum(-1) - 1).clamp(min=0)
                out = self.model(input_ids=input_ids, attention_mask=attention, position_ids=positions, use_cache=True)
                cache, logits = out.past_key_values, out.logits[:, -1, :]
                for _ in range(max_new_tokens):
                    logits = logits.float()
                    if self.do_sample:
                        logprobs = torch.log_softmax(logits / self.temperature, dim=-1)
                        token = torch.multinomial(
                            self._nucleus(logprobs.exp()), 1, generator=self._generator()
                        ).squeeze(-1)
                    else:
                        logprobs = torch.log_softmax(logits, dim=-1)
                        token = logprobs.argmax(-1)
                    chosen = logprobs.gather(-1, token.unsqueeze(-1)).squeeze(-1)
                    for row in torch.nonzero(live).flatten().tolist():
                        new_ids[row].append(int(token[row]))
                        new_logprobs[row].append(float(chosen[row]))
                    live &= token != self.chat.end_of_turn
                    if not bool(live.any()):
                        break
                    token = torch.where(live, token, torch.full_like(token, self.pad))
                    attention = torch.cat([attention, live.long().unsqueeze(-1)], dim=-1)
                    positions = positions[:, -1:] + 1
                    out = self.model(
                        input_ids=token.unsqueeze(-1),
                        attention_mask=attention,
                        position_ids=positions,
                        past_key_values=cache,
                        use_cache=True,
                    )
                    cache, logits = out.past_key_values, out.logits[:, -1, :]
        finally:
            if was_training:
                self.model.train()
        return [TurnOutput(ids, lps) for ids, lps in zip(new_ids, new_logprobs)]

    def _generator(self) -> Any:
        if self.seed is None:
            return None
        if self._rng is None:
            import torch

            self._rng = torch.Generator(device=self.model.device).manual_seed(self.seed)
        return self._rng

    def _nucleus(self, probs: Any) -> Any:
        """The smallest set of tokens whose probability reaches top_p, renormalised (all of them when top_p is 1).
        The log-probs kept are the tempered distribution's, as the trainer scores them."""
        if self.top_p >= 1:
            return probs
        import torch

        ordered, order = probs.sort(dim=-1, descending=True)
        outside = ordered.cumsum(-1) - ordered > self.top_p  # tokens after the mass has reached top_p
        ordered = ordered.masked_fill(outside, 0.0)
        return torch.zeros_like(probs).scatter(-1, order, ordered)


class VLLMServerTurnGenerator:
    """vLLM server mode (the GPU path): TRL's VLLMClient, fed token ids, so the context is never re-tokenised."""

    def __init__(self, vllm_client: Any, *, temperature: float = 1.0):
        self.client, self.temperature = vllm_client, temperature

    def __call__(self, contexts: list[list[int]], max_new_tokens: int) -> list[TurnOutput]:
        try:
            out = self.client.generate(
                prompts=contexts, n=1, temperature=self.temperature, max_tokens=max_new_tokens, logprobs=0
            )
        except Exception as exc:
            raise PolicyError(f"the vLLM server failed to generate: {exc}") from exc
        return [
            TurnOutput(ids, [position[0] for position in logprobs])
            for ids, logprobs in zip(out["completion_ids"], out["logprobs"])
        ]


class ReplayTurns:
    """A turn source that plays fixed assistant turns (token lists, e.g. a teacher's) instead of sampling.

    `scripts[i]` holds the turns of episode i of the batch. An episode whose script is played out has finished
    (its last turn calls claim_done), which is how calls are matched to the live episodes."""

    def __init__(self, scripts: list[list[list[int]]]):
        self.queues = [list(s) for s in scripts]

    def __call__(self, contexts: list[list[int]], max_new_tokens: int) -> list[TurnOutput]:
        live = [q for q in self.queues if q]
        if len(live) != len(contexts):
            raise RuntimeError("a replayed episode ended before its script did: it diverged from the recorded one")
        return [TurnOutput(list(ids), [0.0] * len(ids)) for ids in (queue.pop(0) for queue in live)]
