"""`progagent` command line. Each layer registers its own subcommands; this file only dispatches.

A layer's module exposes `register(subparsers)`; each subcommand sets `func(args) -> int`.
"""
from __future__ import annotations

import argparse
import importlib
import sys

COMMAND_MODULES = [
    "progagent_lib.task.cli",        # tasks certify | stats | list
    "progagent_lib.harness.serve_cli",  # serve (the harness as an MCP server)
    "progagent_lib.harness.cli",     # run
    "progagent_lib.train.cli",       # train sft | gspo | eval
    "progagent_lib.engine.cli",      # engine serve (vLLM as a server process)
    "progagent_lib.synthesis.cli",   # synth | audit | filter | export | import
    "progagent_lib.analysis.cli",    # reproduce
    "progagent_lib.analysis.memorization",  # memorization (the fixed-replay baseline over the pool)
    "progagent_lib.integrations.openenv_cli",  # openenv serve (the task pool as an OpenEnv server)
    "progagent_lib.benchmarks.cli",  # bench list | run (external suites: AgentDojo)
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="progagent", description="ProgAgent workbench for programmatic tool calling.")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name and (name == exc.name or name.startswith(exc.name + ".")):  # that layer has no commands yet
                continue
            raise
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
