"""Episodes in lockstep vs without it, on the same engine, the same model and the same instances, in one run.

    .venv/bin/python bench/rollout_modes.py [--model FOLDER|smollm2] [--episodes 24] [--tasks T1,T2] [--quick]
                                            [--url URL --served-name N]

`train.rollout.run_token_episodes` plays a batch of episodes on the engine without lockstep: each episode's next turn
is requested as soon as its last one was played. In lockstep (any other generator), each round waits for every live
episode's turn before any goes on, so the engine runs the round's last long turns with few requests in flight and
idles while the host steps the environments. Both arms here play `--episodes` held-out instances (seeds 1000+, the
tasks of `--tasks` in turn; default retail/restock_orders) under PTC, greedily, with cpu-smoke's evaluation budgets; the engine's prefix
cache is emptied before each arm so that neither reuses the other's prefills. Printed: each arm's seconds, generated
tokens and passes, the ratio, and how many episodes came out token for token the same (greedy, but batched numerics
can move a token). A trained checkpoint (`--model runs/cpu-smoke-pipeline/sft-ptc/final`) plays the episodes a run
evaluates; the base model's are shorter. `--quick` (2 episodes, short turns; the test suite runs it) checks the
machinery, not the figures.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from progagent_lib.generation.access import auth_headers  # noqa: E402
from progagent_lib.generation.sources import resolve_model_source  # noqa: E402


class Lockstep:
    """The engine's generator without its `continuous` mark: run_token_episodes then plays in lockstep."""

    def __init__(self, generate):
        self.generate = generate

    def __call__(self, contexts, max_new_tokens):
        return self.generate(contexts, max_new_tokens)


def play(url: str, served_name: str, model_path: str, episodes: int, quick: bool, tasks: list[str]) -> dict:
    from transformers import AutoTokenizer

    from progagent_lib import load_task
    from progagent_lib.generation.engine_client import EngineTurnGenerator
    from progagent_lib.harness import Limits
    from progagent_lib.harness.chat_format import ChatFormat
    from progagent_lib.train.rollout import RolloutSpec, run_token_episodes

    tokenizer = AutoTokenizer.from_pretrained(model_path)
    chat = ChatFormat(tokenizer, model_name=served_name)
    loaded = [load_task(REPO / "tasks" / task_id) for task_id in tasks]
    specs = [RolloutSpec(loaded[i % len(loaded)], "v0", 1000 + i // len(loaded)) for i in range(episodes)]
    limits = (Limits(max_turns=2, max_new_tokens=16, max_context_tokens=5120) if quick else
              Limits(max_turns=8, max_new_tokens=1024, max_context_tokens=5120, max_observation_chars=4000))
    generate = EngineTurnGenerator.from_tokenizer(url, served_name, tokenizer, temperature=0.0)
    arms = {"lockstep": Lockstep(generate), "continuous": generate}
    out: dict = {"model": served_name, "episodes": episodes, "tasks": tasks, "arms": {}}
    played = {}
    for arm, generator in arms.items():
        response = httpx.post(f"{url.removesuffix('/v1')}/reset_prefix_cache", headers=auth_headers(url), timeout=60)
        if response.status_code != 200:  # a server without vLLM's dev-mode routes: the arms would share prefills
            raise SystemExit(f"{url}: /reset_prefix_cache answered HTTP {response.status_code}; serve the model with "
                             "`progagent engine serve` (its dev-mode routes empty the prefix cache between the arms)")
        started = time.perf_counter()
        result = run_token_episodes(specs, "ptc", chat, generator, limits, policy_name=f"bench:{arm}")
        seconds = time.perf_counter() - started
        played[arm] = result
        out["arms"][arm] = {
            "seconds": round(seconds, 1),
            "generated_tokens": sum(sum(e.env_mask) for e in result),
            "passed": sum(e.reward == 1.0 for e in result),
            "errored": sum(e.errored for e in result),
            "turns": sum(e.turns for e in result),
        }
    lock, cont = out["arms"]["lockstep"], out["arms"]["continuous"]
    out["continuous_speedup"] = round(lock["seconds"] / cont["seconds"], 2)
    out["identical_episodes"] = sum(a.completion_ids == b.completion_ids
                                    for a, b in zip(played["lockstep"], played["continuous"]))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2", help="registered name or checkpoint folder (default smollm2)")
    parser.add_argument("--episodes", type=int, default=24, help="held-out instances per arm (default 24)")
    parser.add_argument("--tasks", default="retail/restock_orders", help="task ids, comma-separated, played in turn")
    parser.add_argument("--url", help="a running engine's /v1 root that serves --model (default: start one here)")
    parser.add_argument("--served-name", help="the name the running engine serves the model under (default --model)")
    parser.add_argument("--quick", action="store_true", help="2 episodes of short turns: the machinery, not the figures")
    args = parser.parse_args()
    episodes = 2 if args.quick else args.episodes
    if episodes < 1:
        parser.error(f"--episodes must be at least 1, got {episodes}")
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    missing = [t for t in tasks if not (REPO / "tasks" / t / "task.toml").is_file()]
    if not tasks or missing:
        parser.error(f"--tasks: no task {', '.join(missing) or '(none given)'} under tasks/")
    model_path = resolve_model_source(args.model)
    if args.url:
        result = play(args.url.rstrip("/"), args.served_name or args.model, model_path, episodes, args.quick, tasks)
    else:
        from progagent_lib.engine import EngineServer, free_port

        with EngineServer(args.model, free_port(), kv_cache_gib=4, max_model_len=5120) as server:
            result = play(server.base_url, server.served_name, model_path, episodes, args.quick, tasks)
    for arm, row in result["arms"].items():
        print(f"{arm}: {row['seconds']} s for {result['episodes']} episodes ({row['turns']} turns, "
              f"{row['generated_tokens']} tokens generated, {row['passed']} passed, {row['errored']} errored)")
    print(f"continuous / lockstep speed: {result['continuous_speedup']}x; "
          f"{result['identical_episodes']} of {result['episodes']} episodes token for token the same")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
