"""`progagent openenv serve`: the workbench's episodes as an OpenEnv server (`openenv-core`, WebSocket `/ws`).

Registered in `progagent_lib.cli.COMMAND_MODULES`; also runs alone: `python -m progagent_lib.integrations.openenv_cli serve`.
OpenEnv is imported only when the command runs, so `progagent` works without it.
"""

from __future__ import annotations

import argparse
import json
import sys

from progagent_lib.harness.spec import DEFAULT_HARNESS, HARNESSES
from progagent_lib.runtime.error_modes import ERROR_MODES
from progagent_lib.task import SCALES

LOOPBACK = ("127.0.0.1", "localhost", "::1")
DEFAULT_PORT = 8766  # as integrations.openenv.DEFAULT_PORT (not imported: OpenEnv loads only when the command runs)
TOKEN_ENV = "PROGAGENT_OPENENV_TOKEN"


def register(subparsers: argparse._SubParsersAction) -> None:
    group = subparsers.add_parser("openenv", help="OpenEnv integration: serve episodes to OpenEnv clients and trainers")
    commands = group.add_subparsers(dest="openenv_command", required=True)
    p = commands.add_parser(
        "serve",
        help="serve the task pool as an OpenEnv environment (needs openenv-core)",
        description="Serve episodes over OpenEnv's protocol: a client resets with task, scale, seed and harness "
        "(what it leaves out comes from these options), then steps one assistant turn at a time; "
        "the step that ends the episode carries the verifier's reward. One episode per WebSocket session.",
    )
    p.add_argument(
        "--tasks-dir",
        default="tasks",
        help="the folder of served tasks; clients name tasks by id below it (default tasks)",
    )
    p.add_argument(
        "--task", default=None, help="default task id, e.g. retail/restock_orders (default: each reset names one)"
    )
    p.add_argument("--scale", default="v0", choices=tuple(SCALES), help="default scale (default v0)")
    p.add_argument("--seed", type=int, default=None, help="default seed (default: each reset passes one)")
    p.add_argument(
        "--harness",
        default=DEFAULT_HARNESS,
        choices=tuple(HARNESSES),
        help=f"default harness (default {DEFAULT_HARNESS})",
    )
    p.add_argument(
        "--limits", default="{}", metavar="JSON", help="Limits overrides for every episode, e.g. '{\"max_turns\": 40}'"
    )
    p.add_argument(
        "--error-mode", default="is_error", choices=ERROR_MODES, help="how a failing tool shows inside programs"
    )
    p.add_argument("--max-concurrent-envs", type=int, default=4, help="WebSocket sessions at once (default 4)")
    p.add_argument(
        "--session-timeout", type=float, default=None, help="seconds an idle session lives (default: no limit)"
    )
    p.add_argument(
        "--trajectories", default=None, metavar="PATH", help="append every finished episode's trajectory (JSON lines)"
    )
    p.add_argument(
        "--timeout", type=float, default=None, help="seconds one program may run (runtime default if omitted)"
    )
    p.add_argument(
        "--unsafe-no-sandbox",
        action="store_true",
        help="run programs without confinement when the sandbox cannot be set up (never on shared machines)",
    )
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="bind address (default 127.0.0.1); anyone who reaches it with the "
        "token can run programs in the episodes' sandboxes, and plain HTTP carries the token in clear",
    )
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME[:PORT]",
        help="a further Host header (and Origin host) the server accepts, e.g. the machine's name when bound "
        "to 0.0.0.0; the bind address and, on loopback, the localhost names are always accepted; repeatable",
    )
    p.add_argument(
        "--token-file",
        default=None,
        metavar="PATH",
        help="read the bearer token every request and WebSocket handshake must carry from PATH (16+ characters); "
        f"default: a fresh one per start, printed where the server says it listens (clients: ${TOKEN_ENV})",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        from progagent_lib.integrations.openenv import OpenEnvServerConfig, ProgAgentEnvError, make_app
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] == "openenv":
            print("progagent openenv: OpenEnv is not installed: pip install openenv-core==0.3.0", file=sys.stderr)
            return 2
        raise
    import uvicorn

    from progagent_lib.harness.http_guard import new_token, read_token_file

    try:
        token = read_token_file(args.token_file) if args.token_file else new_token()
        limits = json.loads(args.limits)
        session_kwargs = {}
        if args.timeout is not None:
            session_kwargs["program_timeout"] = args.timeout
        if args.unsafe_no_sandbox:
            session_kwargs["unsafe_no_sandbox"] = True
        config = OpenEnvServerConfig(
            tasks_dir=args.tasks_dir,
            task=args.task,
            scale=args.scale,
            seed=args.seed,
            harness=args.harness,
            limits=limits,
            error_mode=args.error_mode,
            session_kwargs=session_kwargs,
            max_concurrent_envs=args.max_concurrent_envs,
            session_timeout=args.session_timeout,
            trajectories=args.trajectories,
        )
        # a default task that does not exist is reported here
        app = make_app(config, token=token, host=args.host, port=args.port, allowed_hosts=args.allow_host)
    except (json.JSONDecodeError, ValueError, ProgAgentEnvError) as exc:
        print(f"progagent openenv serve: {exc}", file=sys.stderr)
        return 2
    # The token is printed only when it was made here: one read from a file stays in that file.
    told = f"token from {args.token_file}" if args.token_file else f"token {token}; clients: export {TOKEN_ENV}={token}"
    print(
        f"progagent openenv serve: tasks under {args.tasks_dir} at ws://{args.host}:{args.port}/ws ({told}) "
        f"(defaults: task {args.task}, scale {args.scale}, seed {args.seed}, harness {args.harness})",
        file=sys.stderr,
        flush=True,
    )
    if args.host not in LOOPBACK:
        print(
            f"progagent openenv serve: warning: bound to {args.host}; plain HTTP carries the token in clear, so anyone "
            "who can watch the network can run programs in the episodes' sandboxes",
            file=sys.stderr,
            flush=True,
        )
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="progagent")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["openenv", *(argv if argv is not None else sys.argv[1:])])
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
