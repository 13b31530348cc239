"""Who may use a running engine: a fresh API key at every start, and where the engine's clients find it.

Without a key, any local process (another user's too) could generate with the engine, read its metrics,
or pause it and reload its weights from any folder (`weights.py`'s routes). So `EngineServer` makes a key
at each start (`secrets.token_urlsafe`), hands it to vLLM in its environment ($VLLM_API_KEY: a command line
is readable by every local user), and has every route checked against it (`vllm_side/progagent_engine_auth.py`;
vLLM's own check covers /v1 only). It listens on loopback unless told otherwise.

A client finds the key of the engine at `base_url` (`engine_api_key`), in this order:

1. the key file the server wrote when it started, `~/.cache/progagent/engine-keys/<host>-<port>.key` (mode
   0600, in a folder of mode 0700; removed when the server stops): so `--engine-url URL`,
   `--policy openai:URL#MODEL`, `$PROGAGENT_ENGINE_URL` and every `EngineServer.base_url` handed around
   work as they are, for the user who started the server, whatever the working folder. It names the
   exact server, so it comes first;
2. `$PROGAGENT_ENGINE_API_KEY`, when set: for an engine whose key file this process cannot read (started
   by another user, on another machine, under another home).

Loopback names (127.0.0.1, localhost, ::1) share one key file per port. The key is never written into a
config or a record: configs name the URL only.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
from pathlib import Path
from urllib.parse import urlsplit

KEY_ENV = "PROGAGENT_ENGINE_API_KEY"
KEY_HELP = (
    "the key of a running `progagent engine serve` is in ~/.cache/progagent/engine-keys/ for the user who "
    f"started it; elsewhere set ${KEY_ENV} to it, or pass api_key="
)


def new_api_key() -> str:
    return secrets.token_urlsafe(32)


def is_loopback_host(host: str) -> bool:
    """Whether `host` names this machine's loopback interface only (not a hostname that could resolve elsewhere)."""
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def key_dir() -> Path:
    return Path.home() / ".cache" / "progagent" / "engine-keys"


def key_file(host: str, port: int) -> Path:
    name = "loopback" if is_loopback_host(host) else "".join(c if c.isalnum() or c in ".-" else "_" for c in host)
    return key_dir() / f"{name}-{int(port)}.key"


def write_key_file(host: str, port: int, key: str) -> Path:
    """Write `key` for the server at host:port, readable by this user only (created 0600, then renamed in place)."""
    folder = key_dir()
    folder.mkdir(parents=True, exist_ok=True)
    if folder.stat().st_uid != os.getuid():
        raise PermissionError(f"{folder} belongs to another user; engine keys are not written there")
    os.chmod(folder, 0o700)
    path = key_file(host, port)
    staging = folder / f".{path.name}.{secrets.token_hex(4)}"
    fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, (key + "\n").encode())
    finally:
        os.close(fd)
    os.replace(staging, path)
    return path


def remove_key_file(host: str, port: int, key: str) -> None:
    """Remove the key file of host:port if it still holds `key` (a later server on the port may have replaced it)."""
    path = key_file(host, port)
    try:
        if path.read_text().strip() == key:
            path.unlink()
    except OSError:
        pass


def engine_api_key(base_url: str) -> str | None:
    """The API key of the engine at `base_url`: its key file, else $PROGAGENT_ENGINE_API_KEY; None without either."""
    parts = urlsplit(base_url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        written = key_file(parts.hostname, port).read_text().strip() if parts.hostname else ""
    except (OSError, ValueError):
        written = ""
    return written or os.environ.get(KEY_ENV, "").strip() or None


def auth_headers(base_url: str, api_key: str | None = None) -> dict[str, str]:
    """The `Authorization` header for the engine at `base_url` (`api_key`, else `engine_api_key`); {} without a key."""
    key = api_key or engine_api_key(base_url)
    return {"Authorization": f"Bearer {key}"} if key else {}
