"""Generation throughput: the engine (vLLM server) vs transformers' `generate`, same model, same run.

    .venv/bin/python bench/engine.py [--model smollm2] [--new-tokens 256] [--quick] [--url http://127.0.0.1:P/v1]

For 1 and for 8 concurrent episodes, each continues its own chat prompt by exactly `--new-tokens` tokens
(end-of-turn ignored, so both sides do the same work):
- generate: one batched `model.generate` call over the left-padded prompts (what HFTurnGenerator does);
- engine: that many concurrent token-in/token-out requests to the server (what EngineTurnGenerator does, one
  per live episode), started here unless `--url` names a running one.
Printed: tokens/s of each and their ratio (engine / generate), plus the cost of one weight sync (save the
model folder, reload it in the server). Ratios are what to compare across machines; on CPU both sides share
the same cores, and the threads each side used are printed. `--quick` (a few tokens; the test suite runs it)
checks the machinery, not the figures.

    .venv/bin/python bench/engine.py --bindings [--model smollm2] [--new-tokens 256] [--quick]

The engine's CPU binding instead: one server with vLLM's own ("auto": the worker on every core but one, kept for its
scheduler) and one with the worker on every core (what EngineServer starts on a machine of at most 4 cores,
`engine.server.cpu_binding`), one after the other in the same run; tokens/s of each at 1, 8 and 24 concurrent
episodes and their ratio.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from progagent_lib.generation.access import auth_headers  # noqa: E402
from progagent_lib.generation.sources import resolve_model_source  # noqa: E402

TOPICS = ["tides", "bread", "volcanoes", "chess", "bees", "glass", "rivers", "clocks"]


def chat_prompts(tokenizer, n: int) -> list[list[int]]:
    prompts = []
    for i in range(n):
        messages = [{"role": "user", "content": f"Write a long essay about {TOPICS[i % len(TOPICS)]}."}]
        prompts.append(list(tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                                          return_dict=True)["input_ids"]))
    return prompts


def generate_throughput(model, tokenizer, prompts: list[list[int]], new_tokens: int) -> float:
    import torch

    width = max(len(p) for p in prompts)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    input_ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
    attention_mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    started = time.perf_counter()
    with torch.no_grad():
        out = model.generate(input_ids, attention_mask=attention_mask, max_new_tokens=new_tokens,
                             min_new_tokens=new_tokens, do_sample=True, temperature=1.0, top_k=0, top_p=1.0,
                             pad_token_id=pad)
    seconds = time.perf_counter() - started
    return (out.shape[1] - width) * len(prompts) / seconds


def engine_throughput(url: str, model_name: str, prompts: list[list[int]], new_tokens: int) -> float:
    headers = auth_headers(url)  # the engine's key, found by the URL (progagent_lib.generation.access)

    def one(prompt: list[int]) -> int:
        body = {"model": model_name, "prompt": prompt, "max_tokens": new_tokens, "min_tokens": new_tokens,
                "ignore_eos": True, "temperature": 1.0, "return_token_ids": True, "logprobs": 0}
        response = httpx.post(f"{url}/completions", json=body, headers=headers, timeout=3600)
        response.raise_for_status()
        return len(response.json()["choices"][0]["token_ids"])

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=len(prompts)) as pool:
        tokens = sum(pool.map(one, prompts))
    return tokens / (time.perf_counter() - started)


def run(url: str, model_name: str, model_path: str, new_tokens: int, concurrency=(1, 8)) -> dict:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from progagent_lib.engine.weights import sync_weights

    tokenizer = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32).eval()
    engine_throughput(url, model_name, chat_prompts(tokenizer, 1), 4)  # warm both sides up: first calls pay set-up
    generate_throughput(model, tokenizer, chat_prompts(tokenizer, 1), 4)
    rows = []
    for n in concurrency:
        prompts = chat_prompts(tokenizer, n)
        gen = generate_throughput(model, tokenizer, prompts, new_tokens)
        eng = engine_throughput(url, model_name, prompts, new_tokens)
        rows.append({"concurrent": n, "new_tokens": new_tokens, "generate_tokens_per_s": round(gen, 1),
                     "engine_tokens_per_s": round(eng, 1), "engine_over_generate": round(eng / gen, 2)})
    with tempfile.TemporaryDirectory() as folder:
        sync = sync_weights(model, url, folder)
    return {"model": model_name, "rows": rows, "torch_threads_generate": torch.get_num_threads(),
            "weight_sync_seconds": {k: round(v, 2) for k, v in sync.items()}}


def bindings(model: str, new_tokens: int, concurrency=(1, 8, 24)) -> dict:
    """Engine tokens/s under vLLM's own binding and under every core, same prompts, one server after the other."""
    import os
    from unittest import mock

    from transformers import AutoTokenizer

    from progagent_lib.engine import EngineServer, free_port
    from progagent_lib.engine.server import every_core

    tokenizer = AutoTokenizer.from_pretrained(resolve_model_source(model))
    arms = {"auto": "auto", "every core": every_core()}
    measured: dict[str, dict[int, float]] = {}
    for arm, binding in arms.items():
        with mock.patch.dict(os.environ, {"VLLM_CPU_OMP_THREADS_BIND": binding}):
            with EngineServer(model, free_port()) as server:
                engine_throughput(server.base_url, server.served_name, chat_prompts(tokenizer, 1), 4)  # warm-up
                measured[arm] = {n: engine_throughput(server.base_url, server.served_name, chat_prompts(tokenizer, n),
                                                      new_tokens) for n in concurrency}
    rows = [{"concurrent": n, "new_tokens": new_tokens, "auto_tokens_per_s": round(measured["auto"][n], 1),
             "every_core_tokens_per_s": round(measured["every core"][n], 1),
             "every_core_over_auto": round(measured["every core"][n] / measured["auto"][n], 2)} for n in concurrency]
    return {"model": model, "every_core": arms["every core"], "rows": rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2", help="registered name, folder or hub id (default smollm2)")
    parser.add_argument("--new-tokens", type=int, default=256, help="tokens generated per episode (default 256)")
    parser.add_argument("--url", help="a running engine's /v1 root that serves --model (default: start one here)")
    parser.add_argument("--served-name", help="the name the running engine serves the model under (default --model)")
    parser.add_argument("--quick", action="store_true", help="a few tokens: checks the machinery, not the figures")
    parser.add_argument("--bindings", action="store_true",
                        help="compare the engine's CPU bindings (vLLM's own vs every core) instead")
    args = parser.parse_args()
    new_tokens = 8 if args.quick else args.new_tokens
    if args.bindings:
        result = bindings(args.model, new_tokens)
        for row in result["rows"]:
            print(f"{row['concurrent']} concurrent, {row['new_tokens']} tokens each: vLLM's binding "
                  f"{row['auto_tokens_per_s']} tokens/s, every core ({result['every_core']}) "
                  f"{row['every_core_tokens_per_s']} tokens/s, ratio {row['every_core_over_auto']}x")
        print(json.dumps(result))
        return 0
    model_path = resolve_model_source(args.model)
    if args.url:
        result = run(args.url.rstrip("/"), args.served_name or args.model, model_path, new_tokens)
    else:
        from progagent_lib.engine import EngineServer, free_port

        with EngineServer(args.model, free_port()) as server:
            result = run(server.base_url, server.served_name, model_path, new_tokens)
    for row in result["rows"]:
        print(f"{row['concurrent']} concurrent, {row['new_tokens']} tokens each: generate {row['generate_tokens_per_s']} "
              f"tokens/s, engine {row['engine_tokens_per_s']} tokens/s, engine/generate {row['engine_over_generate']}x")
    sync = result["weight_sync_seconds"]
    print(f"weight sync (save folder + reload in the server): {sync['seconds_save']} s + {sync['seconds_reload']} s")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
