"""Runs inside the vLLM server process: every request must carry the server's API key, whatever its path.

vLLM's own `--api-key` check (its AuthenticationMiddleware, also fed by $VLLM_API_KEY) guards only paths
under /v1, /v2, /inference and /cohere. The dev-mode routes the workbench turns on for weight reloads
(/pause, /resume, /collective_rpc, /reset_prefix_cache, /sleep, /update_weights, ...), the token routes
(/tokenize, /detokenize), /invocations (generation under another name), /metrics and the rest answer
anyone. `EngineServer` adds this middleware (`--middleware progagent_engine_auth.RequireAPIKey`, with this
folder on PYTHONPATH) so that one key covers every route, and no route is left to chance.

No browser is a client of the engine, so a request that carries an `Origin` header (every cross-site request a
web page makes, fetch and WebSocket alike) is refused with 403 even with the key: a page cannot drive the engine
through a key it found elsewhere, nor through DNS rebinding.

The key is read from $VLLM_API_KEY, the same variable vLLM's own check reads: one secret for both, never on
the command line (which any local user can read from /proc). This file imports nothing from the project:
it runs in the engine's environment, which has vLLM and not the workbench.
"""

from __future__ import annotations

import hmac
import json
import os

KEY_VARIABLE = "VLLM_API_KEY"


class RequireAPIKey:
    """ASGI middleware: HTTP and WebSocket requests without `Authorization: Bearer <key>` get 401 (or a closed socket)."""

    def __init__(self, app):
        key = os.environ.get(KEY_VARIABLE, "")
        if len(key) < 16:
            raise RuntimeError(
                f"progagent_engine_auth: ${KEY_VARIABLE} must hold the server's API key (16 characters "
                "or more); start the server with `progagent engine serve`, which sets it"
            )
        self.app = app
        self.expected = f"Bearer {key}".encode()

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):  # lifespan: start-up and shut-down, no client
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        given = headers.get(b"authorization", b"")
        from_a_page = b"origin" in headers
        if hmac.compare_digest(given, self.expected) and not from_a_page:
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})  # policy violation, before the handshake
            return
        status, error = (
            (403, "Forbidden: the engine answers no web page (a request with an Origin header)")
            if from_a_page
            else (401, "Unauthorized: this engine needs its API key (Authorization: Bearer <key>)")
        )
        body = json.dumps({"error": error}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b"Bearer"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
