"""Token in, token out against a vLLM server: the training rollout's TurnGenerator, served by the engine.

One POST to `/v1/completions` carries every context of the batch as a list of token ids (vLLM batches them
itself); `return_token_ids` gives the sampled ids back, `logprobs: 0` the log-prob of each sampled token.
With a `seed`, vLLM would seed every prompt of one request alike, so the rollouts of a GSPO group (the same
context) would be one sample repeated: each context then gets a request of its own, all in flight at once, with
a seed of its own drawn from (seed, call, position), so a group's samples differ. Requests in flight together
are batched by vLLM, and batched numerics (bfloat16 on CPU) can move a sampled token, so a rerun of concurrent
requests replays only approximately; with `concurrency=1` they go one at a time and a rerun replays exactly
(observed: 0 of 24 samples differed one at a time, 9 of 24 concurrently; `tests/engine/test_engine.py` checks the former).
It also takes one-context calls from several threads at once (`continuous`): `train.rollout` then plays episodes
without lockstep and names each turn's seed by (batch, episode, turn) through `seed_keys`, so the seeds do not
depend on which request happened to be sent first.
Contexts are never re-tokenised, so what the trainer scores is exactly what the engine generated. Each turn
stops at the end-of-turn token, which is kept (as `HFTurnGenerator` keeps it).
"""

from __future__ import annotations

import hashlib
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

import httpx

from .turns import TurnOutput
from .access import KEY_HELP, auth_headers
from ..errors import EngineRequestError


