"""The constructor model: anything that turns chat messages into text.

`OpenAIConstructor` talks to any OpenAI-compatible endpoint (vLLM, SGLang, a hosted API). Tests use a
scripted constructor in its place, because no remote model can be reached here.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol, cast

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam


class Constructor(Protocol):
    def complete(self, messages: list[dict]) -> str: ...


class ConstructorError(Exception):
    """The constructor endpoint failed after retries, or answered in an unusable form."""


class OpenAIConstructor:
    """Chat completions from an OpenAI-compatible endpoint, with retries and exponential back-off."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        temperature: float = 0.7,
        max_tokens: int = 16000,
        retries: int = 4,
        backoff: float = 2.0,
        timeout: float = 600.0,
    ):
        import httpx
        from openai import OpenAI

        from ..generation.access import engine_api_key, is_loopback_host

        if api_key is None and is_loopback_host(httpx.URL(base_url).host):  # the workbench's engine, if it runs there
            api_key = engine_api_key(base_url)
        self.client = OpenAI(base_url=base_url, api_key=api_key or "EMPTY", timeout=timeout, max_retries=0)
        self.model, self.temperature, self.max_tokens = model, temperature, max_tokens
        self.retries, self.backoff = retries, backoff

    def complete(self, messages: list[dict]) -> str:
        # The protocol's plain {"role": ..., "content": ...} dicts are OpenAI's message shape.
        chat_messages = cast("list[ChatCompletionMessageParam]", messages)
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            try:
                response = self.client.chat.completions.create(
                    model=self.model, messages=chat_messages, temperature=self.temperature, max_tokens=self.max_tokens
                )
                return response.choices[0].message.content or ""
            except Exception as exc:  # noqa: BLE001 - network errors, 5xx, rate limits: retry with back-off
                last = exc
                if attempt < self.retries:
                    time.sleep(self.backoff * 2**attempt)
        raise ConstructorError(f"constructor endpoint failed after {self.retries + 1} attempts: {last}") from last
