"""Where a rank's episodes live: here, with a bounded number of kernels, or on environment servers.

Each local episode may start one confined kernel (a PTC episode peaks at ~3 processes, ~35-70 MiB), so 64
episodes per rank x 8 ranks is ~512 kernels on a GPU node. Two config fields of `GSPORunConfig` and `EvalConfig`
move or bound them:

- `env_servers: [http://cpu-node-1:8766, ...]` (+ `env_server_token_file`): episodes are played on these OpenEnv
  servers (`progagent openenv serve`), round-robin, starting at the rank's index; none is local. The model
  generates here; the servers run tools, programs and the verifier (`integrations.openenv_remote`).
- `max_local_kernels: N`: at most N local episodes alive at once on this rank (a semaphore; a batch larger than
  N starts its next episode when one ends on the engine, and is played in waves of N, each in lockstep, with any
  other generator). null: no bound (one episode per prompt of the batch).

`episode_host(config)` gives the `env_host` that `run_token_episodes` and `Episode` take (None: here, unbounded).
"""

from __future__ import annotations

import threading
from typing import Any

from ..config import check_int, check_text, config_error
from ..harness.session import Session
from ..harness.spec import HarnessSpec
from .ranks import rank

HELP = {
    "env_servers": "OpenEnv environment servers (`progagent openenv serve` on CPU nodes, http://HOST:PORT) that host "
    "the episodes, round-robin; the model generates here. Empty: episodes run here.",
    "env_server_token_file": "A file holding the servers' bearer token (their --token-file); null: "
    "$PROGAGENT_OPENENV_TOKEN. Only with env_servers.",
    "max_local_kernels": "Local episodes (each may start one confined kernel) alive at once on this rank; a larger "
    "batch is played in waves. null: no bound. Unused with env_servers.",
}


def check_env_hosts(config: Any) -> None:
    """The three fields of a config (ConfigError naming the field and the fix)."""
    servers = config.env_servers
    if not isinstance(servers, (list, tuple)):
        raise config_error(config, "env_servers", "must be a list of server URLs (http://HOST:PORT) or []")
    if servers:
        try:
            from ..integrations.openenv_remote import check_server_url
        except ModuleNotFoundError as exc:
            if not (exc.name or "").startswith("openenv"):
                raise
            raise config_error(
                config, "env_servers", "needs OpenEnv's client: pip install openenv-core==0.3.0 (make install does)"
            ) from None
    for url in servers:
        try:
            check_server_url(url)
        except ValueError as exc:
            raise config_error(config, "env_servers", str(exc)) from None
    if len({str(url).rstrip("/") for url in servers}) != len(servers):
        raise config_error(config, "env_servers", "lists a server twice; list each once")
    check_text(config, "env_server_token_file", optional=True)
    if config.env_server_token_file is not None and not servers:
        raise config_error(config, "env_server_token_file", "is read only with env_servers; set env_servers or drop it")
    check_int(config, "max_local_kernels", at_least=1, optional=True, why=" (null: no bound)")


def episode_host(config: Any) -> Any:
    """The `env_host` of a config's episodes: its env_servers (checked to answer, before any compute), local
    kernels bounded by max_local_kernels, or None (here, unbounded)."""
    if config.env_servers:
        from ..harness.http_guard import read_token_file
        from ..integrations.openenv_remote import EnvServers

        token = read_token_file(config.env_server_token_file) if config.env_server_token_file else None
        servers = EnvServers(config.env_servers, token, start=rank())
        servers.check()
        return servers
    if config.max_local_kernels is not None:
        return LocalKernels(config.max_local_kernels)
    return None


class LocalKernels:
    """Episodes here, at most `limit` alive at once in this process: each holds a slot of a semaphore from the
    moment its environment is built until its session closes (its kernel stopped). `live` and `peak` count them.

    An episode waits for a slot that another thread holds; a thread that already holds every slot would wait for
    itself, so it is refused (RuntimeError) instead: a lockstep batch is played in waves of `most_at_once`."""

    def __init__(self, limit: int):
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"max_local_kernels must be an integer >= 1, got {limit!r}")
        self.most_at_once = limit
        self._slots = threading.BoundedSemaphore(limit)
        self._count_lock = threading.Lock()
        self._held: dict[int, int] = {}  # slots held per thread
        self.live = self.peak = 0

    def open(
        self,
        task: Any,
        scale: str,
        seed: int,
        spec: HarnessSpec,
        *,
        error_mode: str = "is_error",
        session_kwargs: dict | None = None,
    ) -> tuple[Any, Session]:
        thread = threading.get_ident()
        if self._held.get(thread, 0) >= self.most_at_once:
            raise RuntimeError(
                f"this thread already holds all {self.most_at_once} local kernel slots "
                "(max_local_kernels); it would wait for itself: play at most that many episodes at once"
            )
        self._slots.acquire()
        self._count(+1, thread)
        try:
            env = task.instantiate(scale, seed)
            try:
                return env, _SlotSession(self, thread, env, spec, error_mode=error_mode, **(session_kwargs or {}))
            except BaseException:
                env.close()
                raise
        except BaseException:
            self.release(thread)
            raise

    def release(self, thread: int) -> None:
        """Give back a slot that `thread` (its `threading.get_ident()`) took."""
        self._count(-1, thread)
        self._slots.release()

    def _count(self, change: int, thread: int) -> None:
        with self._count_lock:
            self.live += change
            self.peak = max(self.peak, self.live)
            self._held[thread] = self._held.get(thread, 0) + change
            if not self._held[thread]:
                del self._held[thread]


class _SlotSession(Session):
    """A local Session that gives its slot back when it closes (its kernel, if it started one, is stopped first)."""

    def __init__(self, host: LocalKernels, thread: int, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._host, self._thread = host, thread

    def close(self) -> None:
        if self.closed:
            return
        try:
            super().close()
        finally:
            self._host.release(self._thread)
