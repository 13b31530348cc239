"""The guard in front of every HTTP server the workbench starts (`progagent serve --transport http`, `progagent
openenv serve`): a Host allow-list, an Origin check and a bearer token, on HTTP requests and WebSocket handshakes.

Each wall answers a different caller:

- **Host** (421): a DNS-rebinding page (evil.example, re-resolved to 127.0.0.1) reaches a loopback port with the
  browser's blessing, but its requests say `Host: evil.example`. Only the names the server is known by pass: the
  bind address, the loopback names when it is bound to loopback or to every address, and names given explicitly.
- **Origin** (403): a cross-site page may open a WebSocket to any port (WebSockets are outside CORS) and may send
  simple POSTs; its browser names the page in `Origin`. An Origin that is present must be http(s) on an allowed
  host and port. An absent Origin is a non-browser client; the token decides about it.
- **Token** (401): everything else that can reach the port (another local user, another sandbox that got out, a
  client that forges headers). `Authorization: Bearer <token>`, compared in constant time. A browser's WebSocket
  cannot set that header, so a WebSocket may offer the token as the subprotocol `progagent.bearer.<token>` instead
  (the way Kubernetes takes bearer tokens from browsers); never in the URL, where access logs, proxies, shell
  history and `ps` keep it.

A guarded header sent twice (two Hosts, two tokens) is refused (400): which one a framework reads is not ours to bet on.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
import secrets
from pathlib import Path
from typing import Any, Sequence
from urllib.parse import urlsplit

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
MIN_TOKEN_CHARS = 16
SUBPROTOCOL_PREFIX = "progagent.bearer."
GUARDED_HEADERS = (b"host", b"origin", b"authorization", b"sec-websocket-protocol")
_VISIBLE_ASCII = re.compile(r"[\x21-\x7e]+")
_DEFAULT_PORTS = {"http": "80", "https": "443", "ws": "80", "wss": "443"}


# --- tokens ----------------------------------------------------------------------------------------------
def new_token() -> str:
    """A fresh per-start bearer token (256 bits, hex: safe in a header and in a WebSocket subprotocol)."""
    return secrets.token_hex(32)


def check_token(token: str | None, where: str = "the bearer token") -> str:
    """`token` if it can serve as a secret in a header; ValueError naming `where` otherwise."""
    if not token or len(token) < MIN_TOKEN_CHARS:
        raise ValueError(f"{where} must have at least {MIN_TOKEN_CHARS} characters (e.g. `openssl rand -hex 32`)")
    if not _VISIBLE_ASCII.fullmatch(token):
        raise ValueError(f"{where} must be printable ASCII without spaces (e.g. `openssl rand -hex 32`)")
    return token


def read_token_file(path: str | Path) -> str:
    """The token in `path` (surrounding whitespace stripped), checked; ValueError with a one-line reason."""
    try:
        text = Path(path).read_text(encoding="ascii", errors="replace")[:4096]
    except OSError as exc:
        raise ValueError(f"cannot read the token file {path}: {exc.strerror}") from None
    return check_token(text.strip(), f"the token in {path}")


# --- allowed hosts ---------------------------------------------------------------------------------------
def allowed_host_headers(host: str, port: int | None, extra: Sequence[str] = ()) -> list[str]:
    """Host header values a server bound to `host:port` accepts (the bind address; loopback names
    when it is bound to loopback or to every address; and `extra`, e.g. the machine's public name)."""
    any_port = "*" if port is None else str(port)
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        address = None
    names = [f"[{host.strip('[]')}]" if address is not None and address.version == 6 else host]
    if host == "localhost" or (address is not None and (address.is_loopback or address.is_unspecified)):
        names += list(LOOPBACK_NAMES)
    if address is not None and address.is_unspecified:
        names = names[1:]  # "0.0.0.0" is never a Host a client sends
    names += list(extra)
    # An entry that names its port (`host:8080`, `[::1]:8080`) is kept; the others get the server's port.
    return [name if re.search(r"(^[^:\[]+|\])(:\d+)$", name) else f"{name}:{any_port}" for name in dict.fromkeys(names)]


def split_host(value: str, default_port: str = "80") -> tuple[str, str] | None:
    """(name, port) of a Host header or allow-list entry (`name`, `name:port`, `[v6]:port`, port `*`), lowercased;
    None when it is not of that shape."""
    match = re.fullmatch(r"(\[[0-9a-fA-F:.]+\]|[^:\[\]/@\s]+)(?::(\d{1,5}|\*))?", value.strip())
    if match is None:
        return None
    return match.group(1).lower(), match.group(2) or default_port


def parse_allowed_hosts(entries: Sequence[str]) -> list[tuple[str, str]]:
    """The allow-list as (name, port or `*`); ValueError naming an entry that is not `name[:port]`."""
    parsed = []
    for entry in entries:
        host = split_host(entry, "*")
        if host is None:
            raise ValueError(
                f"allowed host {entry!r} is not NAME or NAME:PORT (e.g. box.lan, box.lan:8766, [::1]:8766)"
            )
        parsed.append(host)
    if not parsed:
        raise ValueError("the allowed hosts are empty: a server that answers to no name refuses everyone")
    return parsed


# --- the ASGI middleware ---------------------------------------------------------------------------------
class RequestGuard:
    """ASGI middleware: every HTTP request and WebSocket handshake must carry an allowed Host, no foreign Origin
    and, with `token`, `Authorization: Bearer <token>` (or, on a WebSocket with `subprotocol_token`, the offered
    subprotocol `progagent.bearer.<token>`). Lifespan events pass. Use it as `RequestGuard(app, ...)` or
    `starlette_app.add_middleware(RequestGuard, allowed_hosts=..., token=...)`."""

    def __init__(
        self, app: Any, *, allowed_hosts: Sequence[str], token: str | None = None, subprotocol_token: bool = False
    ):
        self.app = app
        self.allowed = parse_allowed_hosts(allowed_hosts)
        self.token = check_token(token).encode() if token is not None else None
        self.subprotocol_token = subprotocol_token

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = _guarded_headers(scope)
        refusal = self.refusal(headers)
        if refusal is None and self.token is not None:
            refusal, send = self._authorize(scope, headers, send)
        if refusal is not None:
            await _refuse(scope, send, *refusal)
            return
        await self.app(scope, receive, send)

    def refusal(self, headers: dict[bytes, list[str]]) -> tuple[int, str] | None:
        """(status, reason) when the Host or Origin is not allowed, None when both are."""
        repeated = [name.decode() for name, values in headers.items() if len(values) > 1]
        if repeated:
            return 400, f"repeated {', '.join(repeated)} header"
        host = (headers.get(b"host") or [""])[0]
        if not self.is_allowed(split_host(host)):
            return 421, f"Host {host[:100]!r} is not a name this server answers to (see --allow-host)"
        origins = headers.get(b"origin")
        if origins and not self.is_allowed(_origin_host(origins[0])):
            return 403, f"Origin {origins[0][:100]!r} is not allowed: cross-site pages may not use this server"
        return None

    def is_allowed(self, host: tuple[str, str] | None) -> bool:
        return host is not None and any(name == host[0] and port in ("*", host[1]) for name, port in self.allowed)

    def _authorize(self, scope: dict, headers: dict[bytes, list[str]], send: Any) -> tuple[tuple[int, str] | None, Any]:
        """Check the token; a WebSocket authorized by its subprotocol gets that subprotocol accepted (a browser
        drops a handshake whose answer selects none of the subprotocols it offered)."""
        assert self.token is not None  # __call__ authorizes only when a token is set
        given = (headers.get(b"authorization") or [""])[0].encode("latin-1")
        if hmac.compare_digest(given, b"Bearer " + self.token):
            return None, send
        if scope["type"] == "websocket" and self.subprotocol_token:
            offered = (headers.get(b"sec-websocket-protocol") or [""])[0]
            for protocol in (p.strip() for p in offered.split(",")):
                if protocol.startswith(SUBPROTOCOL_PREFIX) and hmac.compare_digest(
                    protocol[len(SUBPROTOCOL_PREFIX) :].encode("latin-1"), self.token
                ):
                    return None, _selecting_subprotocol(send, protocol)
        return (401, "missing or wrong bearer token (Authorization: Bearer <token>)"), send


def _guarded_headers(scope: dict) -> dict[bytes, list[str]]:
    headers: dict[bytes, list[str]] = {}
    for name, value in scope.get("headers") or []:
        name = name.lower()
        if name in GUARDED_HEADERS:
            headers.setdefault(name, []).append(value.decode("latin-1"))
    return headers


def _origin_host(origin: str) -> tuple[str, str] | None:
    """(name, port) of an Origin header (`scheme://host[:port]`, nothing after it); None for `null` or anything else."""
    try:
        parts = urlsplit(origin.strip())
        scheme = parts.scheme.lower()
        if (
            scheme not in _DEFAULT_PORTS
            or parts.path.strip("/")
            or parts.query
            or parts.fragment
            or "@" in parts.netloc
        ):
            return None
        return split_host(parts.netloc, _DEFAULT_PORTS[scheme])
    except ValueError:
        return None


def _selecting_subprotocol(send: Any, protocol: str) -> Any:
    async def send_with_subprotocol(message: dict) -> None:
        if message.get("type") == "websocket.accept" and not message.get("subprotocol"):
            message = {**message, "subprotocol": protocol}
        await send(message)

    return send_with_subprotocol


async def _refuse(scope: dict, send: Any, status: int, reason: str) -> None:
    """An HTTP error answer, or for a WebSocket a refused handshake (with the status and reason where the server
    supports ASGI's denial response, else a plain close that the server turns into 403)."""
    body = (reason + "\n").encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    if scope["type"] == "websocket":
        if "websocket.http.response" not in (scope.get("extensions") or {}):
            await send({"type": "websocket.close", "code": 1008})
            return
        kind = "websocket.http.response"
    else:
        kind = "http.response"
    await send({"type": f"{kind}.start", "status": status, "headers": headers})
    await send({"type": f"{kind}.body", "body": body})
