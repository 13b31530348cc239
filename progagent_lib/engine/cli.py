"""`progagent engine serve`: vLLM on loopback with tool calling configured, until Ctrl-C.

    progagent engine serve --model smollm2 --port 8000
    progagent run --tasks tasks/retail --policy openai:http://127.0.0.1:8000/v1#smollm2 --out runs/smollm2.jsonl

The model is a registered short name (served under that name), a model folder or a hub id. Flags after `--`
go to vLLM as they are, e.g. `-- --dtype bfloat16 --gpu-memory-utilization 0.8` on a GPU (not --host, --port,
--uds or --api-key: the command sets those itself).

API key: every start makes a new key, and every request (generation, the weight-reload routes, all others)
must carry it as `Authorization: Bearer KEY`. The key is written to
~/.cache/progagent/engine-keys/loopback-PORT.key (mode 0600; removed when the server stops), where the
workbench's own clients (`--policy openai:URL#MODEL`, `--engine-url URL`, $PROGAGENT_ENGINE_URL, bench/)
find it by the URL's port, for the user who started the server. For a client that cannot read that file
(another user, another machine), set $PROGAGENT_ENGINE_API_KEY to the file's content; other OpenAI clients
pass it as their API key (for `--policy openai:` to a non-loopback URL: $OPENAI_API_KEY).

The server listens on 127.0.0.1. `--host` takes another loopback address; any other address is refused
unless `--allow-non-loopback` is given, which makes the engine reachable (with the key) from other machines.
"""

from __future__ import annotations

import argparse
import signal
import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "engine",
        help="the inference engine (vLLM as a server process)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="engine_command", required=True)
    serve = commands.add_parser(
        "serve",
        help="serve a model on 127.0.0.1 (OpenAI-compatible, tool calling on, API key)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument(
        "--model",
        required=True,
        help="registered name (smollm2), model folder or hub id; "
        "SOURCE@POSITIONS[:yarn|linear] serves it with its RoPE scaled (smollm2@32k)",
    )
    serve.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; another loopback "
        "address, or any address with --allow-non-loopback)",
    )
    serve.add_argument(
        "--allow-non-loopback",
        action="store_true",
        help="accept a --host that other machines can reach (every request still needs the key)",
    )
    serve.add_argument(
        "--served-model-name", help="the name requests use (default: the short name, or the folder's name)"
    )
    serve.add_argument(
        "--max-model-len",
        type=int,
        default=None,
        help="context length the server accepts (default: the model's positions, a scaled RoPE's "
        "included: smollm2 8192, smollm2@32k 32768)",
    )
    serve.add_argument(
        "--kv-cache-gib", type=int, default=2, help="KV cache on CPU in GiB (VLLM_CPU_KVCACHE_SPACE; default 2)"
    )
    serve.add_argument(
        "--tool-call-parser", default="hermes", help="vLLM's tool-call parser (default hermes: <tool_call>{json})"
    )
    serve.add_argument("--chat-template", help="a chat template file that renders tools (default: the model's own)")
    serve.add_argument(
        "--compile",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="torch.compile the model (default: only with a GPU; on CPU 10-30%% faster generation "
        "for 2-5 minutes more at every start)",
    )
    serve.add_argument("--startup-timeout", type=float, default=900.0, help="seconds to wait for the server to answer")
    serve.add_argument("vllm_args", nargs=argparse.REMAINDER, help="after --: flags passed to vLLM as they are")
    serve.set_defaults(func=serve_command)


def serve_command(args) -> int:
    from ..errors import EngineError
    from .server import EngineServer

    extra = list(args.vllm_args)
    if extra[:1] == ["--"]:
        extra = extra[1:]
    try:
        server = EngineServer(
            args.model,
            args.port,
            host=args.host,
            allow_non_loopback=args.allow_non_loopback,
            served_name=args.served_model_name,
            max_model_len=args.max_model_len,
            kv_cache_gib=args.kv_cache_gib,
            tool_call_parser=args.tool_call_parser,
            chat_template=args.chat_template,
            compile=args.compile,
            extra_args=extra,
            startup_timeout=args.startup_timeout,
        )
    except EngineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1

    def on_terminate(signum, frame):  # SIGTERM as Ctrl-C: one path that stops the server
        raise KeyboardInterrupt

    # SIGINT too: a shell starting us in the background hands it down ignored, and Ctrl-C must always stop vLLM.
    previous = {sig: signal.signal(sig, on_terminate) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        print(f"starting vLLM for {args.model!r} on {args.host}:{args.port} (log: {server.log_path}) ...", flush=True)
        server.start()
        print(
            f"ready: {server.base_url} serves {server.served_name!r}\n"
            f"  API key (this start only): {server.key_path} (mode 0600); the workbench's clients find it by the URL\n"
            f"  use it with: --policy {server.policy_spec}\n  Ctrl-C stops it.",
            flush=True,
        )
        code = server.wait()
        print(
            f"error: the vLLM server exited with code {code}.\n--- {server.log_path} (end) ---\n{server.log_tail()}",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:
        print("stopping the server ...", flush=True)
        return 0
    except EngineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