class EngineTurnGenerator:
    """`EngineTurnGenerator(base_url, model, end_of_turn_id)`: `__call__(contexts, max_new_tokens) -> [TurnOutput]`.

    `base_url` is the server's OpenAI root (`http://127.0.0.1:P/v1`), `model` its served name (or a LoRA
    adapter's name), `api_key` the server's key (default: found by the URL, `access.engine_api_key`). A failed
    request, a server that is gone or a reply without tokens raises EngineRequestError (a PolicyError), naming
    the server and the fix.
    """

    thread_safe = True  # calls from several threads at once: one HTTP client, the server batches their requests
    continuous = True  # one-context calls with `seed_keys`: train.rollout plays episodes without lockstep

    def __init__(
        self,
        base_url: str,
        model: str,
        end_of_turn_id: int | Sequence[int],
        *,
        temperature: float = 1.0,
        top_p: float = 1.0,
        timeout: float = 1800.0,
        seed: int | None = None,
        concurrency: int = 64,
        api_key: str | None = None,
    ):
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1 (requests in flight at once), got {concurrency}")
        self.base_url, self.model = base_url.rstrip("/"), model
        self.stop_token_ids = [end_of_turn_id] if isinstance(end_of_turn_id, int) else list(end_of_turn_id)
        self.temperature, self.top_p, self.seed, self.concurrency = temperature, top_p, seed, concurrency
        self.calls = 0  # turns generated so far: with `seed`, each call's requests get seeds of their own
        self._calls_lock = threading.Lock()
        self.client = httpx.Client(
            timeout=timeout,
            headers=auth_headers(self.base_url, api_key),
            limits=httpx.Limits(max_connections=256, max_keepalive_connections=64),
        )

    @classmethod
    def from_tokenizer(
        cls, base_url: str, model: str, tokenizer: Any, end_of_turn: str | None = None, **kwargs: Any
    ) -> "EngineTurnGenerator":
        """The end-of-turn token is the one the tokenizer's chat template writes after an assistant message."""
        if end_of_turn is None:
            from .chat_templates import end_of_turn_token

            end_of_turn = end_of_turn_token(tokenizer)
        eot = tokenizer.convert_tokens_to_ids(end_of_turn)
        if eot is None or eot == tokenizer.unk_token_id:
            raise ValueError(f"the tokenizer has no {end_of_turn!r} token; pass end_of_turn=<its end-of-turn token>")
        return cls(base_url, model, eot, **kwargs)

    def request_body(self, contexts: list[list[int]], max_new_tokens: int, seed: int | None = None) -> dict:
        body = {
            "model": self.model,
            "prompt": contexts,
            "max_tokens": max_new_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "top_k": -1,
            "logprobs": 0,
            "return_token_ids": True,
            "stop_token_ids": self.stop_token_ids,
            "skip_special_tokens": False,
            "spaces_between_special_tokens": False,
        }
        if seed is not None:
            body["seed"] = seed
        return body

    def request_seeds(self, n: int, keys: Sequence[tuple[object, ...]] | None = None) -> list[int | None]:
        """One seed per context of this call: distinct within the call and across calls (None: unseeded). With
        `keys` (one per context), each seed is a hash of the run's seed and its key instead of the call count."""
        if self.seed is None:
            return [None] * n
        if keys is not None:
            return [_keyed_seed(self.seed, key) for key in keys]
        return [(self.seed * 1_000_003 + self.calls * 65_537 + i) % (2**31 - 1) for i in range(n)]

    def reserve_call(self) -> int:
        """A call number of its own, for a batch whose turns are then named by `seed_keys=(call, episode, turn)`."""
        with self._calls_lock:
            self.calls += 1
            return self.calls - 1

    def __call__(
        self, contexts: list[list[int]], max_new_tokens: int, *, seed_keys: Sequence[tuple[object, ...]] | None = None
    ) -> list[TurnOutput]:
        if not contexts:
            return []
        if seed_keys is not None and len(seed_keys) != len(contexts):
            raise ValueError(f"{len(seed_keys)} seed keys for {len(contexts)} contexts")
        with self._calls_lock:  # distinct seeds when threads call at once
            seeds = self.request_seeds(len(contexts), seed_keys)
            if seed_keys is None:
                self.calls += 1
        if self.seed is None or self.temperature <= 0 or len(contexts) == 1:
            return self._complete(contexts, max_new_tokens, seeds[0])
        with ThreadPoolExecutor(max_workers=min(len(contexts), self.concurrency)) as pool:
            parts = list(
                pool.map(lambda pair: self._complete([pair[0]], max_new_tokens, pair[1]), zip(contexts, seeds))
            )
        return [turn for part in parts for turn in part]

    def _complete(self, contexts: list[list[int]], max_new_tokens: int, seed: int | None) -> list[TurnOutput]:
        url = f"{self.base_url}/completions"
        try:
            response = self.client.post(url, json=self.request_body(contexts, max_new_tokens, seed))
        except httpx.HTTPError as exc:
            raise EngineRequestError(
                f"{url}: {type(exc).__name__}: {exc}; is the engine running? start it with "
                f"`progagent engine serve --model {self.model} --port PORT`"
            ) from exc
        if response.status_code == 401:
            raise EngineRequestError(
                f"{url} refused the request (HTTP 401): the engine's API key is missing or stale; {KEY_HELP}"
            )
        if response.status_code != 200:
            raise EngineRequestError(f"{url} answered HTTP {response.status_code}: {response.text[:500]}")
        try:
            choices = sorted(response.json()["choices"], key=lambda c: c["index"])
        except (ValueError, KeyError, TypeError):
            raise EngineRequestError(f"{url} sent a reply without choices: {response.text[:300]}") from None
        if len(choices) != len(contexts):
            raise EngineRequestError(f"{url} answered {len(choices)} completions for {len(contexts)} contexts")
        turns = []
        for choice in choices:
            ids = choice.get("token_ids") or []
            logprobs = (choice.get("logprobs") or {}).get("token_logprobs") or []
            if not ids or len(logprobs) != len(ids):
                raise EngineRequestError(
                    f"{url} returned {len(ids)} tokens and {len(logprobs)} log-probs for a turn (finish_reason "
                    f"{choice.get('finish_reason')!r}); a vLLM server that knows `return_token_ids` is needed "
                    "(vllm>=0.10.2; `make engine` installs one)"
                )
            turns.append(TurnOutput(list(ids), [float(x) for x in logprobs]))
        return turns

    def close(self) -> None:
        self.client.close()


def _keyed_seed(seed: int, key: tuple[object, ...]) -> int:
    digest = hashlib.blake2b(repr((seed, *key)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % (2**31 - 1)
