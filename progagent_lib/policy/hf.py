"""A local transformers model as a policy: `ChatPolicy` over `HFTurnGenerator` (see `policy.chat`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..generation.factory import GeneratorConfig, make_generator
from ..generation.rope import model_positions
from ..harness.chat_format import ChatFormat
from .chat import ChatPolicy


class HFPolicy(ChatPolicy):
    """`HFPolicy(model_or_path, tokenizer=None, ...)`: a causal LM by registered name, GGUF file, folder or hub id,
    or already loaded.

    The prompt is the tokenizer's chat template rendered with the tools (Qwen3 and Qwen3-Coder templates both work),
    the turn ends at the template's end-of-turn token, and the reply is parsed for Qwen3 JSON or Qwen3-Coder XML tool
    calls, exactly as in training. A malformed call is returned in `parse_errors`, which the episode loop answers
    with an error observation.

    Args:
        max_new_tokens: bound of one turn.
        temperature: 0 means greedy decoding; top_p: nucleus sampling (1: none).
        response_prefix: text the assistant turn is forced to start with (prefill), e.g. "<think>\\n".
        chat_template_kwargs: passed to the template, e.g. {"enable_thinking": False}.
        chat_template: "model" | "qwen3" | a .jinja path, for a model loaded here (registered names default to theirs).
    """

    def __init__(
        self,
        model_or_path: Any,
        tokenizer: Any = None,
        *,
        max_new_tokens: int = 1024,
        temperature: float = 0.7,
        top_p: float = 0.95,
        response_prefix: str = "",
        chat_template_kwargs: dict | None = None,
        device: str | None = None,
        name: str | None = None,
        chat_template: str | None = None,
        seed: int | None = None,
    ):
        if isinstance(model_or_path, (str, Path)):
            # A registered name (smollm2), a GGUF file, a saved folder or a hub id; see generation.sources.load_model.
            from ..generation.sources import load_model

            source = str(model_or_path)
            model, loaded_tokenizer = load_model(source, chat_template=chat_template)
            tokenizer = tokenizer or loaded_tokenizer
            name = name or f"hf:{source}"
        else:
            model = model_or_path
            name = name or f"hf:{getattr(model.config, 'name_or_path', '') or type(model).__name__}"
            if tokenizer is None:
                raise ValueError("HFPolicy was given a model object without a tokenizer: pass tokenizer=...")
        if getattr(tokenizer, "chat_template", None) is None:
            raise ValueError(f"the tokenizer of {name} has no chat template; tool calling needs one")
        model = model.to(device) if device else model
        model.eval()
        self.model = model
        chat = ChatFormat(tokenizer, model_name=name, template_kwargs=dict(chat_template_kwargs or {}))
        generator = make_generator(GeneratorConfig("transformers", temperature, seed, top_p=top_p), chat, model=model)
        super().__init__(
            generator,
            chat,
            max_new_tokens=max_new_tokens,
            response_prefix=response_prefix,
            name=name,
            max_positions=model_positions(model.config),
            model_metadata=getattr(model, "progagent_metadata", None),
        )
