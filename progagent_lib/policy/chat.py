"""A generator as a policy: the one chat adapter every token-level model goes through.

`ChatPolicy(generator, chat)` renders the conversation with the model's own chat template (`ChatFormat`, the
renders training uses), asks the `TurnGenerator` for one turn, and reads it with `decode_turn`, the function the
training rollouts read turns with. So a model is rendered and decoded one way whether it trains, is evaluated or
plays an episode through `run_episode`, the MCP server or a notebook, whatever generates (transformers here, the
vLLM engine, a TRL vLLM server).
"""

from __future__ import annotations

import threading
from contextlib import nullcontext
from typing import Any

from ..errors import ContextFull
from ..generation.turns import TurnGenerator, decode_turn
from ..harness.chat_format import ChatFormat
from ..harness.turn import Turn


class ChatPolicy:
    """`ChatPolicy(generator, chat, max_new_tokens=1024, response_prefix="", name=...)`: `act(messages, tools)`.

    Args:
        generator: any `TurnGenerator` (`progagent_lib.generation.make_generator`).
        chat: the model's `ChatFormat` (its template, end-of-turn token and template kwargs).
        max_new_tokens: bound of one turn; a turn that reaches it before its end-of-turn token is cut (the episode
            records it and ends as `turn_cut`).
        response_prefix: text the assistant turn is forced to start with (prefill), e.g. "<think>\\n".
        max_positions: the model's context length, when known: a longer context raises ContextFull (the episode
            ends as max_context_tokens).
    """

    def __init__(
        self,
        generator: TurnGenerator,
        chat: ChatFormat,
        *,
        max_new_tokens: int = 1024,
        response_prefix: str = "",
        name: str = "",
        max_positions: int | None = None,
        model_metadata: dict | None = None,
    ):
        self.generator, self.chat = generator, chat
        self.max_new_tokens, self.response_prefix, self.max_positions = max_new_tokens, response_prefix, max_positions
        self.name = name or f"chat:{chat.model_name}"
        self.model_metadata = model_metadata  # what a run records about the model (source, template, conversion)
        self._prefix_ids = chat.tokenizer.encode(response_prefix, add_special_tokens=False) if response_prefix else []
        # One generate at a time when episodes run in threads, unless the generator serves concurrent calls (a
        # server's client: the server batches them).
        self._lock = None if getattr(generator, "thread_safe", False) else threading.Lock()

    @property
    def tokenizer(self) -> Any:
        return self.chat.tokenizer

    def prompt_ids(self, messages: list[dict], tools: list[dict]) -> list[int]:
        """The token ids of the context for the next assistant turn (prefill included)."""
        return self.chat.prompt_ids(messages, tools) + self._prefix_ids

    def act(self, messages: list[dict], tools: list[dict]) -> Turn:
        prompt = self.prompt_ids(messages, tools)
        if self.max_positions is not None and len(prompt) >= self.max_positions:
            raise ContextFull(
                f"the context ({len(prompt)} tokens) no longer fits {self.name} ({self.max_positions} positions)"
            )
        with self._lock or nullcontext():
            turn = self.generator([prompt], self.max_new_tokens)[0]
        return decode_turn(self.chat, turn.token_ids, tools, prefix=self.response_prefix, prompt_tokens=len(prompt))

    def close(self) -> None:
        close = getattr(self.generator, "close", None)
        if close is not None:
            close()
