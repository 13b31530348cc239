"""`progagent serve`: one episode of a task, under a harness, as an MCP server (stdio or streamable HTTP)."""

from __future__ import annotations

import argparse
import sys

from progagent_lib.cli import DEFAULT_SCALE, existing_file, one_task
from progagent_lib.harness.spec import DEFAULT_HARNESS, HARNESSES
from progagent_lib.runtime.error_modes import ERROR_MODES
from progagent_lib.task import SCALES

TOKEN_ENV = "PROGAGENT_SERVE_TOKEN"


def read_token(token_file: str | None) -> str | None:
    """The bearer token from `token_file` (whitespace stripped) or $PROGAGENT_SERVE_TOKEN; None if neither."""
    import os
    from pathlib import Path

    if token_file is not None:
        try:
            token = Path(token_file).read_text().strip()
        except OSError as exc:
            raise ValueError(f"cannot read the token file {token_file}: {exc.strerror}") from None
        if len(token) < 16:
            raise ValueError(
                f"the token in {token_file} must have at least 16 characters (e.g. `openssl rand -hex 32`)"
            )
        return token
    from_env = os.environ.get(TOKEN_ENV) or None
    if from_env is not None and len(from_env) < 16:
        raise ValueError(f"${TOKEN_ENV} must hold at least 16 characters (e.g. `openssl rand -hex 32`)")
    return from_env


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "serve",
        help="serve one episode of a task as an MCP server",
        description="Serve one episode of TASK at (scale, seed) under a harness as an MCP server. Tools: "
        "programmatic_tool_call(code) (ptc, hybrid), terminal(command), claim_done(action), and the "
        "task's own tools (dtc, hybrid). claim_done returns the verifier's result and ends the episode. "
        "The episode is the one `progagent run` plays: the same budgets, observation cuts and error "
        "mode, and --trajectory writes it as a trajectory.",
    )
    p.add_argument(
        "--task",
        required=True,
        type=one_task,
        help="task id (retail/restock_orders, under $PROGAGENT_TASKS or the repository's tasks/) or folder",
    )
    p.add_argument(
        "--scale", default=DEFAULT_SCALE, choices=tuple(SCALES), help=f"environment scale (default {DEFAULT_SCALE})"
    )
    p.add_argument("--seed", type=int, default=0, help="environment seed (default 0)")
    p.add_argument(
        "--harness",
        default=DEFAULT_HARNESS,
        choices=tuple(HARNESSES),
        help=f"which tools the client sees (default {DEFAULT_HARNESS})",
    )
    p.add_argument("--transport", default="stdio", choices=("stdio", "http"), help="stdio (default) or streamable HTTP")
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="HTTP bind address (default 127.0.0.1); anyone who reaches it can run programs "
        "in the episode's sandbox, so keep it on loopback unless the network is yours",
    )
    p.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765); the endpoint is /mcp")
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME[:PORT]",
        help="a further Host header the HTTP server accepts (e.g. the machine's name when bound to 0.0.0.0); "
        "the bind address and, on loopback, localhost names are always accepted; repeatable",
    )
    p.add_argument(
        "--token-file",
        default=None,
        metavar="PATH",
        help="HTTP only: require `Authorization: Bearer <token>` of every request, the token read from PATH "
        f"(or from the environment variable {TOKEN_ENV}); strongly advised off loopback",
    )
    p.add_argument(
        "--error-mode",
        default="is_error",
        choices=ERROR_MODES,
        help="how a failing tool shows inside programs: is_error raises, off returns the error text, "
        "detect also raises on error-shaped payloads (default is_error)",
    )
    p.add_argument(
        "--mcp-server",
        action="append",
        default=[],
        metavar="CMD",
        help="an external MCP server (command line or http(s) URL) whose tools join the task's inside "
        "programs as tools.<name>; repeatable",
    )
    p.add_argument(
        "--trajectory",
        default=None,
        metavar="FILE",
        help="append the episode to this JSON-lines file when it ends (claim_done, a budget, or the client "
        "leaving), as `progagent run` writes trajectories",
    )
    p.add_argument("--max-tool-calls", type=int, help="tool calls per episode (0 = no limit; default: the task's, 100)")
    p.add_argument(
        "--max-turns", type=int, help="turns per episode; each tool call of the client is one (0 = no limit)"
    )
    p.add_argument(
        "--max-context-tokens",
        type=int,
        help="context tokens per episode, as far as the server sees them (0 = no limit)",
    )
    p.add_argument(
        "--system-prompt",
        default=None,
        metavar="FILE",
        type=existing_file,
        help="a file whose text replaces the harness's system prompt (the server's instructions)",
    )
    p.add_argument(
        "--timeout", type=float, default=None, help="seconds one program may run (runtime default if omitted)"
    )
    p.add_argument(
        "--unsafe-no-sandbox",
        action="store_true",
        help="run programs without confinement when the sandbox cannot be set up (never on shared machines)",
    )
    p.set_defaults(func=run)


