"""A local transformers model as a policy: chat template with tools, generate, parse the tool calls."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from ..harness.episode import PolicyError
from ..harness.parsing import parse_tool_calls
from ..harness.trajectory import messages_for_chat_template
from .base import PolicyTurn


class HFPolicy:
    """`HFPolicy(model_or_path, tokenizer=None, ...)`: a causal LM by registered name, GGUF file, folder or hub id,
    or already loaded.

    The prompt is the tokenizer's chat template rendered with the tools (Qwen3 and Qwen3-Coder templates
    both work); the reply is parsed for Qwen3 JSON or Qwen3-Coder XML tool calls. A malformed call is
    returned in `parse_errors`, which the episode loop answers with an error observation.

    Args:
        max_new_tokens: bound of one turn.
        temperature: 0 means greedy decoding.
        response_prefix: text the assistant turn is forced to start with (prefill), e.g. "<think>\\n".
        chat_template_kwargs: passed to the template, e.g. {"enable_thinking": False}.
        chat_template: "model" | "qwen3" | a .jinja path, for a model loaded here (registered names default to theirs).
    """

    def __init__(self, model_or_path: Any, tokenizer: Any = None, *, max_new_tokens: int = 1024,
                 temperature: float = 0.7, top_p: float = 0.95, response_prefix: str = "",
                 chat_template_kwargs: dict | None = None, device: str | None = None, name: str | None = None,
                 chat_template: str | None = None):
        import torch

        if isinstance(model_or_path, (str, Path)):
            # A registered name (smollm2), a GGUF file, a saved folder or a hub id; see train.models.load_model.
            from ..train.models import load_model

            source = str(model_or_path)
            model, loaded_tokenizer = load_model(source, chat_template=chat_template)
            tokenizer = tokenizer or loaded_tokenizer
            self.name = name or f"hf:{source}"
        else:
            model = model_or_path
            self.name = name or f"hf:{getattr(model.config, 'name_or_path', '') or type(model).__name__}"
            if tokenizer is None:
                raise ValueError("HFPolicy was given a model object without a tokenizer: pass tokenizer=...")
        if getattr(tokenizer, "chat_template", None) is None:
            raise ValueError(f"the tokenizer of {self.name} has no chat template; tool calling needs one")
        # What a run records about the model (source, chat template name + sha256, conversion); see model_metadata.
        self.model_metadata = getattr(model, "progagent_metadata", None)
        self.model = model.to(device) if device else model
        self.model.eval()
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.top_p = top_p
        self.response_prefix = response_prefix
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self._torch = torch
        self._lock = threading.Lock()  # one generate at a time when episodes run in threads

    def prompt_ids(self, messages: list[dict], tools: list[dict]) -> list[int]:
        """The token ids of the context for the next assistant turn (prefill included)."""
        text = self.tokenizer.apply_chat_template(messages_for_chat_template(messages), tools=tools or None,
                                                  add_generation_prompt=True, tokenize=False, **self.chat_template_kwargs)
        return self.tokenizer.encode(text + self.response_prefix, add_special_tokens=False)

    def act(self, messages: list[dict], tools: list[dict]) -> PolicyTurn:
        torch = self._torch
        prompt = self.prompt_ids(messages, tools)
        limit = getattr(self.model.config, "max_position_embeddings", None)
        if limit is not None and len(prompt) >= limit:
            raise PolicyError(f"the context ({len(prompt)} tokens) no longer fits {self.name} ({limit} positions)")
        input_ids = torch.tensor([prompt], device=self.model.device)
        sampling = {"do_sample": True, "temperature": self.temperature, "top_p": self.top_p} if self.temperature > 0 else {"do_sample": False}
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        with self._lock, torch.no_grad():
            output = self.model.generate(input_ids=input_ids, attention_mask=torch.ones_like(input_ids),
                                         max_new_tokens=self.max_new_tokens, pad_token_id=pad, **sampling)
        completion = output[0, len(prompt):].tolist()
        # Special tokens (end of turn, padding) go; markup such as <tool_call> and <think> is kept.
        raw = self.response_prefix + self.tokenizer.decode(completion, skip_special_tokens=True)
        parsed = parse_tool_calls(raw, tools)
        return PolicyTurn(text=parsed.content, tool_calls=parsed.tool_calls, parse_errors=parsed.errors,
                          reasoning=parsed.reasoning, raw=raw, prompt_tokens=len(prompt), completion_tokens=len(completion))
