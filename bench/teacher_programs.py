"""Size of the oracle teacher's program turns, in a model's tokens, over the task pool.

    .venv/bin/python bench/teacher_programs.py [--tasks tasks] [--model smollm2] [--quick]

For every task, the PTC and Hybrid teachers' programs are built (no episode is run) and each program turn's
tool-call arguments are counted as the chat template writes them (JSON). Prints min / median / max per
harness and the largest turns. --quick: the first 5 tasks and a byte-level count (no model needed).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from progagent_lib import load_pool  # noqa: E402
from progagent_lib.harness.spec import PROGRAMMATIC_TOOL_CALL  # noqa: E402
from progagent_lib.policy.oracle import HybridOracleEpisode, ProgramOracleEpisode  # noqa: E402


def program_turns(task, harness: str) -> list[str]:
    """The arguments (as JSON) of each programmatic_tool_call turn the teacher plans for `task`."""
    episode = (ProgramOracleEpisode if harness == "ptc" else HybridOracleEpisode)(task, harness)
    return [json.dumps({"code": payload[0]}, ensure_ascii=False)
            for kind, payload in episode.plan if kind == "program"]


def measure(tasks, count) -> dict[str, list[tuple[str, int]]]:
    """{harness: [(task id, tokens of its largest program turn)]}."""
    return {harness: [(task.id, max(count(text) for text in program_turns(task, harness))) for task in tasks]
            for harness in ("ptc", "hybrid")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="tasks")
    parser.add_argument("--model", default="smollm2", help="whose tokenizer counts (a load_model source)")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    tasks = load_pool(args.tasks)
    if args.quick:
        tasks, count, unit = tasks[:5], (lambda text: len(text.encode("utf-8"))), "bytes"
    else:
        from transformers import AutoTokenizer

        from progagent_lib.generation.sources import resolve_model_source

        tokenizer = AutoTokenizer.from_pretrained(resolve_model_source(args.model))
        count, unit = (lambda text: len(tokenizer.encode(text, add_special_tokens=False))), f"{args.model} tokens"
    sizes = measure(tasks, count)
    for harness, rows in sizes.items():
        values = [n for _, n in rows]
        print(f"{harness:6s} largest program turn over {len(rows)} tasks ({unit}): min {min(values)}, "
              f"median {statistics.median(values):g}, max {max(values)}")
        for task_id, n in sorted(rows, key=lambda r: -r[1])[:3]:
            print(f"    {n:6d}  {task_id}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