def limits_from_args(task, args: argparse.Namespace):
    """The task's limits (as `progagent run` plays it) with the budgets given on the command line; 0 = no limit."""
    from dataclasses import replace

    from progagent_lib.harness.episode import Limits

    given = {name: getattr(args, name, None) for name in ("max_tool_calls", "max_turns", "max_context_tokens")}
    return replace(Limits.for_task(task), **{k: (None if v == 0 else v) for k, v in given.items() if v is not None})


def run(args: argparse.Namespace) -> int:
    from progagent_lib.harness.mcp_server import build_server, claim_process_stdio
    from progagent_lib.runtime.mcp_client import MCPConnectionError
    from progagent_lib.runtime.sandbox import SandboxUnavailable
    from progagent_lib.task import GenerationError, TaskLoadError, load_task

    try:
        token = read_token(args.token_file) if args.transport == "http" else None
    except ValueError as exc:
        print(f"progagent serve: {exc}", file=sys.stderr)
        return 2
    # Claim the wire first: nothing started after this (kernels, task code) can write into it.
    wire = claim_process_stdio() if args.transport == "stdio" else (None, None)
    kwargs = {}
    if args.timeout is not None:
        kwargs["program_timeout"] = args.timeout
    if args.unsafe_no_sandbox:
        kwargs["unsafe_no_sandbox"] = True
    try:
        task = load_task(args.task)
        server = build_server(
            task,
            scale=args.scale,
            seed=args.seed,
            harness=args.harness,
            error_mode=args.error_mode,
            mcp_servers=args.mcp_server,
            trajectory=args.trajectory,
            limits=limits_from_args(task, args),
            system_prompt=args.system_prompt,
            **kwargs,
        )
    except SandboxUnavailable as exc:
        print(
            f"progagent serve: the sandbox for programs cannot be set up here: {exc}\n"
            "Fix the cause, or pass --unsafe-no-sandbox on a machine you trust.",
            file=sys.stderr,
        )
        return 2
    except (TaskLoadError, GenerationError, MCPConnectionError, ValueError) as exc:
        print(f"progagent serve: {exc}", file=sys.stderr)
        return 2
    except FileNotFoundError as exc:  # --system-prompt
        print(f"progagent serve: no such file: {exc.filename}", file=sys.stderr)
        return 2
    if args.transport == "stdio":
        print(
            f"progagent serve: {args.task} ({args.scale}, seed {args.seed}) under {args.harness} on stdio",
            file=sys.stderr,
        )
        server.run_stdio(*wire)
    else:
        print(
            f"progagent serve: {args.task} ({args.scale}, seed {args.seed}) under {args.harness} at "
            f"http://{args.host}:{args.port}/mcp" + (" (bearer token required)" if token else ""),
            file=sys.stderr,
            flush=True,
        )
        if token is None and args.host not in ("127.0.0.1", "localhost", "::1"):
            print(
                f"progagent serve: warning: bound to {args.host} without a bearer token; anyone who reaches it can run "
                f"programs in the episode's sandbox (pass --token-file or set {TOKEN_ENV})",
                file=sys.stderr,
                flush=True,
            )
        try:
            server.run_http(host=args.host, port=args.port, allowed_hosts=args.allow_host, token=token)
        except ValueError as exc:  # a token too short to be a secret
            print(f"progagent serve: {exc}", file=sys.stderr)
            return 2
    return 0
