"""Two evaluations of one checkpoint one after the other vs at once (`train.evaluate.evaluate_together`), in one run.

    .venv/bin/python bench/evaluate_together.py [--model FOLDER|smollm2] [--samples 16] [--instances 24] [--quick]
                                                [--url URL --served-name N]

After GSPO the pipeline plays the GSPO model's paired-probe samples (the trained prompts, sampled at T = 0.7) and its
held-out evaluation (greedy) beside each other on the engine. Both arms here play the same two evaluations with
cpu-smoke's budgets: the probe's `--samples` samples of seeds 5, 6 and 11 of retail/restock_orders (the prompts GSPO
trained on at 7b8d06b, in waves of 32 as cpu-smoke's sampling_batch_size), and the greedy episodes of `--instances`
held-out seeds (1000 on, in one batch as cpu-smoke's eval). "together" runs first, so a warm machine favours the
other arm; the engine's prefix cache is emptied before each arm. Printed: each arm's seconds, episodes and passes,
and the ratio. A trained checkpoint (`--model runs/cpu-smoke/gspo-ptc/final`) plays the episodes a run plays; the
base model's end at their first turn. `--quick` (a few episodes of short turns; the test suite runs it) checks the
machinery, not the figures.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from progagent_lib.generation.access import auth_headers  # noqa: E402

PROBE_SEEDS = [5, 6, 11]
TASK = "retail/restock_orders"


def evaluations(url: str, served_name: str, model: str, samples: int, instances: int, quick: bool, out: Path):
    from progagent_lib.train.evaluate import EvalConfig

    budgets = (dict(max_turns=2, max_new_tokens=16, max_context_tokens=5120) if quick else
               dict(max_turns=8, max_new_tokens=1024, max_context_tokens=5120, max_observation_chars=4000))
    common = dict(model=model, engine_url=url, engine_model=served_name, tasks_root=str(REPO / "tasks"),
                  harnesses=["ptc"], **budgets)
    probe = EvalConfig(stage="probe", output_dir=str(out / "probe"), temperature=0.7, samples=samples,
                       batch_size=32, instances=[[TASK, "v0", s] for s in PROBE_SEEDS[: 1 if quick else None]],
                       **common)
    held_out = EvalConfig(stage="held-out", output_dir=str(out / "held-out"), temperature=0.0,
                          batch_size=max(instances, 1), instances=[[TASK, "v0", 1000 + i] for i in range(instances)],
                          **common)
    return probe, held_out


def run(url: str, served_name: str, model: str, samples: int, instances: int, quick: bool) -> dict:
    from progagent_lib.train.evaluate import evaluate, evaluate_together

    out: dict = {"model": model, "samples": samples, "instances": instances, "arms": {}}
    with tempfile.TemporaryDirectory(prefix="bench-together-") as folder:
        for arm in ("together", "one after the other"):
            response = httpx.post(f"{url.removesuffix('/v1')}/reset_prefix_cache", headers=auth_headers(url),
                                  timeout=60)
            if response.status_code != 200:  # a server without vLLM's dev-mode routes: the arms would share prefills
                raise SystemExit(f"{url}: /reset_prefix_cache answered HTTP {response.status_code}; serve the model "
                                 "with `progagent engine serve` (its dev-mode routes empty the prefix cache)")
            configs = evaluations(url, served_name, model, samples, instances, quick, Path(folder) / arm.replace(" ", "-"))
            started = time.perf_counter()
            results = evaluate_together(configs) if arm == "together" else [evaluate(c) for c in configs]
            seconds = time.perf_counter() - started
            episodes = [t for trajectories, _ in results for t in trajectories]
            out["arms"][arm] = {
                "seconds": round(seconds, 1),
                "episodes": len(episodes),
                "passed": sum(t.reward == 1.0 for t in episodes),
                "errored": sum(t.errored for t in episodes),
                "turns": sum(t.turns for t in episodes),
            }
    out["together_speedup"] = round(out["arms"]["one after the other"]["seconds"] / out["arms"]["together"]["seconds"],
                                    2)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2", help="registered name or checkpoint folder (default smollm2)")
    parser.add_argument("--samples", type=int, default=16, help="probe samples per prompt (default 16, cpu-smoke's)")
    parser.add_argument("--instances", type=int, default=24, help="held-out greedy instances (default 24)")
    parser.add_argument("--url", help="a running engine's /v1 root (default: start one here)")
    parser.add_argument("--served-name", help="the name the running engine serves the model under (default --model)")
    parser.add_argument("--quick", action="store_true", help="a few short episodes: the machinery, not the figures")
    args = parser.parse_args()
    samples, instances = (2, 2) if args.quick else (args.samples, args.instances)
    if samples < 1 or instances < 1:
        parser.error(f"--samples and --instances must be at least 1, got {samples} and {instances}")
    if args.url:
        result = run(args.url.rstrip("/"), args.served_name or args.model, args.model, samples, instances, args.quick)
    else:
        from progagent_lib.engine import EngineServer, free_port

        with EngineServer(args.model, free_port(), kv_cache_gib=4, max_model_len=5120) as server:
            result = run(server.base_url, server.served_name, args.model, samples, instances, args.quick)
    for arm, row in result["arms"].items():
        print(f"{arm}: {row['seconds']} s for {row['episodes']} episodes ({row['turns']} turns, {row['passed']} "
              f"passed, {row['errored']} errored)")
    print(f"together / one after the other speed: {result['together_speedup']}x")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
