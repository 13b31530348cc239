"""Any OpenAI-compatible chat endpoint as a policy (vLLM, SGLang, hosted APIs), with retries and back-off."""

from __future__ import annotations

import json
import os
import random
import time
from typing import Any

import httpx

from ..generation.access import KEY_HELP, engine_api_key, is_loopback_host
from ..errors import PolicyError
from ..harness.parsing import parse_tool_calls
from ..harness.turn import Turn, turn_from_openai

# Worth retrying: rate limits, server overload and gateway errors. A 400 (bad request) will not get better.
RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
_MESSAGE_KEYS = {"role", "content", "tool_calls", "tool_call_id", "name"}


def _fix_for(status: int, text: str, model: str) -> str:
    """What to do about a refused request, where the reply makes it clear."""
    lowered = text.lower()
    if "tool-call-parser" in lowered or "tool_choice" in lowered and "auto" in lowered:
        return (
            "\nfix: start the server with tool calling on (vLLM: --enable-auto-tool-choice --tool-call-parser hermes "
            "and a chat template that renders tools; `progagent engine serve` does both)"
        )
    if status == 404 and "model" in lowered:
        return f"\nfix: the server does not serve a model named {model!r}; write the name it serves after '#' (GET /v1/models lists them)"
    if status in (401, 403):
        return f"\nfix: set OPENAI_API_KEY (or pass api_key) to a key this server accepts; for the workbench's engine, {KEY_HELP}"
    return ""


class OpenAIPolicy:
    """`OpenAIPolicy(base_url, model, api_key=None)`: POSTs to `{base_url}/chat/completions`.

    Without `api_key`, a loopback `base_url` gets the key of the workbench's engine there if one runs
    (`generation.access.engine_api_key`: $PROGAGENT_ENGINE_API_KEY or the server's key file); otherwise, and
    for every other URL, $OPENAI_API_KEY is sent. The engine's key never goes to a remote API.

    A failed request is retried `max_retries` times, waiting `backoff * 2**attempt` seconds (with
    jitter, at most `max_backoff`, or the server's Retry-After); after that the episode ends with a
    PolicyError. Servers that return tool calls as text (no tool parser) are parsed like a local model.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        temperature: float = 0.7,
        max_tokens: int | None = 4096,
        max_retries: int = 5,
        backoff: float = 1.0,
        max_backoff: float = 60.0,
        timeout: float = 300.0,
        extra_body: dict | None = None,
        tokenizer: Any = None,
        name: str | None = None,
    ):
        self.base_url = base_url.rstrip("/")
        self.model = model
        if api_key is None:
            local = is_loopback_host(httpx.URL(self.base_url).host)
            api_key = (engine_api_key(self.base_url) if local else None) or os.environ.get("OPENAI_API_KEY")
        self.api_key = api_key
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.extra_body = dict(extra_body or {})
        self.tokenizer = tokenizer
        self.name = name or f"openai:{model}"
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        self.client = httpx.Client(timeout=timeout, headers=headers)
        self.attempts = 0  # requests sent, retries included (for tests and logs)

    def request_body(self, messages: list[dict], tools: list[dict]) -> dict:
        # Only the standard keys: some APIs reject what they do not know (e.g. reasoning_content).
        clean = [{k: v for k, v in m.items() if k in _MESSAGE_KEYS} for m in messages]
        body = {"model": self.model, "messages": clean, "temperature": self.temperature, **self.extra_body}
        if tools:
            body["tools"] = tools
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        return body

    def _post(self, body: dict) -> dict:
        url = f"{self.base_url}/chat/completions"
        last_problem = ""
        for attempt in range(self.max_retries + 1):
            self.attempts += 1
            wait = min(self.max_backoff, self.backoff * 2**attempt) * (0.5 + random.random() / 2)
            try:
                response = self.client.post(url, json=body)
            except httpx.HTTPError as exc:  # connection refused, reset, timeout
                last_problem = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code == 200:
                    try:
                        return response.json()
                    except json.JSONDecodeError:
                        last_problem = f"the reply is not JSON: {response.text[:200]}"
                elif response.status_code in RETRY_STATUS:
                    last_problem = f"HTTP {response.status_code}: {response.text[:200]}"
                    retry_after = response.headers.get("retry-after", "")
                    if retry_after.replace(".", "", 1).isdigit():
                        wait = min(self.max_backoff, float(retry_after))
                else:
                    raise PolicyError(
                        f"{url} refused the request with HTTP {response.status_code}: {response.text[:500]}"
                        f"{_fix_for(response.status_code, response.text, self.model)}"
                    )
            if attempt < self.max_retries:
                time.sleep(wait)
        hint = (
            (
                "; is the server running at that address? (a local one: `progagent engine serve --model MODEL "
                "--port PORT`)"
            )
            if last_problem.startswith(("ConnectError", "ConnectTimeout", "RemoteProtocolError"))
            else ""
        )
        raise PolicyError(f"{url} failed {self.max_retries + 1} times; last problem: {last_problem}{hint}")

    def act(self, messages: list[dict], tools: list[dict]) -> Turn:
        reply = self._post(self.request_body(messages, tools))
        try:
            message = reply["choices"][0]["message"]
            if not isinstance(message, dict):
                raise TypeError
        except (KeyError, IndexError, TypeError):
            raise PolicyError(
                f"unexpected reply from {self.base_url}/chat/completions (no choices[0].message): "
                f"{json.dumps(reply)[:500]}"
            ) from None
        turn = turn_from_openai(message, reply.get("usage"))
        if not (turn.text or turn.reasoning or message.get("tool_calls")) and turn.completion_tokens == 0:
            # Not a model that chose to say nothing (its end-of-turn token would count): the server produced nothing.
            raise PolicyError(
                f"{self.base_url}/chat/completions returned a turn with no tokens "
                f"(finish_reason {reply['choices'][0].get('finish_reason')!r}); check the server's log"
            )
        if not turn.tool_calls and not turn.parse_errors and "<tool_call>" in turn.text:
            # a server without a tool-call parser hands the model's markup back as text: read it as training does
            parsed = parse_tool_calls(turn.text, tools)
            turn.text, turn.tool_calls, turn.parse_errors = parsed.content, parsed.tool_calls, parsed.errors
            turn.reasoning = turn.reasoning or parsed.reasoning
        return turn

    def close(self) -> None:
        self.client.close()
